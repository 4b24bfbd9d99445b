"""What eager and lazy window extents allocate (coalescing paper, Section 3.2's memory trade-off
and Section 6.1.1's memory costs, Eqs. 1-2): bytes in all and per raw tuple of the window,
measured on the extents themselves (``allocated_bytes``: the room of their arrays and the Python
objects they refer to, what ``tracemalloc`` sees them take) as the coalescing probability
varies."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, LazyExtent, Readings, Window
from workbench.experiments.coalescing_stream import coalescing_rows

__all__ = ["allocated_bytes_by_cp"]


def allocated_bytes_by_cp(
    rng: np.random.Generator,
    cps: Sequence[float],
    tuples: int = 20_000,
    window: Window | None = None,
    equivalence: Equivalence | None = None,
    oop: float = 0.1,
) -> pd.DataFrame:
    """Push a synthetic stream (Section 7.1) of ``tuples`` tuples at each coalescing
    probability into an eager and a lazy extent (a window of 5,000 tuples and equality by
    default), and measure what each then allocates: one row per cp with the ``cp`` the eager
    extent measured, its ``stored`` coalesced tuples, the ``window``'s raw tuples,
    ``eager_total`` and ``lazy_total`` (bytes), ``eager_bytes`` and ``lazy_bytes`` per raw
    tuple, and ``eager_over_lazy``.

    >>> rng = np.random.default_rng(0)
    >>> m = allocated_bytes_by_cp(rng, [0.0, 0.95], 3000, Window("tuples", 1000))
    >>> bool(m["eager_over_lazy"].iloc[0] > 1 > m["eager_over_lazy"].iloc[1])
    True
    """
    window, equivalence = window or Window("tuples", 5000), equivalence or Equivalence()
    rows = []
    for cp in cps:
        ts, value, group = zip(*coalescing_rows(rng, tuples, cp=cp, oop=oop), strict=True)
        batch = Readings(np.array(ts), np.array(value), np.array(group))
        eager, lazy = EagerExtent(window, equivalence), LazyExtent(window, equivalence)
        eager.push_batch(batch), lazy.push_batch(batch)
        rows.append(
            {
                "target_cp": cp,
                "cp": eager.counters.cp,
                "stored": eager.stored,
                "window": len(lazy),
                "eager_total": eager.allocated_bytes(),
                "lazy_total": lazy.allocated_bytes(),
            }
        )
    table = pd.DataFrame(rows)
    n = table["window"].clip(lower=1)
    table["eager_bytes"], table["lazy_bytes"] = table["eager_total"] / n, table["lazy_total"] / n
    table["eager_over_lazy"] = table["eager_total"] / table["lazy_total"]
    return table
