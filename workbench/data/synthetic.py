"""Synthetic two-stream event logs with network delay and out-of-order arrival."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workbench.events import Events

__all__ = ["coalescing_stream", "synthetic_events"]


def synthetic_events(
    rng: np.random.Generator,
    n_per_stream: int,
    n_templates: Sequence[int],
    mean_interarrival: float = 10.0,
    max_delay: Sequence[float] = (500.0, 500.0),
    late_fraction: float = 0.0,
    start: float = 0.0,
) -> Events:
    """Poisson detections per stream, random templates, delays uniform in ``[0, D]``.

    A ``late_fraction`` of events is delayed beyond D instead (they must be reported late).
    Rows come in arrival order, so events overtake each other within D.

    >>> ev = synthetic_events(np.random.default_rng(0), 100, (3, 4), max_delay=(50, 20))
    >>> len(ev), bool(np.all(np.diff(ev.arrival) >= 0)), bool(ev.delays().max() <= 50)
    (200, True, True)
    """
    if n_per_stream < 0:
        raise ValueError(f"n_per_stream = {n_per_stream!r} must be non-negative")
    if not mean_interarrival > 0:
        raise ValueError(f"mean_interarrival = {mean_interarrival!r} must be positive")
    if not 0 <= late_fraction <= 1:
        raise ValueError(f"late_fraction = {late_fraction!r} must lie in [0, 1]")
    cols: list[list[np.ndarray]] = [[], [], [], [], []]
    for s in (0, 1):
        if not n_templates[s] >= 1:
            raise ValueError(f"n_templates[{s}] = {n_templates[s]!r} must be at least 1")
        delay_max = float(max_delay[s])
        t_det = start + np.cumsum(rng.exponential(mean_interarrival, n_per_stream))
        delay = rng.uniform(0.0, delay_max, n_per_stream)
        late = rng.random(n_per_stream) < late_fraction
        delay[late] = delay_max + rng.uniform(1.0, delay_max + 10.0, int(late.sum()))
        for col, values in zip(
            cols,
            (
                np.full(n_per_stream, s),
                np.arange(n_per_stream),
                rng.integers(0, n_templates[s], n_per_stream),
                t_det,
                t_det + delay,
            ),
            strict=True,
        ):
            col.append(values)
    merged = [np.concatenate(c) for c in cols]
    order = np.argsort(merged[4], kind="stable")
    return Events(*(c[order] for c in merged))


def coalescing_stream(
    rng: np.random.Generator,
    n: int = 200_000,
    cp: float = 0.5,
    oop: float = 0.1,
    groups: Sequence[int] = (3, 5, 7),
    max_displacement: int = 8,
) -> dict[str, np.ndarray]:
    """The coalescing paper's synthetic stream (Section 7.1), in arrival order.

    Columns: ``ts`` (unique, increasing in time), time-varying ``a1``..``a3`` and
    time-invariant ``g1``..``g3`` with ``groups`` groups.  Each a_j repeats the previous value
    of the tuple's g1-group with probability ``cp`` (else draws a fresh value from a large
    range), so consecutive tuples of a group coalesce with probability ``cp``.  With
    probability ``oop`` a tuple arrives late, behind up to ``max_displacement`` later tuples.

    >>> s = coalescing_stream(np.random.default_rng(0), n=1000, cp=1.0, oop=0.0)
    >>> bool(np.all(np.diff(s["ts"]) > 0)), len(np.unique(s["a1"])) <= 3
    (True, True)
    """
    if not 0 <= cp <= 1 or not 0 <= oop <= 1:
        raise ValueError(f"cp = {cp!r} and oop = {oop!r} must lie in [0, 1]")
    ts = np.cumsum(rng.uniform(0.5, 1.5, n))
    g = [rng.integers(0, k, n) for k in groups]
    keep = rng.random((3, n)) < cp
    fresh = rng.integers(0, 1 << 30, (3, n))
    values = np.empty((3, n), dtype=np.int64)
    last: dict[int, np.ndarray] = {}
    g1 = g[0]
    for i in range(n):  # a sequential recurrence per group
        prev = last.get(int(g1[i]))
        col = fresh[:, i] if prev is None else np.where(keep[:, i], prev, fresh[:, i])
        values[:, i] = col
        last[int(g1[i])] = col
    late = np.flatnonzero(rng.random(n) < oop)
    position = np.arange(n, dtype=np.float64)
    position[late] += rng.integers(1, max_displacement + 1, late.size) + 0.5
    order = np.argsort(position, kind="stable")
    out = {"ts": ts, "a1": values[0], "a2": values[1], "a3": values[2]}
    out.update({f"g{j + 1}": col for j, col in enumerate(g)})
    return {name: col[order] for name, col in out.items()}
