"""Event sources: the Intel Lab deployment (real file or simulated replica), users' CSVs,
synthetic streams."""

from __future__ import annotations

from workbench.data.csv_replay import read_sensor_csv
from workbench.data.intel_lab import clean, fetch_readings, load_readings
from workbench.data.replica import simulate_deployment
from workbench.data.synthetic import synthetic_events

__all__ = [
    "clean",
    "fetch_readings",
    "load_readings",
    "read_sensor_csv",
    "simulate_deployment",
    "synthetic_events",
]
