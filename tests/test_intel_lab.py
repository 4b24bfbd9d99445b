"""The Intel Lab readings loader on fixture files written from the documented format."""

from __future__ import annotations

import gzip
import hashlib
import shutil

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


def test_fetch_verifies_the_digest_and_caches(tmp_path):
    payload = FIXTURE.read_bytes()
    src = tmp_path / "src" / "data.txt"
    src.parent.mkdir()
    src.write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    cache = tmp_path / "cache"
    got = fetch_readings(cache, url=src.as_uri(), expected_sha256=digest, progress=False)
    assert got.read_bytes() == payload
    src.unlink()  # cached: no second download needed
    assert fetch_readings(cache, url=src.as_uri(), expected_sha256=digest, progress=False) == got
    with pytest.raises(ValueError, match="sha256 of the download is"):
        src.write_bytes(b"tampered")
        fetch_readings(tmp_path / "c2", url=src.as_uri(), expected_sha256=digest, progress=False)
    with pytest.raises(OSError, match="could not download"):
        fetch_readings(tmp_path / "c3", url=(tmp_path / "missing.gz").as_uri(), progress=False)


def test_real_geometry_files():
    motes = load_mote_locations()
    assert len(motes) == 54 and motes["mote"].tolist() == list(range(1, 55))
    assert motes["x"].between(0.5, 40.5).all() and motes["y"].between(1, 31).all()
    p = load_connectivity()
    assert p.shape == (55, 55) and p[0, 31] == 0.0  # the line without a probability
    assert np.all(np.diag(p) == 0) and p.max() == pytest.approx(0.8327, abs=1e-4)
