"""Bring your own sensors: any CSV of timestamped readings, columns mapped by the user."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["read_sensor_csv"]


def read_sensor_csv(
    path: str | os.PathLike[str],
    time: str,
    sensor: str,
    values: Mapping[str, str],
    time_unit: str | None = None,
    arrival: str | None = None,
    **read_csv_kwargs: object,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Read a CSV into the workbench's readings table (``time``, ``mote``, measures, ``arrival``).

    ``time`` and ``sensor`` name the CSV columns holding the timestamp and the sensor id;
    ``values`` maps the workbench's measure names to CSV columns.  Timestamps are parsed as
    dates, or as numbers in ``time_unit`` ("s", "ms", ...) since the Unix epoch.  ``arrival``
    optionally names a column with arrival times (default: the timestamp itself).  Rows whose
    time or sensor does not parse are dropped and counted; unparsable measures become NaN and
    are counted.  The result is sorted by time.

    >>> import io
    >>> text = "ts,node,temp\\n1000,a,20.5\\n500,b,19\\nbad,a,1\\n1500,a,oops\\n"
    >>> table, report = read_sensor_csv(io.StringIO(text), time="ts", sensor="node",
    ...                                 values={"temperature": "temp"}, time_unit="s")
    >>> table["mote"].tolist(), report
    (['b', 'a', 'a'], {'rows': 4, 'bad_time_or_sensor': 1, 'bad_values': 1})
    """
    raw = pd.read_csv(path, dtype=str, **read_csv_kwargs)
    missing = [
        c
        for c in (time, sensor, *values.values(), *([arrival] if arrival else []))
        if c not in raw.columns
    ]
    if missing:
        raise ValueError(f"columns {missing!r} are not in the CSV (it has {list(raw.columns)!r})")

    def parse_time(column: pd.Series) -> pd.Series:
        if time_unit:
            return pd.to_datetime(pd.to_numeric(column, errors="coerce"), unit=time_unit)
        return pd.to_datetime(column, errors="coerce", format="mixed")

    table = pd.DataFrame({"time": parse_time(raw[time]), "mote": raw[sensor]})
    bad_values = 0
    for name, column in values.items():
        numbers = pd.to_numeric(raw[column], errors="coerce")
        bad_values += int((numbers.isna() & raw[column].notna()).sum())
        table[name] = numbers.astype(np.float64)
    table["arrival"] = parse_time(raw[arrival]) if arrival else table["time"]
    ok = table["time"].notna() & table["mote"].notna()
    report = {"rows": len(raw), "bad_time_or_sensor": int((~ok).sum()), "bad_values": bad_values}
    table = table[ok].sort_values(["time"], kind="stable").reset_index(drop=True)
    table.attrs["source"] = f"csv: {path}" if isinstance(path, str | os.PathLike) else "csv"
    return table, report
