"""What eager and lazy window extents hold (coalescing paper, Section 6's memory cost, and
Section 3.2's trade-off): bytes per raw tuple of the window, measured on the extents
themselves (``held_bytes``) as the coalescing probability varies."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Readings, Window
from workbench.experiments.workloads import coalescing_rows

__all__ = ["held_bytes_by_cp"]


def held_bytes_by_cp(
    rng: np.random.Generator,
    cps: Sequence[float],
    tuples: int = 20_000,
    window: Window | None = None,
    equivalence: Equivalence | None = None,
    oop: float = 0.1,
) -> pd.DataFrame:
    """Push a synthetic stream (Section 7.1) of ``tuples`` tuples at each coalescing
    probability into an eager and a lazy extent (a window of 1,000 tuples and equality by
    default), and measure what each then holds: one row
    per cp with the ``cp`` the eager extent measured, its ``stored`` coalesced tuples, the
    ``window``'s raw tuples, ``eager_bytes`` and ``lazy_bytes`` per raw tuple, and
    ``eager_over_lazy``.

    >>> m = held_bytes_by_cp(np.random.default_rng(0), [0.0, 0.95], tuples=3000)
    >>> bool(m["eager_over_lazy"].iloc[0] > 1 > m["eager_over_lazy"].iloc[1])
    True
    """
    window, equivalence = window or Window("tuples", 1000), equivalence or Equivalence()
    rows = []
    for cp in cps:
        ts, value, group = zip(*coalescing_rows(rng, tuples, cp=cp, oop=oop), strict=True)
        batch = Readings(np.array(ts), np.array(value), np.array(group))
        eager, lazy = EagerExtent(window, equivalence), LazyExtent(window, equivalence)
        eager.push_batch(batch), lazy.push_batch(batch)
        n = max(len(lazy), 1)
        rows.append(
            {
                "target_cp": cp,
                "cp": eager.counters.cp,
                "stored": eager.stored,
                "window": len(lazy),
                "eager_bytes": eager.held_bytes() / n,
                "lazy_bytes": lazy.held_bytes() / n,
            }
        )
    table = pd.DataFrame(rows)
    table["eager_over_lazy"] = table["eager_bytes"] / table["lazy_bytes"]
    return table
