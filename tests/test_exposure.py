"""Exposure (issue 18): binding beyond loopback needs explicit websocket origins and warns; no
control of the page makes the server open a path outside the data folder."""

from __future__ import annotations

import builtins
import os
import shlex
from pathlib import Path

import pytest

from workbench.app.live_settings import LiveJoinSettings
from workbench.app.serve import PACKAGE_APP, serve_command, websocket_max_message_bytes
from workbench.cli import main
from workbench.config import ENV

# -- binding and origins ------------------------------------------------------------------------


@pytest.fixture
def execs(monkeypatch):
    """The command lines ``workbench dashboard`` would become (the exec recorded, not run), in
    an environment copy without the workbench's variables."""
    made: list[list[str]] = []
    monkeypatch.setattr("workbench.app.serve.os.execv", lambda path, cmd: made.append(cmd))
    clean = {k: v for k, v in os.environ.items() if k not in ENV.values()}
    monkeypatch.setattr(os, "environ", clean)
    return made


def test_the_default_binds_loopback_without_a_warning(execs, capsys):
    assert main(["dashboard", "--port", "5107"]) == 0
    (cmd,) = execs
    assert cmd[cmd.index("--address") + 1] == "127.0.0.1"
    assert "WARNING" not in capsys.readouterr().err


@pytest.mark.parametrize("address", ["0.0.0.0", "10.1.2.3", "::", "lab.example"])
def test_another_address_without_origins_is_refused(execs, capsys, address):
    assert main(["dashboard", "--address", address]) == 2
    err = capsys.readouterr().err
    assert execs == []
    assert f"workbench dashboard: --address {address} makes the dashboard reachable" in err
    assert "--allow-websocket-origin HOST:PORT" in err and "without authentication" in err


def test_another_address_with_origins_warns_on_stderr(execs, capsys, tmp_path):
    argv = ["dashboard", "--address", "0.0.0.0", "--allow-websocket-origin", "lab.example:5006"]
    assert main([*argv, "--data-dir", str(tmp_path)]) == 0
    (cmd,) = execs
    origins = [cmd[i + 1] for i, x in enumerate(cmd) if x == "--allow-websocket-origin"]
    assert origins == ["lab.example:5006"]  # only those given: no default added
    err = capsys.readouterr().err
    assert err.startswith("WARNING: the dashboard at http://")
    for words in (
        "is reachable from the network",
        "It has no authentication",
        "can run Spark jobs on this machine",
        f"read the data folder {tmp_path}",
    ):
        assert words in err


def test_the_upload_limit_sets_the_websocket_message_limit(execs, capsys):
    assert main(["dashboard", "--max-upload-mb", "100"]) == 0
    cmd = execs[-1]
    size = int(cmd[cmd.index("--websocket-max-message-size") + 1])
    assert size == websocket_max_message_bytes(100) > 100 * 2**20 * 4 / 3  # base64 fits
    assert os.environ["WORKBENCH_MAX_UPLOAD_MB"] == "100"  # the page's own check reads it
    assert main(["dashboard", "--max-upload-mb", "0"]) == 2
    assert "WORKBENCH_MAX_UPLOAD_MB = '0' must be a number of MB above 0" in (
        capsys.readouterr().err
    )
    os.environ.pop("WORKBENCH_MAX_UPLOAD_MB")  # the test's copy: back to the default, 50
    default = serve_command()
    assert default[default.index("--websocket-max-message-size") + 1] == str(
        websocket_max_message_bytes(50)
    )


def test_a_checkout_serves_its_app_file_and_a_wheel_the_packages_module(monkeypatch):
    root = Path(__file__).resolve().parents[1]
    assert serve_command()[4] == str(root / "apps" / "dashboard.py")  # python -m panel serve
    monkeypatch.setattr("workbench.config.checkout", lambda: None)  # installed from a wheel
    assert serve_command()[4] == str(PACKAGE_APP)


def test_a_dry_run_prints_the_command_with_its_settings_and_serves_nothing(execs, capsys):
    assert main(["dashboard", "--dry-run", "--max-upload-mb", "100", "--port", "5100"]) == 0
    assert execs == []
    printed = shlex.split(capsys.readouterr().out)
    assert printed[0] == "WORKBENCH_MAX_UPLOAD_MB=100"
    assert printed[1:] == serve_command(5100)  # the settings given: in its environment now


def test_serve_command_refuses_an_exposed_address_without_origins():
    with pytest.raises(ValueError, match="--allow-websocket-origin"):
        serve_command(5100, "0.0.0.0")


# -- paths given in the page --------------------------------------------------------------------

PATH_INPUTS = ["readings_path"]
"""Every control of the page that names a file or folder: the live tab's readings file (the
CSV upload is bytes; ``work_root`` of the live and Spark tabs is no widget; the CSV column
names are no paths)."""


@pytest.fixture
def data_folder(tmp_path, monkeypatch):
    """A data folder holding a readings file, a symlink out of it, and outside it a secret."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "data.txt").write_text("2004-02-28 00:58:46.002832 1 1 19.9884 37.0933 45.08 2.69\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the page\n")
    (data / "link.txt").symlink_to(secret)
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(data))
    return data


@pytest.fixture
def opened(monkeypatch):
    """Paths the loaders were asked to open (recorded; the readings loader reads nothing)."""
    seen: list[str] = []
    real_open = builtins.open

    def recording_open(file, *args, **kwargs):
        seen.append(str(file))
        return real_open(file, *args, **kwargs)

    def fake_load(path, *args, **kwargs):
        seen.append(str(path))
        raise RuntimeError("loaded")

    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr("workbench.data.streams.load_readings", fake_load)
    return seen


@pytest.mark.parametrize("param", PATH_INPUTS)
@pytest.mark.parametrize(
    "given", ["../", "../../etc/passwd", "/etc/passwd", "link.txt", "../secret.txt", ""]
)
def test_a_path_outside_the_data_folder_is_refused_and_not_opened(
    data_folder, opened, param, given
):
    page = LiveJoinSettings(source="Intel Lab readings file", **{param: given})
    shown = given or "(empty)"
    message = (
        f"readings file must be inside the data folder {data_folder} (WORKBENCH_DATA_DIR); "
        f"got {shown}"
    )
    assert page.readings_report == message
    assert page.readings_view().object == message and page.readings_view().alert_type == "danger"
    pytest.importorskip("pyspark")  # a Start's settings: the run fails with the same words
    run = page.settings()
    with pytest.raises(ValueError, match="must be inside the data folder"):
        run.streams()
    assert opened == []  # nothing outside was opened: not even the loader was called


@pytest.mark.parametrize("given", ["data.txt", "{data}/data.txt", "sub/../data.txt"])
def test_a_path_inside_the_data_folder_is_used(data_folder, opened, given):
    page = LiveJoinSettings(
        source="Intel Lab readings file", readings_path=given.format(data=data_folder)
    )
    assert page.readings_report == "" and not page.readings_view().visible
    pytest.importorskip("pyspark")
    run = page.settings()
    assert run.readings_path == str(data_folder / "data.txt")
    with pytest.raises(RuntimeError, match="loaded"):
        run.streams()
    assert opened == [str(data_folder / "data.txt")]


def test_the_default_readings_path_is_the_data_folders_file(data_folder):
    page = LiveJoinSettings()
    assert page.readings_path == str(data_folder / "data.txt.gz") and page.readings_report == ""


def test_python_functions_stay_unrestricted(tmp_path, monkeypatch):
    from workbench.data.streams import load_streams

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(FileNotFoundError, match="no readings file at /nowhere/data.txt"):
        load_streams("Intel Lab readings file", readings_path="/nowhere/data.txt")
