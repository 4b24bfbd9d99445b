"""Settings from environment variables, and ``workbench dashboard``'s flags that set them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.config import ENV, Settings, checkout, run_folder, settings


def test_settings_default_and_read_every_variable(tmp_path):
    assert settings({}) == Settings()
    assert Settings().spark_master == "local[2]" and Settings().shuffle_partitions == 1
    given = settings(
        {
            "WORKBENCH_SPARK_MASTER": "spark://10.0.0.5:7077",
            "WORKBENCH_SHUFFLE_PARTITIONS": "8",
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_WORK_DIR": "~/runs",
        }
    )
    assert given.spark_master == "spark://10.0.0.5:7077" and given.shuffle_partitions == 8
    assert given.readings_file == tmp_path / "data" / "data.txt.gz"
    assert given.work_dir == Path.home() / "runs"


def test_the_data_folder_is_the_checkouts_data_else_the_users_cache(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parents[1]  # the tests run from a source checkout
    assert checkout() == root
    assert Settings().cache_dir == root / "data"  # where a user looks, beside the README
    assert settings({"WORKBENCH_DATA_DIR": str(tmp_path)}).cache_dir == tmp_path  # given: wins
    monkeypatch.setattr("workbench.config.checkout", lambda: None)  # installed from a wheel
    assert Settings().cache_dir.name == "workbench"  # the user's cache folder
    assert settings({"WORKBENCH_DATA_DIR": str(tmp_path)}).cache_dir == tmp_path


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("WORKBENCH_SPARK_MASTER", "locl[2]", "'locl[2]' is not a Spark master"),
        ("WORKBENCH_SHUFFLE_PARTITIONS", "0", "'0' must be a whole number >= 1"),
        ("WORKBENCH_SHUFFLE_PARTITIONS", "2.5", "'2.5' must be a whole number >= 1"),
        ("WORKBENCH_SPARK_AT_START", "later", "'later' must be yes or no"),
    ],
)
def test_a_bad_setting_names_its_variable_and_value(variable, value, message):
    with pytest.raises(ValueError, match=f"{variable} = {message}".replace("[", r"\[")):
        settings({variable: value})


def test_run_folders_go_under_the_configured_work_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_WORK_DIR", str(tmp_path / "work"))
    folder = run_folder("workbench-live-")
    assert folder.parent == tmp_path / "work" and folder.name.startswith("workbench-live-")
    assert run_folder("x-", tmp_path).parent == tmp_path  # a tab's own root comes first


def test_dashboard_flags_become_the_servers_environment(monkeypatch, tmp_path):
    served = []
    monkeypatch.setattr("workbench.app.serve.serve", lambda **kw: served.append(settings()))
    # the command sets the variables in its environment: here a copy, dropped after the test
    clean = {k: v for k, v in os.environ.items() if k not in ENV.values()}
    monkeypatch.setattr(os, "environ", clean)
    argv = ["dashboard", "--master", "local[1]", "--shuffle-partitions", "3", "--spark-slots", "4"]
    folders = ["--data-dir", str(tmp_path), "--work-dir", str(tmp_path / "w")]
    assert main([*argv, *folders, "--spark-at-start", "no", "--procs", "2"]) == 0
    (seen,) = served
    assert seen == Settings(
        "local[1]",
        3,
        tmp_path,
        tmp_path / "w",
        spark_slots=4,
        spark_at_start=False,
        server_procs=2,
    )
    clean["WORKBENCH_SPARK_MASTER"] = "local[4]"  # a variable set before: kept
    assert main(["dashboard"]) == 0 and served[-1].spark_master == "local[4]"


def test_a_bad_dashboard_flag_stops_before_the_server(monkeypatch, capsys):
    monkeypatch.setattr("workbench.app.serve.serve", lambda **kw: pytest.fail("served"))
    assert main(["dashboard", "--shuffle-partitions", "none"]) == 2
    assert "WORKBENCH_SHUFFLE_PARTITIONS = 'none'" in capsys.readouterr().err


def test_the_shared_session_runs_on_the_configured_master(monkeypatch):
    pytest.importorskip("pyspark")
    from workbench.spark import session

    made = []

    class Context:
        def setLogLevel(self, level: str) -> None:  # noqa: N802 (Spark's name)
            made.append(level)

    class Fake:
        sparkContext = Context()

    def fake_session(master: str, **options: object) -> Fake:
        made.append((master, options["shuffle_partitions"]))
        return Fake()

    monkeypatch.setattr(session, "spark_session", fake_session)
    monkeypatch.setenv("WORKBENCH_SPARK_MASTER", "spark://127.0.0.1:7077")
    monkeypatch.setenv("WORKBENCH_SHUFFLE_PARTITIONS", "2")
    session.shared_session()
    assert made == [("spark://127.0.0.1:7077", 2), "ERROR"]
    monkeypatch.setenv("WORKBENCH_SPARK_MASTER", "sc://127.0.0.1:15002")
    session.shared_session()
    assert made[-1] == ("sc://127.0.0.1:15002", 2)  # no context over Connect: no log level
