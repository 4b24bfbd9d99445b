"""Bring your own sensors: any CSV of timestamped readings, columns mapped by the user."""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "CLI_SETTINGS",
    "PAGE_SETTINGS",
    "CsvReport",
    "CsvSettings",
    "decode_csv",
    "epoch_unit",
    "read_sensor_csv",
]


class CsvSettings(NamedTuple):
    """What the user calls the three CSV settings where they set them, so that a message about
    a CSV names the setting to change: the time column, the sensor column, the time unit."""

    time: str
    sensor: str
    unit: str


PAGE_SETTINGS = CsvSettings("CSV time column", "CSV sensor column", "CSV time unit")
"""The live tab's names (its inputs' labels)."""
CLI_SETTINGS = CsvSettings("--time-column", "--sensor-column", "--time-unit")
"""``workbench spark prepare --source csv``'s names (its flags)."""

SHOWN_REJECTS = 5
"""Rejected rows a report lists by row number."""
EPOCH_UNITS = (("s", 1e8), ("ms", 1e11), ("us", 1e14), ("ns", 1e17))
"""Numeric time units since the Unix epoch, each with the least magnitude of a time after 1973
in that unit (the next unit's least magnitude ends its range)."""
EPOCH_LIMITS = {"s": 9.2e9, "ms": 9.2e12, "us": 9.2e15, "ns": 9.2e18}
"""The largest magnitude of a time since the epoch in each unit that a timestamp holds (about
the years 1677 to 2262)."""
HINT_SAMPLE = 10_000
"""Time values looked at (evenly spread) to suggest a time unit."""
SIGNATURES = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook is one: save it as CSV)"),
    (b"\x1f\x8b", "a gzip file (unpack it first)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook (save it as CSV)"),
)
"""The first bytes of binary files a CSV upload might be, with what they are."""
CONTROL_BYTES = bytes([*range(1, 9), 11, *range(14, 32), 127])
"""Bytes that text (UTF-8 or Windows-1252) has no place for: tab, newlines and form feed are
allowed, NUL is checked first."""
BINARY_SHARE = 0.01
"""A file with more control bytes than this share is binary, not text."""


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
    columns: tuple[str, str] = ("", "")
    """The CSV's time and sensor columns (named in the description of rejected rows)."""
    notes: tuple[str, ...] = ()
    """How the file was read when not as plain UTF-8 (:func:`decode_csv`), said first."""

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
        """In plain words, one part per line (``sep``): the notes and the hint first (the
        likely cause of rejections), accepted and rejected rows, the first rejected rows and the
        columns they were read from.

        >>> import io
        >>> text = "t,s\\n1700000000,a\\n1700000030,b\\nx,\\n"
        >>> print(read_sensor_csv(io.StringIO(text), "t", "s", {})[1].describe())
        The time column holds numbers that look like times since 1970-01-01 in "s", but the time unit is none (dates): set the time unit to "s".
        0 of 3 rows accepted; 3 rejected because the time does not parse.
        First rejected rows: 2 (time '1700000000' does not parse), 3 (time '1700000030' does not parse), 4 (time 'x' does not parse).
        Rows are numbered as in a spreadsheet (the header is row 1); the time is column "t", the sensor column "s".
        """  # noqa: E501
        text = f"{self.accepted:,} of {self.rows:,} rows accepted"
        if len(self.rejected) == 1:
            text += f"; {self['bad_time_or_sensor']:,} rejected because the {self.rejected[0][0]}"
        elif self.rejected:
            reasons = ", ".join(f"{n:,} because the {reason}" for reason, n in self.rejected)
            text += f"; {self['bad_time_or_sensor']:,} rejected: {reasons}"
        parts = [*self.notes, self.hint(setting), text + "."]
        if self.bad_values:
            parts.append(f"{self.bad_values:,} measures do not parse as numbers (kept as empty).")
        if self.first_rejected:
            rows = ", ".join(f"{row} ({why})" for row, why in self.first_rejected)
            parts.append(f"First rejected rows: {rows}.")
            if all(self.columns):
                time, sensor = self.columns
                parts.append(
                    "Rows are numbered as in a spreadsheet (the header is row 1); the time is "
                    f'column "{time}", the sensor column "{sensor}".'
                )
        return sep.join(part for part in parts if part)


def _where(data: bytes, offset: int) -> str:
    """Byte ``offset`` of a CSV as its row (the header is row 1) and column (1 counted from the
    left: delimiters before it in its line, quotes not followed)."""
    start = data.rfind(b"\n", 0, offset) + 1
    row = data.count(b"\n", 0, offset) + 1
    column = data.count(b",", start, offset) + 1
    return f"byte {offset:,} in row {row}, column {column}"


def decode_csv(data: bytes) -> tuple[str, tuple[str, ...]]:
    """The text of an uploaded CSV, and notes on how it was read: UTF-8 (a byte order mark is
    dropped), UTF-16 with its byte order mark, else Windows-1252/Latin-1 (noted, naming the
    first byte that is not UTF-8).  An empty or binary file is a ValueError saying what it is.

    >>> decode_csv("température,time\\n".encode("latin-1"))[1]
    ('The file is not UTF-8 (byte 4 in row 1, column 1, is 0xE9): it was read as Windows-1252 (Latin-1), where that byte is "é". Save it as UTF-8 if some text looks wrong.',)
    >>> decode_csv(b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00")
    Traceback (most recent call last):
    ValueError: the file is not a CSV: it starts like a PNG image (10 bytes read); choose a .csv file of text
    """  # noqa: E501
    if not data:
        raise ValueError(
            "the file is empty (0 bytes): a CSV needs a header row naming its columns, then "
            "one row per reading"
        )
    size = f"{len(data):,} bytes read"
    for magic, kind in SIGNATURES:
        if data.startswith(magic):
            raise ValueError(
                f"the file is not a CSV: it starts like {kind} ({size}); choose a .csv file of text"
            )
    for bom in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        if data.startswith(bom):
            try:
                return data.decode("utf-16"), ("The file is UTF-16 text; it was read as such.",)
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"the file starts as UTF-16 text but is not ({_where(data, exc.start)} "
                    "does not decode); save it as UTF-8 CSV"
                ) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ValueError(
            f"the file is not a text CSV: it holds NUL bytes, as binary files do (the first at "
            f"{_where(data, nul)}; {size}); choose a .csv file of text"
        )
    control = len(data) - len(data.translate(None, CONTROL_BYTES))
    if control > BINARY_SHARE * len(data):
        first = next(k for k, b in enumerate(data) if b in CONTROL_BYTES)
        raise ValueError(
            f"the file is not a text CSV: {control:,} of its {len(data):,} bytes are control "
            f"characters, as in binary files (the first at {_where(data, first)}); choose a "
            ".csv file of text"
        )
    try:
        return data.decode("utf-8-sig"), ()
    except UnicodeDecodeError as exc:
        bad = exc.start
    codec, name = "cp1252", "Windows-1252 (Latin-1)"
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:  # a byte Windows-1252 leaves undefined: Latin-1 has them all
        codec, name = "latin-1", "Latin-1"
        text = data.decode(codec)
    note = (
        f"The file is not UTF-8 ({_where(data, bad)}, is 0x{data[bad]:02X}): it was read as "
        f'{name}, where that byte is "{data[bad : bad + 1].decode(codec)}". Save it as UTF-8 '
        "if some text looks wrong."
    )
    return text, (note,)


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
    unit = time_unit or None
    times, why = _parse_time(raw[time], unit)
    table = pd.DataFrame({"time": times, "mote": raw[sensor]})
    bad_values = 0
    for name, column in values.items():
        numbers = pd.to_numeric(raw[column], errors="coerce").astype(np.float64)
        numbers[~np.isfinite(numbers)] = np.nan  # inf, -inf, 1e400: not a measure either
        bad_values += int((numbers.isna() & raw[column].notna()).sum())
        table[name] = numbers
    table["arrival"] = _parse_time(raw[arrival], unit)[0] if arrival else table["time"]
    report = _report(raw[time], table, why, bad_values, unit, (time, sensor))
    ok = table["time"].notna() & table["mote"].notna()
    table = table[ok].sort_values(["time"], kind="stable").reset_index(drop=True)
    table.attrs["source"] = f"csv: {path}" if isinstance(path, str | os.PathLike) else "csv"
    return table, report


def _parse_time(column: pd.Series, unit: str | None) -> tuple[pd.Series, pd.Series]:
    """A time column as timestamps (NaT where it does not parse), and why each row that does not
    parse does not: dates (ISO 8601 first, fast; other forms row by row), or numbers in ``unit``
    since the epoch (not finite, or beyond a timestamp's range: named)."""
    why = pd.Series("", index=column.index, dtype=object)
    if not unit:
        times = _dates(column, "ISO8601")
        retry = times.isna() & column.notna()
        if retry.any():
            times = times.where(~retry, _dates(column[retry], "mixed").reindex(times.index))
        why[times.isna()] = "does not parse"
        why[column.isna()] = "is empty"
        return times, why
    numbers = pd.to_numeric(column, errors="coerce").astype(np.float64)
    why[numbers.isna()] = f"is not a time in {unit} since 1970"
    why[column.isna()] = "is empty"
    failed = np.flatnonzero((numbers.isna() & column.notna()).to_numpy())
    infinite = (numbers.notna() & ~np.isfinite(numbers)).to_numpy()
    texts = column.to_numpy(dtype=object)[failed]
    infinite[failed] = np.array([_is_number(v) for v in texts], dtype=bool)  # "nan", "1e400"
    why[infinite] = "is not a finite number"
    beyond = np.isfinite(numbers) & (numbers.abs() > EPOCH_LIMITS[unit])
    why[beyond] = f"is beyond the years 1677 to 2262 in {unit} since 1970"
    numbers[infinite | beyond] = np.nan
    times = pd.to_datetime(numbers, unit=unit, errors="coerce")
    why[times.isna() & (why == "")] = f"is beyond the years 1677 to 2262 in {unit} since 1970"
    return times, why


def _dates(column: pd.Series, form: str) -> pd.Series:
    """Dates in ``form`` as naive UTC timestamps (a time zone given: converted; none: taken as
    UTC), NaT where they do not parse."""
    return pd.to_datetime(column, errors="coerce", format=form, utc=True).dt.tz_convert(None)


def _report(
    times: pd.Series,
    table: pd.DataFrame,
    why: pd.Series,
    bad_values: int,
    time_unit: str | None,
    columns: tuple[str, str],
) -> CsvReport:
    """The report of a read CSV: rejected rows by reason, the first few, the unit hint."""
    no_time = table["time"].isna().to_numpy()
    no_sensor = table["mote"].isna().to_numpy() & ~no_time
    rejected = no_time | no_sensor
    because = np.where(no_time, "time " + why.to_numpy(dtype=object), "sensor is empty")
    first = [
        (int(k) + 2, _time_problem(times.iloc[k], why.iloc[k]) if no_time[k] else "sensor is empty")
        for k in np.flatnonzero(rejected)[:SHOWN_REJECTS]
    ]
    sample = times.iloc[:: max(1, len(times) // HINT_SAMPLE)]  # the hint needs no more
    numbers = pd.to_numeric(sample, errors="coerce")
    numeric = int(numbers.notna().sum()) * 2 >= max(int(sample.notna().sum()), 1)
    unit = epoch_unit(numbers.dropna()) if numeric else None
    kinds, counts = np.unique(because[rejected].astype(str), return_counts=True)
    return CsvReport(
        rows=len(table),
        rejected=tuple((str(r), int(n)) for r, n in zip(kinds, counts, strict=True)),
        first_rejected=tuple(first),
        bad_values=bad_values,
        time_unit=time_unit,
        suggested_unit=unit if unit != time_unit else None,
        columns=columns,
    )


def _is_number(text: str) -> bool:
    """Whether Python reads ``text`` as a number (it reads "nan", "inf" and "1e400", which
    pandas leaves unread)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _time_problem(value: object, why: str) -> str:
    """Why one row's time was rejected, quoting the value (an empty cell: said so)."""
    return "time is empty" if pd.isna(value) else f"time {value!r} {why}"
