"""The cost surfaces of Figures 3 and 4 (coalescing paper, Section 7.2) from measured runs,
beside the model's.

Three sources per panel (weights :data:`PANELS`), all normalised by Section 6.2's maxima:

- ``model, measured costs``: Eq. 1-10 with Table 4's costs measured per (cp, oop) cell on
  the compiled extents (:func:`~workbench.experiments.atomic_costs.cost_grid_of`);
- ``measured runs``: the runs' own memory, update and scan (:func:`measured_surface`), as the
  paper drew its figures ("the actual values measured by running the algorithms");
- ``what-if, assumed costs``: Eq. 1-10 with one set of constant atomic costs given by the
  caller (e.g. :data:`~workbench.experiments.coalescing.PAPER_LIKE_COSTS`): assumed, not
  measured, so never evidence for or against the paper.
"""

from __future__ import annotations

import pandas as pd

from workbench.coalesce.cost import TIMESTAMP_BYTES, TUPLE_BYTES, Atomic, Costs, Weights
from workbench.experiments.atomic_costs import cost_grid_of
from workbench.experiments.coalescing import cost_surface

__all__ = [
    "PANELS",
    "SOURCES",
    "figure_surfaces",
    "measured_maxima",
    "measured_surface",
    "surface_summary",
]

PANELS = {
    "3(a) <1,1,1>": Weights(1, 1, 1),
    "3(b) <1,50,1>": Weights(1, 50, 1),
    "3(c) <1,100,1>": Weights(1, 100, 1),
    "4 <0,1,1>": Weights(0, 1, 1),
}
"""The weights <lambda_mu, lambda_nu, lambda_sigma> of the panels of Figures 3 and 4."""
SOURCES = ("model, measured costs", "measured runs", "what-if, assumed costs")
"""Where a surface's costs come from (module docstring)."""


def measured_maxima(cells: pd.DataFrame) -> pd.DataFrame:
    """Section 6.2's M_max, U_max and S_max measured per oop (columns ``m_max``, ``u_max``,
    ``s_max``, indexed by ``oop``): the lazy extent's bytes (its raw tuples, stored
    uncoalesced), the eager extent's update seconds when all tuples coalesce (the run at
    cp = 1 with that oop) and the lazy extent's scan seconds when all tuples coalesce during
    the scan (the same run).  The grid must hold cp = 1.

    >>> cells = pd.DataFrame({"oop": [0.0, 0.0], "cp": [0.0, 1.0], "window_tuples": [10, 10],
    ...                       "eager_update_s": [1.0, 3.0], "lazy_scan_s": [2.0, 4.0]})
    >>> measured_maxima(cells).loc[0.0].tolist()
    [320.0, 3.0, 4.0]
    """
    full = cells[cells["cp"] == 1.0].set_index("oop")
    missing = sorted(set(cells["oop"]) - set(full.index))
    if missing:
        raise ValueError(f"cells hold no cp = 1 run at oop {missing}: Section 6.2 needs it")
    r_lazy = TUPLE_BYTES[1]
    by_oop = cells.groupby("oop")["window_tuples"].max() * r_lazy
    return pd.DataFrame(
        {
            "m_max": by_oop.astype(float),
            "u_max": full["eager_update_s"].astype(float),
            "s_max": full["lazy_scan_s"].astype(float),
        }
    )


def measured_surface(cells: pd.DataFrame, weights: Weights) -> pd.DataFrame:
    """Weighted eager and lazy cost of each measured cell (Eq. 9-10 over the runs' own
    costs): columns ``oop``, ``cp``, ``eager``, ``lazy``.

    Memory is Eq. 1-2's bytes of what the run stores (the eager extent's coalesced tuples and
    the timestamps in their vectors; the lazy extent's raw tuples), update the seconds of the
    pushes, scan the seconds of a scan of the window, each divided by Section 6.2's maximum
    measured at the cell's oop (:func:`measured_maxima`), as the model divides by its own.

    >>> import numpy as np
    >>> from workbench.experiments.atomic_costs import measure_cells
    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=2000, window=100,
    ...                       batch=(8, 64))
    >>> s = measured_surface(cells, Weights(1, 0, 0))  # memory only: eager stores less
    >>> s["lazy"].tolist(), bool((s["eager"] <= s["lazy"]).all())
    ([1.0, 1.0, 1.0, 1.0], True)
    """
    r_eager, r_lazy = TUPLE_BYTES
    top = measured_maxima(cells).loc[cells["oop"]].reset_index(drop=True)
    cells = cells.reset_index(drop=True)
    stored, raw = cells["eager_stored"], cells["window_tuples"]
    memory = stored * r_eager + (raw - stored) * TIMESTAMP_BYTES, raw * r_lazy
    update = cells["eager_update_s"], cells["lazy_update_s"]
    scan = cells["eager_scan_s"], cells["lazy_scan_s"]
    maxima = (top["m_max"], top["u_max"], top["s_max"])
    schemes = {}
    for i, name in enumerate(("eager", "lazy")):
        items = (memory[i], update[i], scan[i])
        cost = Costs(*(item / m for item, m in zip(items, maxima, strict=True)))
        schemes[name] = weights.total(cost)
    return pd.DataFrame({"oop": cells["oop"], "cp": cells["cp"], **schemes})


def figure_surfaces(
    cells: pd.DataFrame,
    what_if: Atomic | None = None,
    k: int | None = None,
    w: int | None = None,
) -> pd.DataFrame:
    """Every panel of Figures 3 and 4 (:data:`PANELS`) from each source (:data:`SOURCES`;
    the what-if only when ``what_if`` costs are given) over the cells' (cp, oop) grid, one
    mechanism's cells: columns ``panel``, ``source``, ``oop``, ``cp``, ``eager``, ``lazy``.
    The model takes the runs' k (tuples timed) and w (window) unless given.

    >>> import numpy as np
    >>> from workbench.experiments.atomic_costs import measure_cells
    >>> from workbench.experiments.coalescing import PAPER_LIKE_COSTS
    >>> cells = measure_cells(np.random.default_rng(0), [0.0, 1.0], tuples=2000, window=100,
    ...                       batch=(8, 64))
    >>> s = figure_surfaces(cells, PAPER_LIKE_COSTS)
    >>> len(s), s.groupby(["panel", "source"]).size().unique().tolist()
    (48, [4])
    """
    grid = sorted(cells["cp"].unique())
    w = int(cells["window_tuples"].iloc[0]) if w is None else w
    k = int(cells["tuples"].iloc[0]) if k is None else k
    functions = {SOURCES[0]: cost_grid_of(cells)}
    if what_if is not None:
        functions[SOURCES[2]] = what_if
    parts = []
    for panel, weights in PANELS.items():
        for source, atomic in functions.items():
            surface = cost_surface(atomic, weights, grid, k, w)
            parts.append(surface.assign(panel=panel, source=source))
        parts.append(measured_surface(cells, weights).assign(panel=panel, source=SOURCES[1]))
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
