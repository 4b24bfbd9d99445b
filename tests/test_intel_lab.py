"""The Intel Lab readings loader on fixture files written from the documented format."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import shutil
import socket
import threading

import numpy as np
import pytest

from workbench.data.intel_lab import (
    FLAG_BATTERY,
    FLAG_HUMIDITY,
    FLAG_TEMPERATURE,
    clean,
    fetch_readings,
    load_connectivity,
    load_mote_locations,
    load_readings,
)

FIXTURE = __import__("pathlib").Path(__file__).parent / "fixtures" / "intel_lab_quirks.txt"


def test_every_quirk_is_counted_and_nothing_valid_is_dropped():
    table, report = load_readings(FIXTURE)
    assert report.lines == 12
    # kept: 2 good mote-1 lines, the dying-battery line, mote 2's lines (full, short,
    # unparsable temperature, full), mote 3's line with an extra field, mote 4's late date
    assert report.rows == len(table) == 9
    assert report.malformed["empty line"] == 1
    assert report.malformed["fewer than 4 fields (no time or mote)"] == 1
    assert report.malformed["short line (missing measures, kept as NaN)"] == 1
    assert report.malformed["unparsable measure (kept as NaN)"] == 1
    assert report.malformed["unparsable date or time"] == 1
    assert report.malformed["extra fields (ignored)"] == 1
    assert not report.was_sorted and table["time"].is_monotonic_increasing
    short = table[(table["mote"] == 2) & (table["epoch"] == 6)].iloc[0]
    assert short["temperature"] == 20.2 and np.isnan(short["humidity"])
    assert np.isnan(table[(table["mote"] == 2) & (table["epoch"] == 7)]["temperature"].iloc[0])
    assert report.epoch_gaps == 1  # mote 2 jumps from epoch 7 to 9
    assert "not in time order" in report.summary()


def test_dying_battery_is_flagged_and_cleaned():
    table, report = load_readings(FIXTURE)
    dying = table[table["temperature"] > 100].iloc[0]
    assert dying["qc"] == FLAG_TEMPERATURE | FLAG_HUMIDITY | FLAG_BATTERY
    assert report.flagged["battery"] == 1 and report.flagged["temperature"] == 1
    cleaned = clean(table)
    row = cleaned.loc[dying.name]
    assert np.isnan(row["temperature"]) and np.isnan(row["humidity"]) and np.isnan(row["light"])
    assert row["voltage"] == pytest.approx(2.03397)
    assert len(cleaned) == len(table)
    healthy = table["qc"] == 0
    np.testing.assert_array_equal(cleaned[healthy]["temperature"], table[healthy]["temperature"])


def test_gzip_input_reads_the_same(tmp_path):
    gz = tmp_path / "data.txt.gz"
    with open(FIXTURE, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    a, _ = load_readings(FIXTURE)
    b, _ = load_readings(gz)
    assert a.equals(b)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="readings file not found"):
        load_readings(tmp_path / "nope.txt")


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder, counts GET requests, logs nothing."""

    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path):
    """A local HTTP server of ``tmp_path / "www"``: yields (base URL, folder, requests seen)."""
    folder = tmp_path / "www"
    folder.mkdir()
    seen: list[str] = []
    handler = type("Handler", (_CountingHandler,), {"requests": seen})
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", folder, seen
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _served_gzip(folder) -> tuple[bytes, str]:
    """The quirks fixture gzipped as ``data.txt.gz`` in ``folder``: its bytes and sha256."""
    payload = gzip.compress(FIXTURE.read_bytes(), mtime=0)
    (folder / "data.txt.gz").write_bytes(payload)
    return payload, hashlib.sha256(payload).hexdigest()


def test_fetch_downloads_into_the_data_dir_once(server, tmp_path, monkeypatch):
    base, folder, seen = server
    payload, digest = _served_gzip(folder)
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "cache"))
    got = fetch_readings(url=f"{base}/data.txt.gz", expected_sha256=digest, progress=False)
    assert got == tmp_path / "cache" / "data.txt.gz" and got.read_bytes() == payload
    assert seen == ["/data.txt.gz"]
    again = fetch_readings(url=f"{base}/data.txt.gz", expected_sha256=digest, progress=False)
    assert again == got and len(seen) == 1  # the verified copy is reused: no request


def test_fetch_refuses_a_wrong_digest(server, tmp_path):
    base, folder, _ = server
    _, digest = _served_gzip(folder)
    wrong = "0" * 64
    with pytest.raises(ValueError, match=f"expected sha256:{wrong} but got {digest}"):
        fetch_readings(tmp_path / "c", url=f"{base}/data.txt.gz", expected_sha256=wrong)
    assert not (tmp_path / "c" / "data.txt.gz").exists()


def test_fetch_offline_says_to_give_a_copy(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError, match="give the path of a copy of data.txt or data.txt.gz"):
        fetch_readings(tmp_path / "c", url=f"http://127.0.0.1:{port}/data.txt.gz")


def test_fetch_shows_a_progress_bar_on_stderr(server, tmp_path, capfd):
    base, folder, _ = server
    _, digest = _served_gzip(folder)
    fetch_readings(tmp_path / "c", url=f"{base}/data.txt.gz", expected_sha256=digest)
    captured = capfd.readouterr()
    assert captured.out == "" and "100%|" in captured.err and "B/s]" in captured.err


def test_real_geometry_files():
    motes = load_mote_locations()
    assert len(motes) == 54 and motes["mote"].tolist() == list(range(1, 55))
    assert motes["x"].between(0.5, 40.5).all() and motes["y"].between(1, 31).all()
    p = load_connectivity()
    assert p.shape == (55, 55) and p[0, 31] == 0.0  # the line without a probability
    assert np.all(np.diag(p) == 0) and p.max() == pytest.approx(0.8327, abs=1e-4)
