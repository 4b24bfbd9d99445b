"""Users' own CSVs of sensor readings."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.data.csv_replay import read_sensor_csv


def test_dates_arrivals_and_counts(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(
        "when,station,t,h,received\n"
        "2024-05-01 10:00:05,north,21.0,40,2024-05-01 10:00:06\n"
        "2024-05-01 10:00:01,south,20.0,,2024-05-01 10:00:09\n"
        "not a date,north,1,1,2024-05-01 10:00:10\n"
        "2024-05-01 10:00:07,south,x,41,2024-05-01 10:00:11\n"
    )
    table, report = read_sensor_csv(
        path,
        time="when",
        sensor="station",
        values={"temperature": "t", "humidity": "h"},
        arrival="received",
    )
    assert report == {"rows": 4, "bad_time_or_sensor": 1, "bad_values": 1}
    assert table["mote"].tolist() == ["south", "north", "south"]
    assert np.isnan(table["humidity"].iloc[0]) and np.isnan(table["temperature"].iloc[2])
    assert (table["arrival"] >= table["time"]).all()
    assert table.attrs["source"] == f"csv: {path}"


def test_unknown_column_names_the_columns(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"columns \['temp'\] are not in the CSV"):
        read_sensor_csv(path, time="a", sensor="b", values={"temperature": "temp"})
