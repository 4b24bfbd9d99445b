"""Hostile and broken uploads of the live tab's CSV (issue 18): each gets a message in the page
naming the problem (row and column where there is one), nothing raises, and the server stays
up for everyone.  The unit tests go through what the page runs on an upload:
:class:`~workbench.app.live_settings.LiveJoinSettings` reading ``csv_file``."""

from __future__ import annotations

import os
import time
import urllib.request

import numpy as np
import pytest
from test_dashboard_ui import CHROMIUM, SHOWN, browser  # noqa: F401

from harness.live_cases import newcomer_csv
from harness.server import dashboard_server
from workbench.app.live_settings import LiveJoinSettings
from workbench.app.serve import disconnect_message
from workbench.data.streams import csv_streams, load_streams

ROWS_HINT = (
    'Rows are numbered as in a spreadsheet (the header is row 1); the time is column "time", '
    'the sensor column "sensor".'
)


def _page(data: bytes, **params: object) -> LiveJoinSettings:
    """The live tab's settings after an upload of ``data`` (read at once, as in the page)."""
    return LiveJoinSettings(source="CSV file", csv_file=data, **params)


def _epoch_rows(bad: dict[int, str]) -> bytes:
    """40 readings of two sensors in epoch seconds; rows ``bad`` (spreadsheet numbering) get
    the given time instead."""
    lines = newcomer_csv(40, epoch_seconds=True).decode().splitlines()
    for row, value in bad.items():
        lines[row - 1] = value + "," + lines[row - 1].split(",", 1)[1]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(
    ("data", "params", "message"),
    [
        pytest.param(
            b"when,who\n2024-01-01,a\n",
            {},
            "The CSV cannot be read: columns ['time', 'sensor'] are not in the CSV (it has "
            "['when', 'who']). Set CSV time column and CSV sensor column to the names of your "
            "CSV's time and sensor columns.",
            id="wrong-column-names",
        ),
        pytest.param(
            b"time,temp\n2024-03-01T08:00:00,20\n",
            {},
            "The CSV cannot be read: columns ['sensor'] are not in the CSV (it has ['time', "
            "'temp']).",
            id="missing-column",
        ),
        pytest.param(
            b"",
            {},
            "The file is empty (0 bytes): a CSV needs a header row naming its columns, then one "
            "row per reading.",
            id="empty",
        ),
        pytest.param(
            b"time,sensor\n",
            {},
            "The CSV has only its header row (time,sensor): no readings below it, one row per "
            "reading is needed.",
            id="header-only",
        ),
        pytest.param(
            b"\n \n\n",
            {},
            "The file holds no header row, only 4 bytes of blank space: a CSV needs a header "
            "row naming its columns, then one row per reading.",
            id="blank",
        ),
        pytest.param(
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
            {},
            "The file is not a CSV: it starts like a PNG image (272 bytes read); choose a .csv "
            "file of text.",
            id="png",
        ),
        pytest.param(
            b"time,sensor\n" + np.random.default_rng(0).bytes(4000),
            {},
            "The file is not a text CSV: it holds NUL bytes, as binary files do (the first at "
            "byte 94 in row 3, column 2; 4,012 bytes read); choose a .csv file of text.",
            id="random-bytes",
        ),
        pytest.param(
            bytes(b for b in np.random.default_rng(1).bytes(3000) if b),
            {},
            "The file is not a text CSV: ",
            id="random-bytes-without-nul",
        ),
        pytest.param(
            b"PK\x03\x04" + bytes(100),
            {},
            "The file is not a CSV: it starts like a ZIP archive (an Excel .xlsx workbook is "
            "one: save it as CSV) (104 bytes read); choose a .csv file of text.",
            id="xlsx",
        ),
        pytest.param(
            b"time,sensor\n1700000000,a\n1700000030,b,c,d\n",
            {"csv_time_unit": "s"},
            "The CSV cannot be read: Error tokenizing data. C error: Expected 2 fields in line "
            "3, saw 4.",
            id="ragged-row",
        ),
        pytest.param(
            b"time,sensor\nabc,a\nxyz,b\n",
            {"csv_time_unit": "s"},
            "no CSV row has a parsable time and sensor. 0 of 2 rows accepted; 2 rejected "
            "because the time is not a time in s since 1970. First rejected rows: 2 (time 'abc' "
            "is not a time in s since 1970), 3 (time 'xyz' is not a time in s since 1970). "
            + ROWS_HINT,
            id="non-numeric-only",
        ),
        pytest.param(
            b"time,sensor\ninf,a\nnan,b\n1e400,a\n-inf,b\n",
            {"csv_time_unit": "s"},
            "no CSV row has a parsable time and sensor. 0 of 4 rows accepted; 4 rejected "
            "because the time is not a finite number. First rejected rows: 2 (time 'inf' is not "
            "a finite number), 3 (time 'nan' is not a finite number), 4 (time '1e400' is not a "
            "finite number), 5 (time '-inf' is not a finite number). " + ROWS_HINT,
            id="non-finite-only",
        ),
    ],
)
def test_an_unusable_upload_is_refused_with_a_message(data, params, message):
    page = _page(data, **params)
    assert page.csv_alert == "danger"
    assert page.csv_report.startswith(message)
    assert page.csv_view().object == page.csv_report  # what the page shows
    assert page.fast_from is None  # no window from data that was not read


def test_bad_rows_are_named_by_row_and_column_and_the_rest_is_used():
    page = _page(
        _epoch_rows({4: "inf", 6: "nan", 8: "1e400", 10: "abc", 12: "1e20"}), csv_time_unit="s"
    )
    assert page.csv_alert == "warning" and page.fast_from is not None  # usable: 35 rows
    assert page.csv_report == (
        "**CSV: 35 readings of 2 sensors**\n\n35 of 40 rows accepted; 5 rejected: 1 because the "
        "time is beyond the years 1677 to 2262 in s since 1970, 3 because the time is not a "
        "finite number, 1 because the time is not a time in s since 1970.\n\nFirst rejected "
        "rows: 4 (time 'inf' is not a finite number), 6 (time 'nan' is not a finite number), "
        "8 (time '1e400' is not a finite number), 10 (time 'abc' is not a time in s since "
        "1970), 12 (time '1e20' is beyond the years 1677 to 2262 in s since 1970).\n\n" + ROWS_HINT
    )


@pytest.mark.parametrize(
    ("header", "row", "column", "shown"),
    [("time,sensor,température", 1, 3, "é"), ("time,sensor,temperature", 3, 2, "ö")],
    ids=["latin-1-header", "latin-1-values"],
)
def test_latin_1_is_read_with_a_warning_naming_the_first_byte(header, row, column, shown):
    lines = newcomer_csv(40, epoch_seconds=True).decode().splitlines()[1:]
    data = "\n".join([header, *lines]).replace("north", "nörth") + "\n"
    if "é" in header:
        data = data.replace("nörth", "north")
    raw = data.encode("latin-1")
    offset = raw.index(shown.encode("latin-1"))
    page = _page(raw, csv_time_unit="s")
    assert page.csv_alert == "warning"
    assert (
        f"The file is not UTF-8 (byte {offset} in row {row}, column {column}, is "
        f"0x{raw[offset]:02X}): it was read as Windows-1252 (Latin-1), where that byte is "
        f'"{shown}". Save it as UTF-8 if some text looks wrong.'
    ) in page.csv_report
    assert "40 of 40 rows accepted" in page.csv_report


def test_utf_8_with_a_byte_order_mark_and_time_zones_read_plainly():
    data = b"\xef\xbb\xbftime,sensor\n" + b"".join(
        f"2024-03-01T08:{m:02d}:00+01:00,{s}\n".encode() for m in range(30) for s in "ab"
    )
    page = _page(data)
    assert page.csv_alert == "success" and "60 of 60 rows accepted" in page.csv_report


def test_a_file_above_the_upload_limit_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setenv("WORKBENCH_MAX_UPLOAD_MB", "0.05")  # 52,428 bytes
    read = []
    monkeypatch.setattr("workbench.data.streams.decode_csv", lambda data: read.append(data))
    data = newcomer_csv(2000)  # about 70 kB
    page = _page(data)
    assert page.csv_alert == "danger" and read == []
    assert page.csv_report == (
        f"The file is {len(data) / 2**20:.1f} MB ({len(data):,} bytes), above the upload limit "
        "of 0.05 MB (WORKBENCH_MAX_UPLOAD_MB, workbench dashboard --max-upload-mb); it was not "
        "read."
    )
    with pytest.raises(ValueError, match="above the upload limit of 0.05 MB"):  # Start: same
        load_streams("CSV file", csv_file=data)


def test_an_unforeseen_failure_is_a_message_not_a_crash(monkeypatch):
    def broken(*_):
        raise OverflowError("boom")

    monkeypatch.setattr("workbench.app.live_settings.csv_streams", broken)
    page = _page(b"time,sensor\n")
    assert page.csv_alert == "danger"
    assert page.csv_report == "The CSV cannot be read (OverflowError: boom)."


def _million_rows() -> bytes:
    """10**6 readings of 20 sensors every 30 s with 10 s jitter, ISO times (about 36 MB)."""
    rng = np.random.default_rng(0)
    n = 1_000_000
    seconds = 30 * (np.arange(n) // 20) + rng.uniform(0, 10, n)
    times = np.datetime64("2024-03-01T08:00:00", "ms") + (seconds * 1000).astype("timedelta64[ms]")
    sensors = np.char.add("s", (np.arange(n) % 20).astype(str))
    lines = np.char.add(np.char.add(np.datetime_as_string(times), ","), sensors)
    return ("time,sensor\n" + "\n".join(lines.tolist()) + "\n").encode()


@pytest.mark.slow
def test_a_million_rows_are_read_in_seconds_and_replayable():
    data = _million_rows()
    assert len(data) < 50 * 2**20  # within the default upload limit
    began = time.perf_counter()
    page = _page(data)
    seconds = time.perf_counter() - began
    assert page.csv_alert == "success", page.csv_report
    assert "1,000,000 of 1,000,000 rows accepted" in page.csv_report
    assert seconds < 20, f"{seconds:.1f} s to read 10**6 rows"  # about 3 s alone on 2 cores
    streams = csv_streams(data, "time", "sensor", "")  # what Start replays: kept, not re-read
    assert len(streams.events) == 1_000_000 and page.fast_from is not None


# -- the real page ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_limit_server(tmp_path_factory):
    """The dashboard with a 1 MB upload limit, on a free localhost port (no upload starts a
    Spark run: Spark is not started with it)."""
    log = tmp_path_factory.mktemp("server") / "stderr.txt"
    with dashboard_server(log, ["--max-upload-mb", "1", "--spark-at-start", "no"]) as (url, _):
        yield url


def _live_tab_with_csv(page, url: str) -> None:
    page.set_default_timeout(60_000)
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.locator(".bk-tab").filter(has_text="Live join (Spark)").click()
    page.get_by_text("speed (x real time)").filter(visible=True).first.wait_for()
    page.locator("select >> visible=true").first.select_option("CSV file")
    page.locator("input[type=file]").first.wait_for(state="attached")


@pytest.mark.ui
@pytest.mark.slow
def test_bad_uploads_get_messages_and_other_sessions_go_on(
    browser,  # noqa: F811
    small_limit_server,
    screenshots,  # noqa: F811
    tmp_path,
):
    if CHROMIUM is None:
        pytest.skip("chromium not found")
    first = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = first.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _live_tab_with_csv(page, small_limit_server)
    png = tmp_path / "photo.csv"  # a PNG named .csv, as a user might pick one
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + os.urandom(5000))
    page.locator("input[type=file]").first.set_input_files(str(png))
    page.wait_for_function(SHOWN, arg="it starts like a PNG image")
    for folder in screenshots:
        page.screenshot(path=str(folder / "18-upload-png.png"), full_page=True)
    big = tmp_path / "big.csv"  # 1.2 MB: above the 1 MB limit, within the websocket's
    big.write_bytes(newcomer_csv(36_000))
    assert 2**20 < big.stat().st_size < 1.5 * 2**20
    page.locator("input[type=file]").first.set_input_files(str(big))
    page.wait_for_function(SHOWN, arg="above the upload limit of 1 MB")
    for folder in screenshots:
        page.screenshot(path=str(folder / "18-upload-too-large.png"), full_page=True)
    assert errors == []
    # the server is up and another session works: a second browser context loads and reads
    # a good CSV while the first page keeps its message
    second = browser.new_context(viewport={"width": 1500, "height": 1000})
    other = second.new_page()
    _live_tab_with_csv(other, small_limit_server)
    good = tmp_path / "good.csv"
    good.write_bytes(newcomer_csv(200))
    other.locator("input[type=file]").first.set_input_files(str(good))
    other.wait_for_function(SHOWN, arg="200 of 200 rows accepted")
    for folder in screenshots:
        other.screenshot(path=str(folder / "18-upload-other-session.png"), full_page=True)
    assert page.evaluate(SHOWN, "above the upload limit of 1 MB")
    with urllib.request.urlopen(small_limit_server, timeout=30) as response:
        assert response.status == 200
    # far above the limit: the websocket drops the connection, and the page says why
    huge = tmp_path / "huge.csv"
    huge.write_bytes(b"time,sensor,a\n" * 1_300_000)  # 18 MB: beyond the 20 MB message
    page.locator("input[type=file]").first.set_input_files(str(huge))
    page.locator(".notyf__message").get_by_text("The connection to the server was lost").wait_for()
    assert disconnect_message(1) in page.locator(".notyf__message").first.inner_text()
    for folder in screenshots:
        page.screenshot(path=str(folder / "18-upload-dropped.png"), full_page=True)
    again = tmp_path / "again.csv"  # the other session goes on
    again.write_bytes(newcomer_csv(300))
    other.locator("input[type=file]").first.set_input_files(str(again))
    other.wait_for_function(SHOWN, arg="300 of 300 rows accepted")
    first.close()
    second.close()
