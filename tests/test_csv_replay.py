"""Users' own CSVs of sensor readings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
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


def test_spark_prepare_reads_a_csv_with_the_columns_and_unit_its_flags_name(tmp_path, capsys):
    """``workbench spark prepare --source csv`` (issue 49): the live tab's defaults and its
    errors, in the flags' words, exit 2; a CSV of epoch seconds with its unit; tuple files for
    ``wjoin``."""
    from workbench.data.event_files import read_stream_specs
    from workbench.spark.submit import main

    sample = Path(__file__).resolve().parents[1] / "data" / "sample-two-sensors.csv"
    prep = ["prepare", "--source", "csv", "--path", str(sample)]
    assert main([*prep, "--output", str(tmp_path / "ok")]) == 0
    assert read_stream_specs(tmp_path / "ok")
    assert "313 of 313 rows accepted" in capsys.readouterr().err
    assert main([*prep, "--output", str(tmp_path / "x"), "--time-column", "when"]) == 2
    err = capsys.readouterr().err
    assert "columns ['when'] are not in the CSV (it has ['time', 'sensor'," in err
    assert "Set --time-column and --sensor-column" in err
    assert main([*prep, "--output", str(tmp_path / "y"), "--time-unit", "s"]) == 2
    assert "is not a time in s since 1970" in capsys.readouterr().err
    epochs = tmp_path / "epochs.csv"
    frame = pd.read_csv(sample)
    seconds = pd.to_datetime(frame["time"]).astype("int64") / 1e9
    frame.assign(time=seconds).to_csv(epochs, index=False)
    epoch_prep = ["prepare", "--source", "csv", "--path", str(epochs), "--output"]
    assert main([*epoch_prep, str(tmp_path / "z")]) == 2
    assert 'look like times since 1970-01-01 in "s", but the --time-unit' in capsys.readouterr().err
    assert main([*epoch_prep, str(tmp_path / "e"), "--time-unit", "s"]) == 0
    assert "313 events of 2 streams" in capsys.readouterr().out
    assert main(["prepare", "--source", "csv", "--path", str(tmp_path / "no.csv"),
                 "--output", str(tmp_path / "n")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "--path = " in err and "no.csv': no such file" in err
    assert main(["prepare", "--source", "tuples", "--streams", "4", "--format", "csv",
                 "--output", str(tmp_path / "t")]) == 0  # fmt: skip
    tuples = pd.read_csv(tmp_path / "t" / "tuples.csv")
    assert list(tuples.columns) == ["stream", "id", "key", "t", "arrival"]
    assert sorted(tuples["stream"].unique()) == [0, 1, 2, 3]
    assert (tuples["arrival"] >= tuples["t"]).all() and tuples["arrival"].is_monotonic_increasing
    assert main(["prepare", "--source", "tuples", "--streams", "7", "--output", "t"]) == 2
    assert "--streams = 7 must be 2 to 6" in capsys.readouterr().err
