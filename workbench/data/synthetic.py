"""Synthetic two-stream event logs with network delay and out-of-order arrival."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workbench.events import Events

__all__ = ["synthetic_events"]


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
