"""Sensor readings as uncertain-time event streams, and their replay as micro-batch files.

**Templates learned from the data.**  Motes sample on a schedule: reading k of a mote is due at
``t0 + epoch_k * 31 s``.  The deviation of each reading's time from its mote's schedule
(``t0`` fitted as the median of ``time - 31 s * epoch``) is the timing uncertainty of that
mote: the reading's occurrence (its scheduled instant) lies ``deviation`` before its detection
stamp.  :func:`learn_templates` histograms each mote's deviations into a template ``phi`` on
``[0, L]`` (L the deviation range) so that ``H = phi + t_det - max(phi)`` (PTJoin Example 3).
It needs only ``time``, ``mote`` and ``epoch``: the real file's columns.

**Streams.**  :func:`readings_to_events` splits motes into streams (e.g. the lab's two halves),
each reading becoming an event (stream, id, template = its mote's index in the stream,
detection time, arrival = detection + a delay drawn uniformly up to the stream's D, so
arrival is out of order).

**Replay.**  :class:`Replayer` writes the events as JSON-lines micro-batch files that a Spark
file source reads as a stream, paced by arrival time (a speed factor) or as fast as possible;
it can be paused, resumed and stopped, and shows its progress (a tqdm bar).  Time is injected
(``sleep``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from workbench.events import COLUMNS, Events
from workbench.templates import TemplateSet
from workbench.timestamps import HistogramTimestamp

__all__ = ["Replayer", "learn_templates", "readings_to_events", "schedule_deviation"]


def schedule_deviation(readings: pd.DataFrame, epoch_seconds: float = 31.0) -> pd.Series:
    """Each reading's time minus its mote's schedule ``t0 + epoch * epoch_seconds`` (seconds)."""
    seconds = (readings["time"] - pd.Timestamp("1970-01-01")).dt.total_seconds()
    offset = seconds - readings["epoch"] * epoch_seconds
    t0 = offset.groupby(readings["mote"]).transform("median")
    return offset - t0


def learn_templates(
    readings: pd.DataFrame,
    n_buckets: int = 10,
    epoch_seconds: float = 31.0,
    trim: float = 0.001,
) -> dict[int, HistogramTimestamp]:
    """Per-mote timing templates from schedule deviations (see the module docstring).

    ``trim`` drops that share of the most extreme deviations on each side (clock glitches).
    Times in the template are milliseconds.

    >>> from workbench.data.replica import simulate_deployment
    >>> phi = learn_templates(simulate_deployment(days=0.5, seed=0))[7]
    >>> phi.min, phi.n_buckets, bool(500 < phi.length < 5000)
    (0.0, 10, True)
    """
    if n_buckets < 1:
        raise ValueError(f"n_buckets = {n_buckets!r} must be at least 1")
    deviation = schedule_deviation(readings, epoch_seconds) * 1000.0
    templates = {}
    for mote, dev in deviation.groupby(readings["mote"]):
        values = dev.to_numpy()
        lo, hi = np.quantile(values, [trim, 1 - trim])
        if not hi > lo:
            hi = lo + 1.0
        counts, edges = np.histogram(np.clip(values, lo, hi), bins=n_buckets, range=(lo, hi))
        probs = counts / counts.sum()
        length = hi - lo
        # occurrence = detection - deviation: reverse the deviation axis onto [0, length]
        templates[int(mote)] = HistogramTimestamp(length - (edges[::-1] - lo), probs[::-1])
    return templates


def readings_to_events(
    readings: pd.DataFrame,
    streams: Sequence[Sequence[int]],
    templates: dict[int, HistogramTimestamp],
    max_delay_ms: Sequence[float],
    seed: int = 0,
) -> tuple[Events, tuple[TemplateSet, ...], list[np.ndarray]]:
    """Two (or more) event streams from readings: returns events, template sets, and per
    stream the reading row of every event id.

    Detection times are milliseconds since the first reading.
    """
    if len(streams) != len(max_delay_ms):
        raise ValueError(f"{len(streams)} streams but {len(max_delay_ms)} delays")
    rng = np.random.default_rng(seed)
    t0 = readings["time"].min()
    parts, sets, rows_of = [], [], []
    for s, motes in enumerate(streams):
        motes = [int(m) for m in motes]
        missing = [m for m in motes if m not in templates]
        if missing:
            raise ValueError(f"motes {missing!r} of stream {s} have no template")
        mine = readings[readings["mote"].isin(motes)].sort_values("time", kind="stable")
        index_of = {m: k for k, m in enumerate(motes)}
        t_det = (mine["time"] - t0).dt.total_seconds().to_numpy() * 1000.0
        arrival = t_det + rng.uniform(0.0, float(max_delay_ms[s]), len(mine))
        parts.append(
            pd.DataFrame(
                {
                    "stream": s,
                    "id": np.arange(len(mine)),
                    "template": mine["mote"].map(index_of).to_numpy(),
                    "t_det": t_det,
                    "arrival": arrival,
                }
            )
        )
        sets.append(TemplateSet(f"stream {s}", tuple(templates[m] for m in motes)))
        rows_of.append(mine.index.to_numpy())
    merged = pd.concat(parts).sort_values("arrival", kind="stable")
    events = Events(*(merged[c].to_numpy() for c in COLUMNS))
    return events, tuple(sets), rows_of


class Replayer:
    """Write events (or any records with an ``arrival`` column) as JSON-lines micro-batch
    files, paced by arrival time.

    ``records`` is an :class:`Events` or a pandas frame sorted by ``arrival`` whose columns all
    become JSON fields (W-join tuples with keys, coalescing tuples with values).  ``speed`` None
    replays as fast as possible; otherwise one second of arrival time (ms in the records) takes
    ``1 / speed`` seconds.  ``batch_ms`` of arrival time go in one file.  Run it with
    :meth:`run` (blocking) or :meth:`start` (a thread); :meth:`pause`, :meth:`resume`,
    :meth:`stop` steer it; :attr:`written` counts records written; ``progress`` shows them in a
    ``tqdm.auto`` bar (stderr, or a widget in a notebook).  Files are named
    ``<prefix>-<k>.json``, so several replays can feed one folder.
    """

    def __init__(
        self,
        records: Events | pd.DataFrame,
        out_dir: str | os.PathLike[str],
        batch_ms: float = 1000.0,
        speed: float | None = None,
        progress: bool = False,
        sleep: Callable[[float], object] | None = None,
        prefix: str = "batch",
    ) -> None:
        if not batch_ms > 0:
            raise ValueError(f"batch_ms = {batch_ms!r} must be positive")
        if speed is not None and not speed > 0:
            raise ValueError(f"speed = {speed!r} must be positive (or None for no pacing)")
        if isinstance(records, Events):
            records = records.to_frame()
        if "arrival" not in records.columns:
            raise ValueError(f"records have no arrival column (columns: {list(records.columns)})")
        arrival = records["arrival"].to_numpy(dtype=np.float64)
        if np.any(np.diff(arrival) < 0):
            raise ValueError("records are not sorted by arrival")
        self.records = records.reset_index(drop=True)
        self._arrival = arrival
        self.out_dir = Path(out_dir)
        self.batch_ms = batch_ms
        self.speed = speed
        self.progress = progress
        self._sleep = sleep
        """The pacing wait (None: wait on the stop event, so :meth:`stop` ends it at once)."""
        self.prefix = prefix
        self._mtime_ns = 0
        self._running = threading.Event()
        self._running.set()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.written = 0
        self.files = 0
        self.visible: list[tuple[str, float, int]] = []
        """Per file written: its name, when it became visible (``time.time()``), its records."""

    def pause(self) -> None:
        """Hold the replay before its next file."""
        self._running.clear()

    def resume(self) -> None:
        """Continue a paused replay."""
        self._running.set()

    def stop(self) -> None:
        """End the replay after the file being written."""
        self._stopped.set()
        self._running.set()

    def join(self) -> None:
        """Wait for a :meth:`start` thread to end (after :meth:`stop`: at once)."""
        if self._thread is not None:
            self._thread.join()

    def start(self) -> threading.Thread:
        """Run in a background thread."""
        self._thread = threading.Thread(target=self.run, name="replay", daemon=True)
        self._thread.start()
        return self._thread

    def run(self) -> int:
        """Write every batch (or until stopped); return the number of events written."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        arrival, n = self._arrival, len(self._arrival)
        if not n:
            return 0
        batch = np.floor((arrival - arrival[0]) / self.batch_ms).astype(np.int64)
        bounds = np.flatnonzero(np.diff(batch)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [n]))
        # leave=None: the bar stays, unless it was shown below another bar (a bench's)
        bar = tqdm(total=n, unit="records", desc="replay", leave=None, disable=not self.progress)
        with bar:
            for k, (lo, hi) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
                if self.speed is not None and k > 0:
                    gap = (arrival[lo] - arrival[starts[k - 1]]) / 1000.0 / self.speed
                    (self._sleep or self._stopped.wait)(max(gap, 0.0))
                self._running.wait()
                if self._stopped.is_set():
                    break
                self._write(k, lo, hi)
                bar.update(hi - lo)
        return self.written

    def _write(self, k: int, lo: int, hi: int) -> None:
        name = f"{self.prefix}-{k:06d}.json"
        tmp = self.out_dir / f".{name}.tmp"
        rows = self.records.iloc[lo:hi].to_dict("records")  # Python scalars: exact floats
        with open(tmp, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
        # a file source reads files in modification-time order (millisecond resolution): make
        # it strictly increase, or two files written within a millisecond may swap
        self._mtime_ns = max(time.time_ns(), self._mtime_ns + 1_000_000)
        os.utime(tmp, ns=(self._mtime_ns, self._mtime_ns))
        tmp.replace(self.out_dir / name)  # atomic: a reader never sees half
        self.visible.append((name, time.time(), hi - lo))
        self.written += hi - lo
        self.files += 1
