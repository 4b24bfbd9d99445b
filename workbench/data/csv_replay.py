"""Bring your own sensors: any CSV of timestamped readings, columns mapped by the user."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CsvReport", "epoch_unit", "read_sensor_csv"]

SHOWN_REJECTS = 5
"""Rejected rows a report lists by row number."""
EPOCH_UNITS = (("s", 1e8), ("ms", 1e11), ("us", 1e14), ("ns", 1e17))
"""Numeric time units since the Unix epoch, each with the least magnitude of a time after 1973
in that unit (the next unit's least magnitude ends its range)."""


def epoch_unit(numbers: pd.Series) -> str | None:
    """The unit in which numbers read as times since the Unix epoch after 1973 (the median's
    magnitude decides), or None when they are too small to be epoch times.

    >>> epoch_unit(pd.Series([1.7e9, 1.7e9 + 30])), epoch_unit(pd.Series([1.7e12]))
    ('s', 'ms')
    >>> epoch_unit(pd.Series([0.0, 30.0])) is None
    True
    """
    finite = numbers[np.isfinite(numbers)]
    if finite.empty:
        return None
    size = float(np.median(np.abs(finite)))
    found = [unit for unit, least in EPOCH_UNITS if size >= least]
    return found[-1] if found else None


@dataclass(frozen=True, eq=False)
class CsvReport(Mapping[str, int]):
    """What reading a CSV accepted and rejected, and why.

    As a mapping it holds the counts ``rows``, ``bad_time_or_sensor`` (rejected rows) and
    ``bad_values`` (measures that became NaN).  Rows are numbered as a spreadsheet shows them:
    the header is row 1, the first reading row 2.
    """

    rows: int
    rejected: tuple[tuple[str, int], ...]
    """Rejected rows per reason (a row counts under its first reason)."""
    first_rejected: tuple[tuple[int, str], ...]
    """The first few rejected rows: (row number, reason with the value)."""
    bad_values: int
    time_unit: str | None
    """The time unit the CSV was read with (None: dates)."""
    suggested_unit: str | None
    """The unit the time column's numbers look like, when it is not ``time_unit``."""

    @property
    def accepted(self) -> int:
        """Rows with a parsable time and a sensor."""
        return self.rows - self["bad_time_or_sensor"]

    def _counts(self) -> dict[str, int]:
        rejected = sum(n for _, n in self.rejected)
        return {"rows": self.rows, "bad_time_or_sensor": rejected, "bad_values": self.bad_values}

    def __getitem__(self, key: str) -> int:
        return self._counts()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts())

    def __len__(self) -> int:
        return 3

    def __repr__(self) -> str:
        return repr(self._counts())

    def hint(self, setting: str = "time unit") -> str:
        """How to read the time column better, naming the ``setting`` to change ("" if none)."""
        if self.suggested_unit is None:
            return ""
        now = f'"{self.time_unit}"' if self.time_unit else "none (dates)"
        return (
            f"The time column holds numbers that look like times since 1970-01-01 in "
            f'"{self.suggested_unit}", but the {setting} is {now}: set the {setting} to '
            f'"{self.suggested_unit}".'
        )

    def describe(self, setting: str = "time unit", sep: str = "\n") -> str:
        """In plain words, one part per line (``sep``): the hint first (the likely cause of
        rejections), accepted and rejected rows, the first rejected rows.

        >>> import io
        >>> text = "t,s\\n1700000000,a\\n1700000030,b\\nx,\\n"
        >>> print(read_sensor_csv(io.StringIO(text), "t", "s", {})[1].describe())
        The time column holds numbers that look like times since 1970-01-01 in "s", but the time unit is none (dates): set the time unit to "s".
        0 of 3 rows accepted; 3 rejected because the time does not parse.
        First rejected rows: 2 (time '1700000000' does not parse), 3 (time '1700000030' does not parse), 4 (time 'x' does not parse).
        """  # noqa: E501
        text = f"{self.accepted:,} of {self.rows:,} rows accepted"
        if len(self.rejected) == 1:
            text += f"; {self['bad_time_or_sensor']:,} rejected because the {self.rejected[0][0]}"
        elif self.rejected:
            reasons = ", ".join(f"{n:,} because the {reason}" for reason, n in self.rejected)
            text += f"; {self['bad_time_or_sensor']:,} rejected: {reasons}"
        parts = [self.hint(setting), text + "."]
        if self.bad_values:
            parts.append(f"{self.bad_values:,} measures do not parse as numbers (kept as empty).")
        if self.first_rejected:
            rows = ", ".join(f"{row} ({why})" for row, why in self.first_rejected)
            parts.append(f"First rejected rows: {rows}.")
        return sep.join(part for part in parts if part)


def read_sensor_csv(
    path: str | os.PathLike[str],
    time: str,
    sensor: str,
    values: Mapping[str, str],
    time_unit: str | None = None,
    arrival: str | None = None,
    **read_csv_kwargs: object,
) -> tuple[pd.DataFrame, CsvReport]:
    """Read a CSV into the workbench's readings table (``time``, ``mote``, measures, ``arrival``).

    ``time`` and ``sensor`` name the CSV columns holding the timestamp and the sensor id;
    ``values`` maps the workbench's measure names to CSV columns.  Timestamps are parsed as
    dates, or as numbers in ``time_unit`` ("s", "ms", "us", "ns") since the Unix epoch.
    ``arrival`` optionally names a column with arrival times (default: the timestamp itself).
    Rows whose time or sensor does not parse are dropped; unparsable measures become NaN.  The
    :class:`CsvReport` counts both, lists the first rejected rows with their reason, and
    suggests a time unit when the time column holds epoch numbers read otherwise.  The result
    is sorted by time.

    >>> import io
    >>> text = "ts,node,temp\\n1000,a,20.5\\n500,b,19\\nbad,a,1\\n1500,a,oops\\n"
    >>> table, report = read_sensor_csv(io.StringIO(text), time="ts", sensor="node",
    ...                                 values={"temperature": "temp"}, time_unit="s")
    >>> table["mote"].tolist(), report
    (['b', 'a', 'a'], {'rows': 4, 'bad_time_or_sensor': 1, 'bad_values': 1})
    >>> report.first_rejected
    ((4, "time 'bad' is not a time in s since 1970"),)
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
            numbers = pd.to_numeric(column, errors="coerce")
            return pd.to_datetime(numbers, unit=time_unit, errors="coerce")
        return pd.to_datetime(column, errors="coerce", format="mixed")

    table = pd.DataFrame({"time": parse_time(raw[time]), "mote": raw[sensor]})
    bad_values = 0
    for name, column in values.items():
        numbers = pd.to_numeric(raw[column], errors="coerce")
        bad_values += int((numbers.isna() & raw[column].notna()).sum())
        table[name] = numbers.astype(np.float64)
    table["arrival"] = parse_time(raw[arrival]) if arrival else table["time"]
    report = _report(raw[time], table, bad_values, time_unit or None)
    ok = table["time"].notna() & table["mote"].notna()
    table = table[ok].sort_values(["time"], kind="stable").reset_index(drop=True)
    table.attrs["source"] = f"csv: {path}" if isinstance(path, str | os.PathLike) else "csv"
    return table, report


def _report(
    times: pd.Series, table: pd.DataFrame, bad_values: int, time_unit: str | None
) -> CsvReport:
    """The report of a read CSV: rejected rows by reason, the first few, the unit hint."""
    no_time = table["time"].isna().to_numpy()
    no_sensor = table["mote"].isna().to_numpy() & ~no_time
    what = f"is not a time in {time_unit} since 1970" if time_unit else "does not parse"
    reasons = np.where(no_time, f"time {what}", "sensor is empty")[no_time | no_sensor]
    first = [
        (int(k) + 2, f"time {times.iloc[k]!r} {what}" if no_time[k] else "sensor is empty")
        for k in np.flatnonzero(no_time | no_sensor)[:SHOWN_REJECTS]
    ]
    numbers = pd.to_numeric(times, errors="coerce")
    numeric = int(numbers.notna().sum()) * 2 >= max(int(times.notna().sum()), 1)
    unit = epoch_unit(numbers.dropna()) if numeric else None
    kinds, counts = np.unique(reasons, return_counts=True)
    return CsvReport(
        rows=len(table),
        rejected=tuple((str(r), int(n)) for r, n in zip(kinds, counts, strict=True)),
        first_rejected=tuple(first),
        bad_values=bad_values,
        time_unit=time_unit,
        suggested_unit=unit if unit != time_unit else None,
    )
