"""The cost surfaces of Figures 3 and 4 (coalescing paper, Section 7.2) from measured runs,
beside the model's.

Three sources per panel (weights :data:`PANELS`):

- ``model, constant costs``: Eq. 1-10 with one set of atomic costs (Table 4 as constants);
- ``model, measured costs``: Eq. 1-10 with Table 4's costs measured per (cp, oop) cell
  (:func:`~workbench.experiments.atomic_costs.cost_grid_of`);
- ``measured runs``: the runs' own memory, update and scan (:func:`measured_surface`), as the
  paper drew its figures ("the actual values measured by running the algorithms").
"""

from __future__ import annotations

import pandas as pd

from workbench.coalesce.cost import TIMESTAMP_BYTES, TUPLE_BYTES, Atomic, Costs, Weights
from workbench.experiments.atomic_costs import cost_grid_of
from workbench.experiments.coalescing import cost_surface

__all__ = ["PANELS", "SOURCES", "figure_surfaces", "measured_surface", "surface_summary"]

PANELS = {
    "3(a) <1,1,1>": Weights(1, 1, 1),
    "3(b) <1,50,1>": Weights(1, 50, 1),
    "3(c) <1,100,1>": Weights(1, 100, 1),
    "4 <0,1,1>": Weights(0, 1, 1),
}
"""The weights <lambda_mu, lambda_nu, lambda_sigma> of the panels of Figures 3 and 4."""
SOURCES = ("model, constant costs", "model, measured costs", "measured runs")
"""Where a surface's costs come from (module docstring)."""


def measured_surface(cells: pd.DataFrame, weights: Weights) -> pd.DataFrame:
    """Weighted eager and lazy cost of each measured cell (Eq. 9-10 over the runs' own
    costs): columns ``oop``, ``cp``, ``eager``, ``lazy``.

    Memory is Eq. 1-2's bytes of what the run stores (the eager extent's coalesced tuples and
    the timestamps in their vectors; the lazy extent's raw tuples), update the seconds of all
    pushes, scan the seconds of one scan of the final window.  Each item is normalised to
    maximum 1.0 over the grid and both schemes (Section 7.2), where the model divides by
    M_max, U_max and S_max of Section 6.2.

    >>> import numpy as np
    >>> from workbench.experiments.atomic_costs import measure_cells
    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=300, window=100)
    >>> s = measured_surface(cells, Weights(1, 0, 0))  # memory only: eager stores less
    >>> s["lazy"].tolist(), bool((s["eager"] <= s["lazy"]).all())
    ([1.0, 1.0, 1.0, 1.0], True)
    """
    r_eager, r_lazy = TUPLE_BYTES
    stored, raw = cells["eager_stored"], cells["window_tuples"]
    memory = stored * r_eager + (raw - stored) * TIMESTAMP_BYTES, raw * r_lazy
    update = cells["eager_update_s"], cells["lazy_update_s"]
    scan = cells["eager_scan_s"], cells["lazy_scan_s"]
    items = (memory, update, scan)
    maxima = [max(eager.max(), lazy.max()) or 1.0 for eager, lazy in items]
    schemes = {}
    for i, name in enumerate(("eager", "lazy")):
        cost = Costs(*(item[i] / top for item, top in zip(items, maxima, strict=True)))
        schemes[name] = weights.total(cost)
    return pd.DataFrame({"oop": cells["oop"], "cp": cells["cp"], **schemes}).reset_index(drop=True)


def figure_surfaces(
    cells: pd.DataFrame, constant: Atomic, k: int | None = None, w: int | None = None
) -> pd.DataFrame:
    """Every panel of Figures 3 and 4 (:data:`PANELS`) from each source (:data:`SOURCES`)
    over the cells' (cp, oop) grid: columns ``panel``, ``source``, ``oop``, ``cp``,
    ``eager``, ``lazy``.  The model takes the runs' k (tuples pushed) and w (window) unless
    given.

    >>> import numpy as np
    >>> from workbench.experiments.atomic_costs import measure_cells
    >>> from workbench.experiments.coalescing import PAPER_LIKE_COSTS
    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=300, window=100)
    >>> s = figure_surfaces(cells, PAPER_LIKE_COSTS)
    >>> len(s), s.groupby(["panel", "source"]).size().unique().tolist()
    (48, [4])
    """
    grid = sorted(cells["cp"].unique())
    w = int(cells["window_tuples"].iloc[0]) if w is None else w
    k = int(cells["tuples"].iloc[0]) if k is None else k
    functions = {SOURCES[0]: constant, SOURCES[1]: cost_grid_of(cells)}
    parts = []
    for panel, weights in PANELS.items():
        for source, atomic in functions.items():
            surface = cost_surface(atomic, weights, grid, k, w)
            parts.append(surface.assign(panel=panel, source=source))
        parts.append(measured_surface(cells, weights).assign(panel=panel, source=SOURCES[2]))
    columns = ["panel", "source", "oop", "cp", "eager", "lazy"]
    return pd.concat(parts, ignore_index=True)[columns]


def surface_summary(surfaces: pd.DataFrame) -> pd.DataFrame:
    """Per panel and source, what Section 7.2 reads off the figures: the share of the grid
    where eager is cheaper (3(a): all of it), whether eager is cheaper at (cp 1, oop 0) (its
    best corner) and at (cp 0, oop 1) (its worst), and the mean gap |eager - lazy| / lazy
    (Figure 4: small).

    >>> grid = pd.DataFrame({"panel": "p", "source": "s", "oop": [0.0, 0.0, 1.0, 1.0],
    ...                      "cp": [0.0, 1.0, 0.0, 1.0], "eager": [1.0, 1.0, 3.0, 1.0],
    ...                      "lazy": [2.0, 2.0, 2.0, 2.0]})
    >>> surface_summary(grid).iloc[0].to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'eager cheaper (share)': 0.75, 'eager cheaper at (cp 1, oop 0)': True,
     'eager cheaper at (cp 0, oop 1)': False, 'mean |eager - lazy| / lazy': 0.5}
    """

    def summary(s: pd.DataFrame) -> pd.Series:
        wins = s["eager"] <= s["lazy"]
        best = wins[(s["cp"] == s["cp"].max()) & (s["oop"] == s["oop"].min())]
        worst = wins[(s["cp"] == s["cp"].min()) & (s["oop"] == s["oop"].max())]
        return pd.Series(
            {
                "eager cheaper (share)": float(wins.mean()),
                "eager cheaper at (cp 1, oop 0)": bool(best.all()),
                "eager cheaper at (cp 0, oop 1)": bool(worst.all()),
                "mean |eager - lazy| / lazy": float(
                    ((s["eager"] - s["lazy"]).abs() / s["lazy"]).mean()
                ),
            }
        )

    groups = surfaces.groupby(["panel", "source"], sort=False)[["oop", "cp", "eager", "lazy"]]
    return groups.apply(summary)
