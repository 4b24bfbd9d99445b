"""The live join's input and its oracle, for the tests and the benchmarks' rooms: a CSV as a
newcomer has one (two sensors, timing noise, bad times on request), and the in-process PTJoin's
pairs (PTJoin Section 3) that every Spark run of the same streams must equal."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.events import Events, sort_pairs
from workbench.operators import PTJoin, StreamSpec, replay

__all__ = ["in_process_pairs", "newcomer_csv"]


def newcomer_csv(
    rows: int = 2000,
    jitter_s: float = 10.0,
    bad_times: int = 0,
    epoch_seconds: bool = False,
    seed: int = 0,
) -> bytes:
    """A CSV as a newcomer has one: ``time, sensor, temperature``, two sensors sampling every
    30 s with up to ``jitter_s`` of timing noise, ISO times (or epoch seconds); the first
    ``bad_times`` rows at every tenth line get an unparsable time."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-03-01T08:00:00")
    lines = ["time,sensor,temperature"]
    for k in range(rows):
        t = start + pd.Timedelta(seconds=30 * (k // 2) + rng.uniform(0, jitter_s))
        stamp = f"{t.timestamp():.3f}" if epoch_seconds else t.isoformat()
        if k % 10 == 3 and k // 10 < bad_times:
            stamp = "not a time"
        lines.append(f"{stamp},{'north' if k % 2 else 'south'},{20 + rng.normal():.2f}")
    return ("\n".join(lines) + "\n").encode()


def in_process_pairs(
    streams: tuple[StreamSpec, StreamSpec], events: Events, d: float, delta: float
) -> np.ndarray:
    """The in-process PTJoin's pairs, sorted ``(n, 2)``."""
    matches, _ = replay(PTJoin(streams=streams, d=d, threshold=delta, mode="loose"), events)
    return sort_pairs(np.stack((matches.a_ids, matches.b_ids), axis=1))
