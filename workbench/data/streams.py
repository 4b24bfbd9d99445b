"""Readings as two replayed event streams: the simulated Intel Lab deployment (made once per
process), the real readings file, a user's CSV, synthetic events (:func:`load_streams`).
:func:`replayed_streams` is the one place where readings are split into two event streams
(the dashboard, the experiments and the notebooks all call it).

The dashboard's tabs read these tables and never mutate them, so one copy serves every session.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache, partial
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.config import settings
from workbench.data.csv_replay import (
    PAGE_SETTINGS,
    CsvReport,
    CsvSettings,
    decode_csv,
    read_sensor_csv,
)
from workbench.data.intel_lab import clean, load_readings
from workbench.data.replay import learn_templates, readings_to_events
from workbench.data.replica import simulate_deployment
from workbench.data.synthetic import synthetic_events
from workbench.events import Events
from workbench.operators import StreamSpec
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp

__all__ = [
    "SOURCES",
    "ReplayedStreams",
    "WindowRange",
    "check_upload_size",
    "csv_streams",
    "default_readings",
    "default_streams",
    "interval_streams",
    "load_streams",
    "month_streams",
    "readings_file_streams",
    "replayed_streams",
    "synthetic_streams",
    "window_range",
    "with_epochs",
]

DEFAULT_DAYS = 1.0
"""Days of simulated readings behind the dashboard."""
REPLAY_DAYS = 0.25
"""Days of readings replayed as two event streams (the first hours of the day)."""
MONTH_DAYS = 31.0
"""Days of the simulated deployment re-joined as a whole (the whole-month view)."""
"""Days of readings replayed as two event streams (the first hours of the day)."""
MAX_DELAY_MS = 2000.0
"""Network delay bound D of both replayed streams (ms)."""
WINDOW_MS = 3000.0
"""The live join's window d before any data is loaded, and the least default after (ms)."""
WINDOW_MAX_MS = 600_000.0
"""The least upper end of d's range (ms)."""


@cache
def default_readings() -> pd.DataFrame:
    """One simulated day of the Intel Lab deployment (labelled simulated in ``attrs``)."""
    return clean(simulate_deployment(days=DEFAULT_DAYS, seed=0))


@dataclass(frozen=True)
class ReplayedStreams:
    """The readings replayed as two event streams (alternate motes unless split otherwise),
    with learned templates (PTJoin Definition 4)."""

    events: Events
    templates: tuple[TemplateSet, TemplateSet]
    motes: tuple[tuple[int, ...], tuple[int, ...]]
    max_delays: tuple[float, float]
    """Network delay bound D of each stream (ms): arrivals are drawn up to it."""
    source: str
    report: CsvReport | None = None
    """What reading a CSV accepted and rejected (None for the other sources)."""

    @property
    def max_delay_ms(self) -> float:
        """The delay bound D that covers both streams (ms)."""
        return max(self.max_delays)

    def specs(self) -> tuple[StreamSpec, StreamSpec]:
        """Each stream's templates with its delay bound D, as the joins take them."""
        a, b = (StreamSpec(t, d) for t, d in zip(self.templates, self.max_delays, strict=True))
        return a, b


@dataclass(frozen=True)
class WindowRange:
    """The live join's window d as a stream pair's templates suggest it (ms)."""

    fast_from: float
    """max(pi_A, pi_B), the widest template: PTJoin Theorem 2's fast path needs d >= it."""
    default: float
    upper: float
    step: float


def interval_streams(streams: ReplayedStreams) -> ReplayedStreams:
    """The same events with each template's support as a uniform interval (one bucket: what
    the interval correlations take, :meth:`~workbench.templates.TemplateSet.intervals`).

    >>> from workbench.data.replica import simulate_deployment
    >>> r = interval_streams(replayed_streams(simulate_deployment(days=0.05, seed=0), days=None))
    >>> {t.n_buckets for s in r.templates for t in s}
    {1}
    """
    a, b = (s.intervals() for s in streams.templates)
    return replace(streams, templates=(a, b))


def window_range(templates: tuple[TemplateSet, TemplateSet]) -> WindowRange:
    """d's default (the widest template rounded up, at least :data:`WINDOW_MS`: the fast
    path, PTJoin Theorem 2), range (up to 20x the default) and step.

    >>> from workbench.timestamps import HistogramTimestamp as H
    >>> wide = TemplateSet("A", (H.uniform(0, 29_865.5),))
    >>> window_range((wide, TemplateSet("B", (H.uniform(0, 2_045.2),))))
    WindowRange(fast_from=29865.5, default=30000.0, upper=600000.0, step=1000.0)
    >>> window_range((TemplateSet("A", (H.uniform(0, 1_382.2),)),) * 2).default
    3000.0
    """
    fast_from = max(t.pi for t in templates)
    step = 10.0 ** (math.floor(math.log10(max(fast_from, WINDOW_MS))) - 1)
    default = max(WINDOW_MS, math.ceil(fast_from / step) * step)
    return WindowRange(fast_from, default, max(WINDOW_MAX_MS, 20 * default), step)


def replayed_streams(
    readings: pd.DataFrame,
    days: float | None = REPLAY_DAYS,
    max_delay_ms: float | tuple[float, float] = MAX_DELAY_MS,
    epoch_seconds: float = 31.0,
    split: tuple[Sequence[int], Sequence[int]] | None = None,
    templates: Mapping[int, HistogramTimestamp] | None = None,
    seed: int = 0,
) -> ReplayedStreams:
    """Readings split into two event streams: the one home of that step (PTJoin Example 3).

    The first ``days`` (None: all) of readings (time, mote, epoch) become events of two
    streams: the motes of ``split`` (default: alternate motes, the first, third, ... to A),
    each reading detected at its time and arriving up to ``max_delay_ms`` (one D, or one per
    stream) later (seeded by ``seed``).  Each mote's template is learned from its schedule
    deviations (:func:`learn_templates`) unless ``templates`` gives them; motes without a
    template are left out.

    >>> from workbench.data.replica import simulate_deployment
    >>> r = replayed_streams(simulate_deployment(days=0.05, seed=0), days=None)
    >>> r.motes[0][:3], r.motes[1][:3], r.max_delays
    ((1, 3, 6), (2, 4, 7), (2000.0, 2000.0))
    """
    head = readings
    if days is not None:
        head = readings[readings["time"] < readings["time"].min() + pd.Timedelta(days=days)]
    if templates is None:
        templates = learn_templates(head, epoch_seconds=epoch_seconds)
    if split is None:
        motes = sorted(templates)
        split = (motes[0::2], motes[1::2])
    chosen = tuple(tuple(int(m) for m in group if m in templates) for group in split)
    a, b = chosen
    if not (a and b):
        have = len(set(a) | set(b))
        raise ValueError(f"two streams need at least two sensors; the data has {have}")
    delays = np.broadcast_to(np.asarray(max_delay_ms, dtype=np.float64), (2,))
    max_delays = (float(delays[0]), float(delays[1]))
    events, sets, _ = readings_to_events(head, chosen, dict(templates), max_delays, seed=seed)
    named = tuple(
        TemplateSet(f"{name} (motes {', '.join(map(str, m[:2]))}, ...)", s.templates)
        for name, m, s in zip("AB", chosen, sets, strict=True)
    )
    source = str(readings.attrs.get("source", "readings"))
    return ReplayedStreams(events, (named[0], named[1]), (a, b), max_delays, source)


@cache
def month_streams() -> ReplayedStreams:
    """The whole simulated month (:data:`MONTH_DAYS`, about 2.6 M readings) as two event
    streams with per-mote templates learned from it (built once per process, read-only)."""
    return replayed_streams(clean(simulate_deployment(days=MONTH_DAYS, seed=0)), days=None)


@cache
def default_streams() -> ReplayedStreams:
    """Per-mote templates learned from the replica, and its first hours as two streams."""
    return replayed_streams(default_readings())


def readings_file_streams(path: str | Path | None = None) -> ReplayedStreams:
    """The real Intel Lab readings file (``data.txt`` or ``.gz``; None: the configured
    :attr:`~workbench.config.Settings.readings_file`), replayed like the replica."""
    path = settings().readings_file if path is None else path
    readings, _ = load_readings(path)
    readings = clean(readings)
    readings.attrs["source"] = f"Intel Lab readings ({Path(path).name})"
    return replayed_streams(readings)


def with_epochs(readings: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Readings without epochs get them from the common sampling period: a sensor's next
    reading falls ``round(gap / period)`` slots after its previous one (0 for a repeated time,
    2 after a missed reading), the period being the median gap between a sensor's readings.
    Counting slot by slot keeps jitter of up to half a period from accumulating over a long
    replay.  The period is then refined as the slope of time over slot within sensors (least
    squares).  Returns the readings with ``epoch``, and the period in seconds.

    >>> t = pd.to_datetime([0, 10.2, 19.9, 5, 15.1, 35.2], unit="s")
    >>> out, period = with_epochs(pd.DataFrame({"time": t, "mote": [1, 1, 1, 2, 2, 2]}))
    >>> out["epoch"].tolist(), round(period, 2)
    ([0, 1, 2, 0, 1, 3], 10.03)
    """
    mote = readings["mote"]
    seconds = (readings["time"] - readings["time"].min()).dt.total_seconds()
    order = np.lexsort((seconds.to_numpy(), pd.factorize(mote)[0]))
    gaps = seconds.iloc[order].groupby(mote.iloc[order]).diff()
    if not (gaps > 0).any():
        raise ValueError("no sensor has two readings at different times: no sampling period")
    slots = np.rint(gaps.fillna(0.0) / float(gaps[gaps > 0].median()))
    epoch = slots.groupby(mote.iloc[order]).cumsum().reindex(readings.index)
    since_first = seconds - seconds.groupby(mote).transform("min")
    e = epoch - epoch.groupby(mote).transform("mean")
    s = since_first - since_first.groupby(mote).transform("mean")
    period = float((e * s).sum() / (e * e).sum())
    return readings.assign(epoch=epoch.astype(np.int64)), period


def check_upload_size(size: int) -> None:
    """Refuse a file above the configured upload limit (``WORKBENCH_MAX_UPLOAD_MB``), naming its
    size and the limit, before anything reads it."""
    limit = settings().max_upload_mb
    if size > settings().max_upload_bytes:
        raise ValueError(
            f"the file is {size / 2**20:,.1f} MB ({size:,} bytes), above the upload limit of "
            f"{limit:g} MB (WORKBENCH_MAX_UPLOAD_MB, workbench dashboard --max-upload-mb); it "
            "was not read"
        )


def csv_streams(
    data: bytes,
    time: str,
    sensor: str,
    time_unit: str | None = None,
    names: CsvSettings = PAGE_SETTINGS,
    uploaded: bool = True,
) -> ReplayedStreams:
    """A CSV of the user's own readings (``time`` and ``sensor`` columns named), replayed like
    the replica: sensors numbered in order of their ids, epochs from :func:`with_epochs`; the
    reading report in ``report``.  The last few CSVs are kept, so checking an upload and
    replaying it read it once.  An unusable CSV raises ValueError saying why, naming the time
    unit's setting when the times look like epoch numbers read as something else: an uploaded
    file above the upload limit (:func:`check_upload_size`), empty, binary
    (:func:`decode_csv`), without the named columns (the ones it has listed), with a header
    only, or with no row whose time and sensor parse.  Text that is not UTF-8 is read as
    Windows-1252 and noted in the report.  ``names``: what the messages call the settings (the
    page's inputs, or the command line's flags); ``uploaded=False`` for a file read from disk
    by the command line, which the dashboard's upload limit does not hold."""
    if uploaded:
        check_upload_size(len(data))  # before the cache: the limit in force now decides
    return _csv_streams(data, time, sensor, time_unit, names)


@lru_cache(maxsize=4)
def _csv_streams(
    data: bytes, time: str, sensor: str, time_unit: str | None, names: CsvSettings
) -> ReplayedStreams:
    """:func:`csv_streams` of a file already let in (the last few kept)."""
    text, notes = decode_csv(data)
    if not text.strip():
        raise ValueError(
            f"the file holds no header row, only {len(data):,} bytes of blank space: a CSV "
            "needs a header row naming its columns, then one row per reading"
        )
    try:
        readings, report = read_sensor_csv(
            io.StringIO(text),
            time=time,
            sensor=sensor,
            values={},
            time_unit=time_unit or None,
            keep_default_na=False,  # "nan", "NA", "null": said to be no time, not empty
            na_values=[""],
        )
    except ValueError as exc:  # a missing column, text pandas cannot split into rows
        text = f"the CSV cannot be read: {exc}"
        if "are not in the CSV" in str(exc):
            text += (
                f". Set {names.time} and {names.sensor} to the names of your CSV's time and "
                "sensor columns"
            )
        raise ValueError(text) from exc
    report = replace(report, notes=notes)
    if report.rows == 0:
        header = text.strip().splitlines()[0][:200]
        raise ValueError(
            f"the CSV has only its header row ({header}): no readings below it, one row per "
            "reading is needed"
        )
    if readings.empty:
        why = report.describe(names.unit, sep=" ")
        raise ValueError(f"no CSV row has a parsable time and sensor. {why}")
    codes, ids = pd.factorize(readings["mote"], sort=True)
    readings = readings.assign(mote=codes + 1)
    try:
        readings, period = with_epochs(readings)
        readings.attrs["source"] = f"CSV: {len(readings):,} readings of {len(ids)} sensors"
        streams = replayed_streams(readings, days=None, epoch_seconds=period)
    except ValueError as exc:  # too few sensors or readings to replay: with what was read
        why = str(exc).rstrip(".")
        raise ValueError(f"{why}. {report.describe(names.unit, sep=' ')}") from exc
    return replace(streams, report=report)


def synthetic_streams(
    n_per_stream: int = 5000, mean_interarrival_ms: float = 2000.0, seed: int = 0
) -> ReplayedStreams:
    """Synthetic events: random templates (<= 1.5 s), Poisson detections, delays up to D and
    2 % of the events late (:func:`workbench.data.synthetic.synthetic_events`)."""
    rng = np.random.default_rng(seed)
    counts = (6, 8)
    templates = (
        random_templates(rng, counts[0], 8, 1500.0, "A (synthetic)"),
        random_templates(rng, counts[1], 8, 1500.0, "B (synthetic)"),
    )
    events = synthetic_events(
        rng,
        n_per_stream,
        counts,
        mean_interarrival=mean_interarrival_ms,
        max_delay=(MAX_DELAY_MS, MAX_DELAY_MS),
        late_fraction=0.02,
    )
    motes = (tuple(range(counts[0])), tuple(range(counts[1])))
    delays = (MAX_DELAY_MS, MAX_DELAY_MS)
    return ReplayedStreams(events, templates, motes, delays, "synthetic events")


SOURCES = ("simulated deployment", "Intel Lab readings file", "CSV file", "synthetic events")
"""Data the live join can replay."""


def load_streams(
    source: str,
    readings_path: str | Path | None = None,
    csv_file: bytes | None = None,
    csv_time: str = "time",
    csv_sensor: str = "sensor",
    csv_time_unit: str = "",
) -> ReplayedStreams:
    """The two event streams of a data source (one of :data:`SOURCES`; any other is refused).
    ``readings_path`` None: the configured :attr:`~workbench.config.Settings.readings_file`."""
    if source not in SOURCES:
        raise ValueError(f"unknown data source {source!r}; choose one of {SOURCES}")
    readings_path = settings().readings_file if readings_path is None else readings_path
    if source == "Intel Lab readings file" and not Path(readings_path).exists():
        raise FileNotFoundError(
            f"no readings file at {readings_path}: workbench.data.fetch_readings() downloads "
            f"it into {settings().cache_dir} (needs a network; WORKBENCH_DATA_DIR sets the "
            "folder), or give the path of a copy of data.txt or data.txt.gz"
        )
    if source == "CSV file" and csv_file is None:
        raise ValueError("choose a CSV file first (a time column and a sensor column)")
    loaders = {
        "simulated deployment": default_streams,
        "Intel Lab readings file": partial(readings_file_streams, readings_path),
        "CSV file": partial(csv_streams, csv_file, csv_time, csv_sensor, csv_time_unit),
        "synthetic events": synthetic_streams,
    }
    return loaders[source]()
