"""The W-join "Reproduced?" table (W-join Sections 3-5): per headline result, the paper's
claim, ours with the paper's mechanism and with the fast one (whether the claim held, and the
figures), the verdict and the measured reason, computed from the runs of
:func:`~workbench.experiments.wjoin_paper.paper_runs`; :func:`markdown_table` prints any frame
as Markdown.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.experiments.wjoin_rates import MECHANISMS, few_over_bew
from workbench.experiments.wjoin_settings import PaperRuns, PaperSettings
from workbench.experiments.workloads import WJoinWorkload

__all__ = ["VERDICT_COLUMNS", "markdown_table", "verdicts"]

VERDICT_COLUMNS = (
    "result",
    "the paper",
    "ours, paper's mechanism",
    "ours, fast mechanism",
    "verdict",
    "measured reason",
)


def _verdict(holds: dict[str, bool]) -> str:
    """The row's verdict from whether the claim held under each mechanism."""
    if all(holds.values()):
        return "reproduced"
    if not any(holds.values()):
        return "not reproduced"
    which = "paper's" if holds["paper"] else "fast"
    return f"reproduced with the {which} mechanism only"


def _row(result: str, claim: str, cells: dict[str, tuple[bool, str]], reason: str) -> dict:
    """One table row: each mechanism's cell ``(holds, figures)`` and the measured reason."""
    holds = {k: h for k, (h, _) in cells.items()}

    def cell(k: str) -> str:
        return f"{'yes' if cells[k][0] else 'no'}: {cells[k][1]}"

    return dict(
        zip(
            VERDICT_COLUMNS,
            (result, claim, cell("paper"), cell("fast"), _verdict(holds), reason),
            strict=True,
        )
    )


def _counted(runs: pd.DataFrame) -> bool:
    """Whether the operators counted the tuples they visited (0 where they do not)."""
    return bool((runs["visited_inside"] + runs["visited_outside"]).gt(0).any())


def _work(runs: pd.DataFrame, case: str, mechanism: str) -> str:
    """BEW's and FEW's work per tuple at the probe rate, from the counters."""
    r = runs[(runs["case"] == case) & (runs["mechanism"] == mechanism)].set_index("algorithm")
    parts = [
        f"{a[:3]} {r.loc[a, 'comparisons']:.1f} comparisons"
        + (f", {r.loc[a, 'visited_outside']:.1f} visited outside" if _counted(runs) else "")
        + f", peak {r.loc[a, 'peak_buffered']:,.0f} buffered"
        for a in r.index
    ]
    results = r["results_per_tuple"].iloc[0]  # the same for all: the same results
    return f"{mechanism}: " + "; ".join(parts) + f" ({results:.2g} results per tuple)"


def _ratios(mine: pd.DataFrame) -> tuple[pd.Series, str]:
    """FEW / BEW per (case, mechanism): of the maximum sustainable rates where every join
    saturated within the grid, else of the steady-state capacities at the top rate kept up
    with (``top_capacity``); and which."""
    value = "max_sustainable" if mine["saturated"].all() else "top_capacity"
    ratio = few_over_bew(mine, value=value).set_index(["case", "mechanism"])["few_over_bew"]
    return ratio, value


def _found(mine: pd.DataFrame, s: PaperSettings) -> str:
    """How the maximum sustainable rates of Figure 6's joins were found: the grid's
    bisection, or fixed-point probes past a grid every join kept up with."""
    if not mine["beyond_runs"].gt(0).any():
        # each rate is known within one bisection bracket: a ratio of 1 is a tie at this grid
        return f"rates found within {2 ** (1 / 2**s.refine):.2f}x (a FEW / BEW of 1: a tie)"
    grid = s.max_rate(_workload(mine, s))  # where runs of k windows reach max_run_tuples
    above = (mine["not_kept"] / mine["max_sustainable"]).dropna()
    kept_grid = mine["max_sustainable"] <= grid
    text = (
        f"every join kept up with the grid (rates up to {grid:,.0f}/s) and was then run at the "
        "capacity "
        f"it measured there, then at the capacity that run measured (runs of "
        f"{s.beyond_windows:g} windows): each figure is the highest rate the join was run at "
        "and kept up with"
    )
    if len(above):
        text += (
            f", the next rate run and not kept up with {above.min():.2f}-{above.max():.2f}x "
            "above it"
        )
    if kept_grid.any():
        text += f"; {int(kept_grid.sum())} join(s) kept up with none of its probes: the grid's top"
    if mine["not_kept"].isna().any():
        text += f"; {int(mine['not_kept'].isna().sum())} join(s) kept up with every probe"
    return text


def _workload(mine: pd.DataFrame, s: PaperSettings) -> WJoinWorkload:
    """The workload of Figure 6's ``mine`` cases (hash or nested loop)."""
    impl = mine["implementation"].iloc[0]
    return s.workload(s.hash_window_ms if impl == "hash" else s.nested_window_ms)


def _figure6_row(runs: pd.DataFrame, impl: str, fig: str, s: PaperSettings) -> dict:
    probe = s.probe_rate
    mine = runs[runs["implementation"] == impl]
    ratio, value = _ratios(mine)
    ways = sorted(mine["ways"].unique())
    cells = {}
    for k in MECHANISMS:
        r = [ratio[(f"{m}-way {impl}", k)] for m in ways]
        holds = all(x >= 1.0 for x in r) and any(x > 1.0 for x in r)
        cells[k] = (
            holds,
            "FEW / BEW " + ", ".join(f"{m}-way {x:.2f}" for m, x in zip(ways, r, strict=True)),
        )
    middle = f"{ways[len(ways) // 2]}-way {impl}"
    lead = "per tuple at " + f"{probe:,.0f}/s, {middle}: "
    reason = lead + "; ".join(_work(mine, middle, k) for k in MECHANISMS)
    covered = mine["windows_at_max"].min()
    reason += f"; runs at the top rates covered {covered:.2g} windows or more"
    if value == "max_sustainable":
        reason += "; " + _found(mine, s)
    else:
        top = mine["max_sustainable"].max()
        probed = " and every probe past it" if mine["beyond_runs"].gt(0).any() else ""
        reason += (
            f"; {int((~mine['saturated']).sum())} join(s) kept up with the whole grid{probed} "
            f"(rates run up to {top:,.0f}/s): FEW / BEW of the steady-state capacities at the "
            "top rate each was run at"
        )
    claim = (
        f"FEW's maximum throughput above BEW's for 2- to 5-way joins ({impl}); the gap "
        "narrows as streams are added"
    )
    return _row(f"Figure 6({fig}), {impl}", claim, cells, reason)


def _figure4_row(runs: pd.DataFrame, probe: float) -> dict:
    unequal = runs[runs["form"] == "unequal rates"]["case"].iloc[0]
    equal = runs[runs["form"] == "equal rates"]["case"].iloc[0]
    counted = _counted(runs)
    measure = "visited_outside" if counted else "comparisons"
    cells = {}
    for k in MECHANISMS:
        r = runs[runs["mechanism"] == k].set_index(["case", "algorithm"])[measure]
        bew_u, few_u, bew_e = (
            r[(unequal, "BEWJoin")],
            r[(unequal, "FEWJoin")],
            r[(equal, "BEWJoin")],
        )
        what = "visited outside" if counted else "comparisons"
        cells[k] = (
            bew_u > few_u and bew_u > bew_e,
            f"{what} per tuple: BEW {bew_u:.1f} (equal rates {bew_e:.1f}), FEW {few_u:.1f}",
        )
    ratio, value = _ratios(runs)
    reason = (
        ("" if counted else "visited-outside counters are 0 in this build: comparisons used; ")
        + f"at {probe:,.0f}/s, unequal: "
        + "; ".join(_work(runs, unequal, k) for k in MECHANISMS)
        + f"; FEW / BEW {value.replace('_', ' ')} "
        + ", ".join(f"{k} {ratio[(unequal, k)]:.2f}" for k in MECHANISMS)
    )
    claim = (
        "with some streams slower, BEW iterates over buffered tuples outside the window "
        "that cannot join; FEW does not"
    )
    return _row("Figure 4, unequal rates", claim, cells, reason)


def _few_parts(repeats: pd.DataFrame) -> str:
    """The paper FEW's response at the repeated rates, over the seeds run: its mean, the
    seeds' range and its parts (held, queued, served), then what moved between the lowest
    and highest rate and whether the seeds' ranges overlap."""
    parts = ("response_ms", "wait_ms", "queue_ms", "service_ms", "held_share", "max_call_ms")
    mean = repeats.groupby("rate")[list(parts)].mean()
    spread = repeats.groupby("rate")["response_ms"].agg(["min", "max", "count"])
    text = [
        f"{rate:,.0f}/s {r.response_ms:.2f} ms (seeds {spread.loc[rate, 'min']:.2f}-"
        f"{spread.loc[rate, 'max']:.2f}, {spread.loc[rate, 'count']}) = held {r.wait_ms:.2f} + "
        f"queued {r.queue_ms:.2f} + served {r.service_ms:.2f}, {r.held_share:.0%} of results "
        f"held, longest call {r.max_call_ms:.1f} ms"
        for rate, r in mean.iterrows()
    ]
    lo, hi = mean.index[0], mean.index[-1]
    move = mean.loc[hi] - mean.loc[lo]
    overlap = spread.loc[lo, "max"] >= spread.loc[hi, "min"]
    return (
        "paper FEW, mean over seeds: "
        + "; ".join(text)
        + f"; from {lo:,.0f} to {hi:,.0f}/s the response moves {move.response_ms:+.2f} ms: held "
        f"{move.wait_ms:+.2f}, queued {move.queue_ms:+.2f}, served {move.service_ms:+.2f}"
        + ("; the seeds' ranges overlap" if overlap else "; the seeds' ranges do not overlap")
    )


def _figure7_rows(response: pd.DataFrame, repeats: pd.DataFrame, window_ms: float) -> list[dict]:
    pivot = {
        k: response[response["mechanism"] == k].pivot(
            index="rate", columns="algorithm", values=["response_ms", "capacity"]
        )
        for k in MECHANISMS
    }
    low: dict[str, tuple[bool, str]] = {}
    cross: dict[str, tuple[bool, str]] = {}
    falls: dict[str, tuple[bool, str]] = {}
    reasons = []
    for k, p in pivot.items():
        rt, cap = p["response_ms"], p["capacity"]
        first = rt.index[0]
        low[k] = (
            rt.loc[first, "BEWJoin"] < rt.loc[first, "FEWJoin"],
            f"{rt.loc[first, 'BEWJoin']:,.2f} vs {rt.loc[first, 'FEWJoin']:,.2f} ms "
            f"at {first:,.0f}/s",
        )
        over = rt.index[rt["BEWJoin"] >= rt["FEWJoin"]]
        if len(over):
            at = over[0]
            load = at / cap.loc[at, "BEWJoin"]
            cross[k] = (load >= 0.5, f"crosses at {at:,.0f}/s, BEW at {load:.0%} of its capacity")
        else:
            top = rt.index[-1]
            load = top / cap.loc[top, "BEWJoin"]
            cross[k] = (False, f"no crossing up to {top:,.0f}/s (BEW at {load:.0%} of capacity)")
        kept = rt.index[cap["FEWJoin"] >= rt.index]
        curve = ", ".join(f"{r:,.0f}/s {rt.loc[r, 'FEWJoin']:,.1f}" for r in rt.index)
        falls[k] = (
            len(kept) > 1 and rt.loc[kept[-1], "FEWJoin"] < rt.loc[kept[0], "FEWJoin"],
            f"FEW ms {curve}",
        )
        reasons.append(
            f"{k}: FEW's response / window "
            + ", ".join(f"{x / window_ms:.2f}" for x in rt["FEWJoin"])
            + "; BEW's load (rate / capacity) "
            + ", ".join(f"{r / c:.2f}" for r, c in cap["BEWJoin"].items())
        )
    reason = "; ".join(reasons)
    return [
        _row("Figure 7, low rates", "BEW's response time below FEW's at low rates", low, reason),
        _row(
            "Figure 7, crossing",
            "BEW's response time crosses FEW's near BEW's maximum throughput",
            cross,
            reason,
        ),
        _row(
            "Figure 7, FEW",
            "FEW's response time falls as the rate rises",
            falls,
            reason + ("; " + _few_parts(repeats) if len(repeats) else ""),
        ),
    ]


def _delayed_row(runs: pd.DataFrame) -> dict:
    case = runs["case"].iloc[0]
    results = runs["results"].nunique() == 1
    cells = {}
    for k in MECHANISMS:
        r = runs[runs["mechanism"] == k].set_index("algorithm")
        bew, few = r.loc["BEWJoin", "response_ms"], r.loc["FEWJoin", "response_ms"]
        cells[k] = (
            results and bew < few,
            f"{r.loc['BEWJoin', 'results']:,} results each; response BEW {bew:,.2f}, "
            f"FEW {few:,.2f} ms",
        )
    ratio, value = _ratios(runs)
    reason = (
        f"FEW / BEW {value.replace('_', ' ')} "
        + ", ".join(f"{k} {ratio[(case, k)]:.2f}" for k in MECHANISMS)
        + "; "
        + "; ".join(_work(runs, case, k) for k in MECHANISMS)
    )
    claim = (
        "delayed, out-of-order tuples are joined exactly (no approximate answers); BEW "
        "answers without waiting, FEW holds tuples for its periods"
    )
    return _row(f"Delayed tuples ({case})", claim, cells, reason)


def _variant_rows(runs: pd.DataFrame) -> list[dict]:
    cells_graph, cells_lca = {}, {}
    for k in MECHANISMS:
        r = runs[runs["mechanism"] == k]
        g = r[r["form"] == "graph"].set_index(["strategy", "algorithm"])
        modified = g.loc[("modified", "BEWJoin"), "max_sustainable"]
        conservative = g.drop(index=("modified", "BEWJoin"))["max_sustainable"]
        cells_graph[k] = (
            modified > conservative.max(),
            f"modified BEW {modified:,.0f}/s vs conservative "
            + ", ".join(f"{a[:3]} {s} {v:,.0f}" for (s, a), v in conservative.items()),
        )
        c = r[r["form"] == "non-uniform clique"].set_index(["strategy", "algorithm"])
        fewer = all(
            c.loc[("lca", a), "comparisons"] < c.loc[("gca", a), "comparisons"]
            for a in ("BEWJoin", "FEWJoin")
        )
        cells_lca[k] = (
            fewer,
            "comparisons per tuple LCA vs GCA: "
            + ", ".join(
                f"{a[:3]} {c.loc[('lca', a), 'comparisons']:.1f} vs "
                f"{c.loc[('gca', a), 'comparisons']:.1f}"
                for a in ("BEWJoin", "FEWJoin")
            ),
        )

    def reason(form: str) -> str:
        r = runs[runs["form"] == form]
        same = r["results"].nunique() == 1
        parts = [
            f"{row.mechanism} {row.algorithm[:3]} {row.strategy}: {row.comparisons:.1f} "
            f"comparisons, {row.max_sustainable:,.0f}/s"
            + ("" if row.saturated else " (kept up with its grid)")
            for row in r.itertuples()
        ]
        return ("same results; " if same else "RESULTS DIFFER; ") + "; ".join(parts)

    return [
        _row(
            "Section 5.2, graph join",
            "the modified BEW processes tuples faster than the conservative approaches",
            cells_graph,
            reason("graph"),
        ),
        _row(
            "Section 5.1, GCA vs LCA",
            "LCA avoids GCA's unnecessary comparisons (non-uniform windows)",
            cells_lca,
            reason("non-uniform clique"),
        ),
    ]


def verdicts(runs: PaperRuns) -> pd.DataFrame:
    """The "Reproduced?" table: per headline result, the paper's claim, ours with each
    mechanism (whether it held, and the figures), the verdict, and the measured reason (the
    counters per tuple at the probe rate, or the response curve).  Figure 6's claim holds
    when FEW / BEW >= 1 at every size and > 1 at one."""
    s = runs.settings
    probe = s.probe_rate
    rows = [
        _figure4_row(runs.figure4, probe),
        _figure6_row(runs.figure6, "hash", "a", s),
        _figure6_row(runs.figure6, "nested", "b", s),
        *_figure7_rows(runs.figure7, runs.figure7_repeats, s.hash_window_ms),
        _delayed_row(runs.delayed),
        *_variant_rows(runs.variants),
    ]
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS))


def markdown_table(frame: pd.DataFrame, floats: str = ",.2f") -> str:
    """A frame as a Markdown table (its index dropped; floats as ``floats``; ``|`` escaped).

    >>> print(markdown_table(pd.DataFrame({"a": [1.5], "b": ["x|y"]})))
    | a | b |
    | --- | --- |
    | 1.50 | x\\|y |
    """

    def text(x: object) -> str:
        s = format(x, floats) if isinstance(x, float | np.floating) else str(x)
        return s.replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(text(c) for c in frame.columns) + " |",
        "| " + " | ".join("---" for _ in frame.columns) + " |",
    ]
    lines += ["| " + " | ".join(text(x) for x in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)
