"""The whole simulated month re-joined at once: tight PTJoin's compiled kernel over every
event of the deployment (PTJoin Section 3, Theorems 2-4), fast enough to re-run on each move
of delta or d.  The dashboard's whole-month tab and notebook 03 read it from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.data.streams import ReplayedStreams
from workbench.experiments.harness import timed
from workbench.operators import PTJoin
from workbench.records import Emitted

__all__ = ["MonthJoin", "delta_sweep", "month_join"]


@dataclass(frozen=True)
class MonthJoin:
    """One re-join of a whole replay at window ``d`` (ms) and confidence ``delta``: the pairs
    (a, b ids), the seconds to install the query (stime tables) and to join (events in, pairs
    out as NumPy arrays), and the pairs per hour of the A event's detection."""

    d: float
    delta: float
    pairs: np.ndarray
    install_s: float
    join_s: float
    per_hour: pd.Series

    @property
    def seconds(self) -> float:
        """Installation plus join: what a move of delta or d waits for."""
        return self.install_s + self.join_s


def month_join(streams: ReplayedStreams, d: float, delta: float) -> MonthJoin:
    """Every event of ``streams`` through a fresh tight PTJoin (compiled), in one
    ``push_batch`` and a flush.

    >>> from workbench.data.replica import simulate_deployment
    >>> from workbench.data.streams import replayed_streams
    >>> rep = replayed_streams(simulate_deployment(days=0.1, seed=0), days=None)
    >>> run = month_join(rep, d=3000.0, delta=0.8)
    >>> run.pairs.shape[1], int(run.per_hour.sum()) == len(run.pairs), run.per_hour.index.name
    (2, True, 'hour')
    """
    op, install_s = timed(lambda: PTJoin(streams=streams.specs(), d=d, threshold=delta))
    events = streams.events
    out, join_s = timed(lambda: Emitted.concat([op.push_batch(events), op.flush()], 2))
    return MonthJoin(d, delta, out.ids, install_s, join_s, _per_hour(events, out.a_ids))


def _per_hour(events, a_ids: np.ndarray) -> pd.Series:
    """Pairs counted by the hour (from the first detection) of their A event."""
    mine = events.stream == 0
    ids, t_det = events.id[mine], events.t_det[mine]
    if ids.size and 0 <= ids.min() and ids.max() < 4 * ids.size:
        by_id = np.empty(int(ids.max()) + 1)  # dense ids (a replay's): look each up directly
        by_id[ids] = t_det
        t_a = by_id[a_ids]
    else:
        order = np.argsort(ids)
        t_a = t_det[order][np.searchsorted(ids[order], a_ids)]
    hours = int(np.ceil((events.t_det.max() - events.t_det.min()) / 3.6e6)) + 1
    counts = np.bincount(((t_a - events.t_det.min()) // 3.6e6).astype(np.int64), minlength=hours)
    return pd.Series(counts, index=pd.RangeIndex(hours, name="hour"), name="pairs")


def delta_sweep(streams: ReplayedStreams, d: float, deltas: Sequence[float]) -> pd.DataFrame:
    """:func:`month_join` at each delta: columns ``delta``, ``pairs``, ``install_s``,
    ``join_s`` (the pairs-vs-delta curve of the whole replay).

    >>> from workbench.data.replica import simulate_deployment
    >>> from workbench.data.streams import replayed_streams
    >>> rep = replayed_streams(simulate_deployment(days=0.05, seed=0), days=None)
    >>> sweep = delta_sweep(rep, 3000.0, [0.6, 0.9])
    >>> bool(sweep["pairs"].is_monotonic_decreasing), list(sweep.columns)
    (True, ['delta', 'pairs', 'install_s', 'join_s'])
    """
    rows = []
    for delta in deltas:
        run = month_join(streams, d, delta)
        rows.append(
            {
                "delta": float(delta),
                "pairs": len(run.pairs),
                "install_s": run.install_s,
                "join_s": run.join_s,
            }
        )
    return pd.DataFrame(rows)
