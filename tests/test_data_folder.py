"""The checkout's ``data/`` folder: where a user looks for data (its README), a sample CSV the
Live tab's upload accepts as it is, and downloads kept out of git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from workbench.app.live_settings import LiveJoinSettings
from workbench.data.streams import csv_streams
from workbench.operators.oracle import brute_force_join

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = DATA / "sample-two-sensors.csv"


def test_the_sample_is_accepted_as_uploaded_and_makes_two_streams_and_pairs():
    data = SAMPLE.read_bytes()
    page = LiveJoinSettings(source="CSV file", csv_file=data)  # what the upload runs
    assert page.csv_alert == "success", page.csv_report
    assert "313 of 313 rows accepted" in page.csv_report
    streams = csv_streams(data, page.csv_time, page.csv_sensor, page.csv_time_unit)  # Start's
    assert streams.motes == ((1,), (2,))  # one sensor each: two streams
    assert page.d >= page.fast_from  # the default window takes the fast path
    pairs = brute_force_join(streams.events, streams.specs(), page.d, page.delta)
    assert len(pairs) > 100  # most readings of one sensor pair with the other's


def test_downloads_are_ignored_but_the_readme_and_the_sample_are_not():
    names = ["README.md", SAMPLE.name, ".gitignore", "data.txt.gz", "my-sensors.csv"]
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *names],
        cwd=DATA,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert ignored == ["data.txt.gz", "my-sensors.csv"]
