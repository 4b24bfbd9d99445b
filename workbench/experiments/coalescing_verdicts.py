"""Section 7 of the coalescing paper measured per mechanism, and the "Reproduced?" rows built
from the run's data (so they cannot go stale): Table 4's atomic costs on the compiled extents
(:mod:`~workbench.experiments.atomic_costs`), Figures 3 and 4 from them and from the runs
(:mod:`~workbench.experiments.cost_surfaces`), Tables 5 and 6 and Figure 5 by the model with
the measured costs (:mod:`~workbench.experiments.coalescing_selection`) and Table 6's six
queries run (:mod:`~workbench.experiments.coalescing_queries`).

Sizes follow the one switch (:func:`~workbench.experiments.scale.sized`): at ``ci`` a 3 x 3
grid of 20,000-tuple cells; at ``paper`` Section 7.2's 11 x 11 grid of 200,000-tuple cells.
Only the paper's claims are static text; every other cell of :func:`reproduced_rows` is
computed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.coalesce.cost import CostGrid
from workbench.experiments.atomic_costs import (
    Mechanism,
    cost_grid_of,
    measure_cells,
    mechanisms_available,
)
from workbench.experiments.coalescing_queries import six_query_run
from workbench.experiments.coalescing_selection import (
    table5_selection,
    table6_selection,
    what_if_array_costs,
)
from workbench.experiments.cost_surfaces import PANELS, figure_surfaces, surface_summary
from workbench.experiments.scale import sized

__all__ = [
    "PAPER_COLUMN",
    "FAST_COLUMN",
    "Section7Run",
    "reproduced_rows",
    "run_section7",
    "section7_sizes",
]

PAPER_COLUMN = "ours, paper's mechanism (array extent)"
FAST_COLUMN = "ours, fast mechanism"


def section7_sizes() -> dict[str, object]:
    """The sizes in force (module docstring): ``grid`` (cp and oop values), ``tuples`` and
    ``window`` per cell, ``batch`` (the timed batches' sizes), ``six_tuples`` (each query's
    stream in the six-query run).

    >>> section7_sizes()["tuples"] in (20_000, 200_000)
    True
    """
    return sized(
        ci={
            "grid": [0.0, 0.5, 1.0],
            "tuples": 20_000,
            "window": 200,
            "batch": (16, 128),
            "six_tuples": 5000,
        },
        paper={
            "grid": [round(0.1 * i, 1) for i in range(11)],
            "tuples": 200_000,
            "window": 1000,
            "batch": (16, 256),
            "six_tuples": 200_000,
        },
    )


@dataclass(frozen=True)
class Section7Run:
    """One mechanism's Section 7: the measured ``cells`` (Table 4 per cell), their cost
    ``grid``, the ``surfaces`` of Figures 3 and 4 and their ``summary``, ``table5`` (None
    without the deployment's cps), ``table6`` (the model with the measured costs), ``six``
    (the six-query run) and the run's ``seconds``."""

    mechanism: Mechanism
    cells: pd.DataFrame
    grid: CostGrid
    surfaces: pd.DataFrame
    summary: pd.DataFrame
    table5: pd.DataFrame | None
    table6: pd.DataFrame
    six: pd.DataFrame
    seconds: float


def run_section7(
    mechanism: Mechanism = "fast",
    cps: pd.DataFrame | None = None,
    seed: int = 0,
    progress: bool = False,
    **sizes: object,
) -> Section7Run:
    """Measure and recompute Section 7 for one ``mechanism`` (module docstring) at
    :func:`section7_sizes` (``sizes`` override them); ``cps`` are Table 5's cps on the
    deployment (:func:`~workbench.experiments.coalescing_selection.table5_cps`);
    ``progress``: tqdm bars over the cells and over the six-query cases.

    >>> run = run_section7(grid=[0.0, 1.0], tuples=1500, window=100, six_tuples=300)
    >>> run.mechanism, len(run.cells), len(run.six)
    ('fast', 4, 6)
    """
    size = {**section7_sizes(), **sizes}
    window = int(size["window"])
    rng = np.random.default_rng(seed)
    began = time.perf_counter()
    cells = measure_cells(
        rng,
        size["grid"],
        int(size["tuples"]),
        window,
        mechanism,
        progress=progress,
        batch=tuple(size["batch"]),
    )
    grid = cost_grid_of(cells)
    surfaces = figure_surfaces(cells)
    table5 = None if cps is None else table5_selection(cps, grid)
    six_tuples = int(size["six_tuples"])
    table6 = table6_selection(grid, window, k=six_tuples)
    six = six_query_run(rng, six_tuples, window, grid, mechanism, progress=progress)
    return Section7Run(
        mechanism,
        cells,
        grid,
        surfaces,
        surface_summary(surfaces),
        table5,
        table6,
        six,
        time.perf_counter() - began,
    )


def _ns(value: float) -> str:
    return "-" if not np.isfinite(value) else f"{1e9 * value:,.0f} ns"


def _mean(cells: pd.DataFrame, name: str, where: pd.Series) -> tuple[float, float]:
    """Mean of an exercised cost over the cells ``where`` holds, and its standard error."""
    part = cells.loc[where & cells[name].notna()]
    if part.empty:
        return float("nan"), float("nan")
    return float(part[name].mean()), float(np.sqrt((part[f"{name}_se"] ** 2).sum()) / len(part))


def _grows(cells: pd.DataFrame, name: str, low: pd.Series, high: pd.Series, label: str):
    a, a_se = _mean(cells, name, low)
    b, b_se = _mean(cells, name, high)
    if not (np.isfinite(a) and np.isfinite(b)):
        return None, f"C_{name} not exercised at both ends"
    holds = bool(b > a + 2 * np.hypot(a_se, b_se))
    return (
        holds,
        f"C_{name} {_ns(a)} +- {_ns(a_se)} at low {label}, {_ns(b)} +- {_ns(b_se)} at high",
    )


def _merge(run: Section7Run):
    c = run.cells
    x = c["cp"] * c["oop"]
    return _grows(c, "merge", (x <= 0.1) & (c["cp"] > 0), x >= 0.5 * x.max(), "cp x oop")


def _split(run: Section7Run):
    c = run.cells
    if c["split"].isna().all():
        expected = float((c["oop"] * (1 - c["cp"])).max())
        return None, (
            f"splitTuple never ran: split counter 0 in every cell (splits per arrival at most "
            f"{c['split_rate'].max():.3f}; Eq. 3 expects oop x (1 - cp), up to {expected:.2f})"
        )
    x = c["oop"] / c["cp"].clip(lower=0.05)
    return _grows(c, "split", x <= x.median(), x > x.median(), "oop / cp")


def _read(run: Section7Run):
    c = run.cells
    return _grows(c, "read", c["cp"] == c["cp"].min(), c["cp"] == c["cp"].max(), "cp")


def _flat(run: Section7Run):
    c, parts, holds = run.cells, [], True
    for name in ("insert", "delete"):
        values = c[name].dropna()
        if values.empty:
            continue
        low, high = float(values.min()), float(values.max())
        holds &= bool(high - low <= max(4 * float(c[f"{name}_se"].median()), 0.5 * abs(high)))
        parts.append(f"C_{name} {_ns(low)} to {_ns(high)} (se ~{_ns(c[f'{name}_se'].median())})")
    return holds, "; ".join(parts)


def _share(run: Section7Run, panel: str, source: str) -> float:
    return float(run.summary.loc[(panel, source), "eager cheaper (share)"])


_SOURCES = (("model", "model, measured costs"), ("runs", "measured runs"))
_PANELS = list(PANELS)


def _fig3a(run: Section7Run):
    shares = {label: _share(run, _PANELS[0], source) for label, source in _SOURCES}
    text = ", ".join(f"eager cheaper on {v:.0%} of the grid ({k})" for k, v in shares.items())
    return all(v == 1.0 for v in shares.values()), text


def _fig3bc(run: Section7Run):
    holds, parts = True, []
    for label, source in _SOURCES:
        shares = [_share(run, p, source) for p in _PANELS[:3]]
        corner = [
            bool(run.summary.loc[(p, source), "eager cheaper at (cp 1, oop 0)"])
            for p in _PANELS[1:3]
        ]
        holds &= shares[0] >= shares[1] >= shares[2] and all(corner)
        parts.append(
            f"{label}: shares "
            + ", ".join(f"{s:.0%}" for s in shares)
            + f", eager at (1, 0): {corner}"
        )
    return holds, "; ".join(parts)


def _fig4(run: Section7Run):
    gaps = {
        label: float(run.summary.loc[(_PANELS[3], source), "mean |eager - lazy| / lazy"])
        for label, source in _SOURCES
    }
    return all(g < 0.25 for g in gaps.values()), ", ".join(
        f"mean gap {g:.2f} ({k})" for k, g in gaps.items()
    )


def _matching(table: pd.DataFrame, column: str) -> str:
    return ", ".join(table.loc[table[column], "case"].str.replace("Case ", "")) or "none"


def _table5(run: Section7Run):
    if run.table5 is None:
        return None, "not run (no deployment cps given)"
    t = run.table5
    return bool(t["matches"].all()), f"cases matching: {_matching(t, 'matches')}"


def _fig5a(run: Section7Run):
    if run.table5 is None:
        return None, "not run (no deployment cps given)"
    t = run.table5.assign(same=run.table5["result"] == run.table5["paper result"])
    return bool(t["same"].all()), f"cases ordered as the paper: {_matching(t, 'same')}"


def _table6(run: Section7Run):
    t = run.table6
    return bool(t["matches"].all()), f"cases matching: {_matching(t, 'matches')}"


def _six(run: Section7Run):
    t = run.six
    agree = _matching(t, "modelled = measured")
    text = (
        f"measured best = paper in cases {_matching(t, 'measured = paper')}; the model's "
        f"selection = the measured best in cases {agree} (largest regret {t['regret'].max():.1%}"
        f"; the measured best beats the next assignment by {t['margin'].median():.1%}, median)"
    )
    return bool(t["measured = paper"].all()), text


def _fit_reason(run: Section7Run) -> str:
    """How well the timed batches pin Table 4's costs: their number per cell, the per-call
    cost against a batch's work, and the update costs' standard errors (medians)."""
    c = run.cells
    per_tuple = float((c["eager_update_s"] / c["tuples"]).median())
    se = float(c[[f"{n}_se" for n in ("insert", "merge", "detach", "delete")]].median().median())
    return (
        f"{run.mechanism}: {int(c['batches'].median()):,} timed batches per cell of "
        f"{int(c['tuples'].median()):,} tuples; push_batch's call costs {_ns(c['call_s'].median())}"
        f" against {_ns(per_tuple)} per tuple, so the update costs' standard error is about "
        f"{_ns(se)}; splits per arrival at most {c['split_rate'].max():.3f}"
    )


def _reason(run: Section7Run) -> str:
    """What the runs measured that decides between eager and lazy: update and scan per
    tuple (medians over the cells) and the split counter."""
    c = run.cells
    update = float((c["eager_update_s"] / c["lazy_update_s"]).median())
    scan = float((c["eager_scan_s"] / c["lazy_scan_s"]).median())
    eq4 = float((c["insert"] + c["delete"]).median())
    lazy = float((c["lazy_insert"] + c["lazy_delete"]).median())
    return (
        f"{run.mechanism}: eager / lazy update {update:.2f}, scan {scan:.2f} (medians over the "
        f"cells); Eq. 4's C_insert + C_delete {_ns(eq4)} against the lazy extent's own "
        f"{_ns(lazy)}; splits per arrival at most {c['split_rate'].max():.3f}"
    )


CLAIMS: tuple[tuple[str, Callable[[Section7Run], tuple[bool | None, str]]], ...] = (
    ("Table 4: C_merge grows with cp x oop", _merge),
    ("Table 4: C_split grows with oop / cp", _split),
    ("Table 4: C_read grows with cp (eager)", _read),
    ("Table 4: C_insert and C_delete do not vary with cp and oop", _flat),
    ("Fig. 3(a): eager cheaper everywhere at <1,1,1>", _fig3a),
    (
        "Fig. 3(b, c): the eager region shrinks toward (cp 1, oop 0) as the update weight grows",
        _fig3bc,
    ),
    ("Fig. 4: eager and lazy about equal at <0,1,1>", _fig4),
    ("Table 5: eager for high-cp queries, lazy for low-cp ones (the paper's selections)", _table5),
    ("Fig. 5(a): all lazy, all eager and optimal ordered as Table 5's Result", _fig5a),
    (
        "Table 6: eager for lower oop, lazy for higher (the paper's selections), by the model",
        _table6,
    ),
    ("Table 6 / Fig. 5(b): the six queries run and timed select as the paper", _six),
)
"""Section 7's claims (static text) and how each is read off a run."""


def _verdict(results: Mapping[str, bool | None]) -> str:
    ran = {m: h for m, h in results.items() if h is not None}
    if not ran:
        return "not measured"
    suffix = "" if "paper" in ran else " (fast mechanism only)"
    if all(ran.values()):
        return "yes" + suffix
    if not any(ran.values()):
        return "no" + suffix
    return "paper's mechanism only" if ran.get("paper") else "fast mechanism only"


def reproduced_rows(runs: Mapping[str, Section7Run]) -> pd.DataFrame:
    """The Section 7 rows of the "Reproduced?" table from one run per mechanism: the paper's
    claim, ours with the paper's mechanism, ours with the fast mechanism, the verdict, and the
    measured reason for any difference.  Without a paper-mechanism run its column says why
    (the array extent missing, when the extents refuse ``mechanism="paper"``).  The last row
    is the what-if (assumed costs), never a verdict.

    >>> run = run_section7(grid=[0.0, 1.0], tuples=1500, window=100, six_tuples=300)
    >>> rows = reproduced_rows({"fast": run})
    >>> list(rows.columns)[1:3] == [PAPER_COLUMN, FAST_COLUMN], rows.iloc[-1]["verdict"]
    (True, 'what-if, assumed costs, not evidence')
    """
    missing = (
        "not run (array extent missing)"
        if "paper" not in mechanisms_available()
        else "not run (pass a paper-mechanism run)"
    )
    rows = []
    for claim, read in CLAIMS:
        found = {m: read(run) for m, run in runs.items()}
        texts = {
            m: ("holds: " if h else "n/a: " if h is None else "does not hold: ") + text
            for m, (h, text) in found.items()
        }
        verdict = _verdict({m: h for m, (h, _) in found.items()})
        differs = verdict != "yes"
        rows.append(
            {
                "paper's claim": claim,
                PAPER_COLUMN: texts.get("paper", missing),
                FAST_COLUMN: texts.get("fast", "not run"),
                "verdict": verdict,
                "measured reason": "; ".join(
                    (_fit_reason if claim.startswith("Table 4") else _reason)(r)
                    for r in runs.values()
                )
                if differs
                else "",
            }
        )
    what_if = table6_selection(what_if_array_costs)
    rows.append(
        {
            "paper's claim": "Table 6 with costs shaped as Section 7.2 describes the array",
            PAPER_COLUMN: "what-if, assumed costs, not evidence",
            FAST_COLUMN: "what-if, assumed costs, not evidence",
            "verdict": "what-if, assumed costs, not evidence",
            "measured reason": f"hand-picked costs match the paper in cases "
            f"{_matching(what_if, 'matches')}: they show what the model needs, not what runs",
        }
    )
    return pd.DataFrame(rows)
