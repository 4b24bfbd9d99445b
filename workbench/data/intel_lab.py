"""The Intel Berkeley Research lab deployment: its geometry and its readings file.

Readings (``data.txt`` or ``data.txt.gz``, no header) have 8 whitespace-separated fields:
``date time epoch moteid temperature humidity light voltage``.  The loader keeps every line it
can place in time (date, time and mote parse), fills unparsable or missing measurements with
NaN, counts every malformed line by reason, flags physically impossible values (the dying-
battery signature), and sorts the result by time.  :func:`clean` is the documented cleaning
step: flagged measurements become NaN (rows stay, so epochs and gaps remain visible).
:func:`fetch_readings` downloads the real file into the data folder through pooch.
"""

from __future__ import annotations

import gzip
import io
import os
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.config import settings

__all__ = [
    "FLAG_BATTERY",
    "FLAG_HUMIDITY",
    "FLAG_TEMPERATURE",
    "MEASURES",
    "READINGS_GZ_SHA256",
    "READINGS_URL",
    "LoadReport",
    "clean",
    "fetch_readings",
    "load_connectivity",
    "load_mote_locations",
    "load_readings",
    "quality_flags",
]

READINGS_URL = "http://db.csail.mit.edu/labdata/data.txt.gz"
"""Where the publisher serves the readings (needs a network)."""
READINGS_GZ_SHA256 = "d99288c8f406ca6604d359ceaa0d8adfffa79e7095061a1e27dc4399f48c7225"
MEASURES = ("temperature", "humidity", "light", "voltage")

FLAG_TEMPERATURE = 1
"""Temperature outside -10..60 C (dying motes report about 122 C)."""
FLAG_HUMIDITY = 2
"""Relative humidity outside 0..100 %."""
FLAG_BATTERY = 4
"""Voltage below 2.4 V: the battery is failing and the other values are unreliable."""

GEOMETRY = resources.files("workbench.data") / "intel-lab"
"""The deployment's mote positions and link qualities, shipped as package data."""


@dataclass
class LoadReport:
    """What a load saw: lines, kept rows, malformed lines by reason, flags, epoch gaps."""

    lines: int = 0
    rows: int = 0
    malformed: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    flagged: Counter = field(default_factory=Counter)
    epoch_gaps: int = 0
    was_sorted: bool = True

    def note(self, reason: str, line: str) -> None:
        """Count one malformed line (and keep the first example of each reason)."""
        self.malformed[reason] += 1
        self.examples.setdefault(reason, line.rstrip("\n")[:120])

    def summary(self) -> str:
        """One paragraph for people."""
        bad = ", ".join(f"{k}: {v}" for k, v in sorted(self.malformed.items())) or "none"
        flags = ", ".join(f"{k}: {v}" for k, v in sorted(self.flagged.items())) or "none"
        order = "in time order" if self.was_sorted else "not in time order (sorted on load)"
        return (
            f"{self.lines:,} lines, {self.rows:,} readings kept; malformed: {bad}; "
            f"flagged: {flags}; epoch gaps: {self.epoch_gaps:,}; input {order}"
        )


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")  # noqa: SIM115


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return float("nan")
    return value if np.isfinite(value) else float("nan")


def load_readings(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, LoadReport]:
    """Read an Intel Lab readings file (``.txt`` or ``.gz``) into a time-sorted table.

    Columns: ``time`` (UTC, datetime64), ``epoch``, ``mote``, the four measures (NaN where
    missing or unparsable) and ``qc`` (bit mask of ``FLAG_*``).  Never raises on a bad line.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"readings file not found: {path}")
    report = LoadReport()
    times: list[str] = []
    epochs: list[int] = []
    motes: list[int] = []
    values: list[list[float]] = [[] for _ in MEASURES]
    with _open_text(path) as lines:
        for line in lines:
            report.lines += 1
            parts = line.split()
            if not parts:
                report.note("empty line", line)
                continue
            if len(parts) < 4:
                report.note("fewer than 4 fields (no time or mote)", line)
                continue
            try:
                epoch, mote = int(parts[2]), int(parts[3])
            except ValueError:
                report.note("unparsable epoch or mote id", line)
                continue
            if len(parts) < 8:
                report.note("short line (missing measures, kept as NaN)", line)
            elif len(parts) > 8:
                report.note("extra fields (ignored)", line)
            measures = [_number(p) for p in parts[4:8]]
            measures += [float("nan")] * (4 - len(measures))
            if any(np.isnan(v) for v, p in zip(measures, parts[4:8], strict=False)):
                report.note("unparsable measure (kept as NaN)", line)
            times.append(f"{parts[0]} {parts[1]}")
            epochs.append(epoch)
            motes.append(mote)
            for column, v in zip(values, measures, strict=True):
                column.append(v)
    stamps = pd.to_datetime(pd.Series(times, dtype=object), errors="coerce", format="mixed")
    table = pd.DataFrame(
        {
            "time": stamps,
            "epoch": np.asarray(epochs, dtype=np.int64),
            "mote": np.asarray(motes, dtype=np.int64),
            **{
                name: np.asarray(col, dtype=np.float64)
                for name, col in zip(MEASURES, values, strict=True)
            },
        }
    )
    bad_time = table["time"].isna()
    for _ in range(int(bad_time.sum())):
        report.malformed["unparsable date or time"] += 1
    table = table[~bad_time]
    report.was_sorted = bool(table["time"].is_monotonic_increasing)
    table = table.sort_values(["time", "mote"], kind="stable").reset_index(drop=True)
    table["qc"] = quality_flags(table)
    for name, bit in (
        ("temperature", FLAG_TEMPERATURE),
        ("humidity", FLAG_HUMIDITY),
        ("battery", FLAG_BATTERY),
    ):
        report.flagged[name] = int((table["qc"] & bit).astype(bool).sum())
    report.rows = len(table)
    report.epoch_gaps = _epoch_gaps(table)
    return table, report


def quality_flags(table: pd.DataFrame) -> np.ndarray:
    """Each reading's ``qc`` bits: :data:`FLAG_TEMPERATURE`, :data:`FLAG_HUMIDITY` and
    :data:`FLAG_BATTERY` where a value is physically impossible (the dying-battery signature).

    >>> readings = {"temperature": [21.0, 122.2], "humidity": [40.0, -4.0], "voltage": [2.7, 2.3]}
    >>> quality_flags(pd.DataFrame(readings))
    array([0, 7])
    """
    t, h, v = (table[c].to_numpy() for c in ("temperature", "humidity", "voltage"))
    flags = np.zeros(len(table), dtype=np.int64)
    with np.errstate(invalid="ignore"):
        flags |= np.where((t < -10) | (t > 60), FLAG_TEMPERATURE, 0)
        flags |= np.where((h < 0) | (h > 100), FLAG_HUMIDITY, 0)
        flags |= np.where(v < 2.4, FLAG_BATTERY, 0)
    return flags


def _epoch_gaps(table: pd.DataFrame) -> int:
    gaps = 0
    for _, epochs in table.groupby("mote")["epoch"]:
        e = np.unique(epochs.to_numpy())
        gaps += int((np.diff(e) > 1).sum())
    return gaps


def clean(table: pd.DataFrame) -> pd.DataFrame:
    """The cleaning step: measures of flagged rows become NaN (temperature, humidity by their
    own flag; every measure but voltage when the battery is failing).  Rows are kept."""
    out = table.copy()
    battery = (out["qc"] & FLAG_BATTERY).astype(bool)
    out.loc[(out["qc"] & FLAG_TEMPERATURE).astype(bool) | battery, "temperature"] = np.nan
    out.loc[(out["qc"] & FLAG_HUMIDITY).astype(bool) | battery, "humidity"] = np.nan
    out.loc[battery, "light"] = np.nan
    return out


def load_mote_locations(path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The 54 motes' positions (``mote``, ``x``, ``y`` in metres)."""
    source = Path(path) if path else GEOMETRY / "mote_locs.txt"
    with source.open(encoding="utf-8") as text:
        table = pd.read_csv(text, sep=r"\s+", header=None, names=["mote", "x", "y"])
    return table.astype({"mote": np.int64})


def load_connectivity(path: str | os.PathLike[str] | None = None) -> np.ndarray:
    """Link quality matrix ``p[sender, receiver]`` over ids 0-54 (0 = base station).

    The file's line without a probability (``0 31``) is read as 0.
    """
    source = Path(path) if path else GEOMETRY / "connectivity.txt"
    p = np.zeros((55, 55))
    with source.open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) >= 2:
                p[int(parts[0]), int(parts[1])] = float(parts[2]) if len(parts) > 2 else 0.0
    return p


def fetch_readings(
    cache_dir: str | os.PathLike[str] | None = None,
    url: str = READINGS_URL,
    expected_sha256: str = READINGS_GZ_SHA256,
    progress: bool = True,
) -> Path:
    """Download the readings once into ``cache_dir`` (None: the configured data folder,
    ``WORKBENCH_DATA_DIR``, else a checkout's ``data/`` or the user's cache folder,
    :attr:`workbench.config.Settings.cache_dir`) with pooch.

    pooch does the work: it streams the file to a temporary name, checks its sha256 before
    moving it into place (a wrong digest is a ValueError naming the expected and the actual
    digest, and nothing is kept), reuses a cached file whose digest matches without a request,
    and shows a tqdm progress bar on stderr when ``progress``.  ``url``: http(s) or ftp (a
    ``file:`` URL is pooch's ValueError).  A failed download (offline) is an OSError saying to
    give the path of a copy instead.
    """
    import pooch  # here, not at import: it takes a tenth of a second

    if cache_dir is None:
        cache_dir = settings().cache_dir
    name = Path(urllib.parse.urlparse(url).path).name or "data.txt.gz"
    try:
        got = pooch.retrieve(
            url,
            known_hash=f"sha256:{expected_sha256}",
            fname=name,
            path=cache_dir,
            progressbar=progress,
        )
    except OSError as exc:  # requests' errors are OSErrors too
        raise OSError(
            f"could not download {url} into {cache_dir} ({exc}); offline, give the path of a "
            "copy of data.txt or data.txt.gz instead"
        ) from exc
    return Path(got)
