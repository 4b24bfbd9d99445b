"""The brute-force oracle: join two finite streams by exact probability, pair by pair."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workbench.events import Events
from workbench.operators.base import StreamSpec
from workbench.probability import ge_batch

__all__ = ["brute_force_join", "on_time"]

_CHUNK = 20_000


def on_time(events: Events, max_delay: Sequence[float]) -> np.ndarray:
    """Which events arrive within their stream's D (PTJoin Definition 6)."""
    delay = np.asarray(max_delay, dtype=np.float64)[events.stream]
    return events.arrival <= events.t_det + delay


def brute_force_join(
    events: Events,
    streams: tuple[StreamSpec, StreamSpec],
    d: float | np.ndarray,
    threshold: float | np.ndarray,
    accepted: np.ndarray | None = None,
) -> np.ndarray:
    """Every pair (a_id, b_id) of accepted events with ``P(|Xa - Xb| <= d) >= threshold``.

    ``d`` and ``threshold`` may be per-event arrays (aligned with ``events``): a pair is then
    judged by the values in force when its later event arrived.  ``accepted`` defaults to the
    on-time events.  Returns an ``(n, 2)`` array sorted by (a_id, b_id).

    >>> from workbench.timestamps import HistogramTimestamp, TemplateSet
    >>> spec = StreamSpec(TemplateSet("S", (HistogramTimestamp.uniform(0, 10),)), max_delay=5)
    >>> ev = Events(np.array([0, 1, 1]), np.array([1, 7, 8]), np.zeros(3, int),
    ...             np.array([100., 110., 300.]), np.array([101., 112., 301.]))
    >>> brute_force_join(ev, (spec, spec), d=20, threshold=0.9).tolist()
    [[1, 7]]
    """
    if accepted is None:
        accepted = on_time(events, [s.max_delay for s in streams])
    rows = np.arange(len(events))
    ia = rows[(events.stream == 0) & accepted]
    ib = rows[(events.stream == 1) & accepted]
    pa, pb = (np.repeat(ia, ib.size), np.tile(ib, ia.size))
    later = np.maximum(pa, pb)
    d_pair = np.broadcast_to(np.asarray(d, dtype=np.float64), (len(events),))[later]
    t_pair = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (len(events),))[later]
    packed = []
    for s in (0, 1):
        edges, probs = streams[s].templates.packed()
        packed.append((edges - streams[s].templates.max_times[:, None], probs))
    keep = np.zeros(pa.size, dtype=bool)
    for lo in range(0, pa.size, _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        a, b = pa[sl], pb[sl]
        ea = packed[0][0][events.template[a]] + events.t_det[a][:, None]
        eb = packed[1][0][events.template[b]] + events.t_det[b][:, None]
        qa, qb = packed[0][1][events.template[a]], packed[1][1][events.template[b]]
        dd = d_pair[sl][:, None]
        band = ge_batch(eb + dd, qb, ea, qa) + ge_batch(ea + dd, qa, eb, qb) - 1.0
        keep[sl] = band >= t_pair[sl]
    pairs = np.stack((events.id[pa[keep]], events.id[pb[keep]]), axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))] if pairs.size else pairs.reshape(0, 2)
