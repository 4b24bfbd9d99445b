"""The W-join experiments at the paper's settings, for both mechanisms and both algorithms
(W-join Section 4, the Figure 4 discussion of Section 3.1, Section 5), with a verdict per
headline result computed from the run.

What is run (:func:`paper_runs`), each case by BEW and FEW under ``mechanism="paper"`` and
``mechanism="fast"`` on the same streams:

- **Figure 6** (a) hash with a one-minute window and (b) nested loop with a window of
  seconds, 2- to 5-way uniform cliques: the maximum sustainable rate;
- **Figure 4**: a 4-way nested loop with half the streams at a tenth of the rate, beside the
  same aggregate rate split equally: the tuples BEW visits outside its period;
- **delayed tuples**: each tuple arrives up to D after its timestamp, out of order;
- **Figure 7**: mean response time of hash BEW and FEW against the aggregate rate, one tuple
  per call, split into the time a result was held, queued and served, with the paper's FEW
  repeated on more seeds where its curve turns (:func:`figure7_repeats`);
- **Section 5**: GCA vs LCA on a non-uniform clique, and a graph join (a missing constraint
  bounded by its shortest path) by the modified BEW against the conservative approaches.

Every workload holds the results per tuple constant as the rate grows
(:class:`~workbench.experiments.workloads.WJoinWorkload`'s ``results_per_tuple``), so the
work measured is the joins', not the writing of results, and every run covers a whole number
of windows of stream time.  The experiment families live in three modules, re-exported here:
the sizes and cases (:mod:`~workbench.experiments.wjoin_settings`), the rates and response
times measured (:mod:`~workbench.experiments.wjoin_rates`) and the "Reproduced?" table
(:mod:`~workbench.experiments.wjoin_verdicts`).
"""

from __future__ import annotations

import time

import pandas as pd

from workbench.experiments.harness import Clock
from workbench.experiments.wjoin_rates import (
    MECHANISMS,
    beyond_grid,
    case_runs,
    few_over_bew,
    max_sustainable_rate,
    response_runs,
)
from workbench.experiments.wjoin_settings import (
    PaperRuns,
    PaperSettings,
    WJoinCase,
    delayed_cases,
    figure4_cases,
    figure6_cases,
    paper_settings,
    variant_cases,
)
from workbench.experiments.wjoin_verdicts import VERDICT_COLUMNS, markdown_table, verdicts
from workbench.operators.wjoin import FEWJoin

__all__ = [
    "MECHANISMS",
    "VERDICT_COLUMNS",
    "PaperRuns",
    "PaperSettings",
    "WJoinCase",
    "beyond_grid",
    "case_runs",
    "delayed_cases",
    "few_over_bew",
    "figure4_cases",
    "figure6_cases",
    "figure7_repeats",
    "markdown_table",
    "max_sustainable_rate",
    "paper_runs",
    "paper_settings",
    "response_runs",
    "variant_cases",
    "variant_runs",
    "verdicts",
]


def paper_runs(
    settings: PaperSettings | None = None,
    seed: int = 0,
    clock: Clock = time.thread_time,
    progress: bool = True,
) -> PaperRuns:
    """Run every experiment of the module (sizes: ``settings``, default
    :func:`paper_settings`); busy time by ``clock`` (default the joining thread's CPU
    time: other work on a shared machine left out), for the response times too."""
    s = settings or paper_settings()

    def run(cases: list[WJoinCase]) -> pd.DataFrame:
        return case_runs(cases, s, seed, clock, progress)

    figure7 = response_runs(s, seed=seed, clock=clock, progress=progress)
    return PaperRuns(
        s,
        run(figure6_cases(s)),
        run(figure4_cases(s)),
        run(delayed_cases(s)),
        variant_runs(s, seed, clock, progress),
        figure7,
        figure7_repeats(s, figure7, seed, clock, progress),
    )


def figure7_repeats(
    settings: PaperSettings,
    figure7: pd.DataFrame,
    seed: int = 0,
    clock: Clock = time.thread_time,
    progress: bool = True,
) -> pd.DataFrame:
    """The paper's FEW of Figure 7 at ``settings.repeat_rates``: its runs in ``figure7``
    (seed ``seed``) and ``settings.repeat_seeds`` more streams (seeds ``seed + 1``, ...),
    as :func:`response_runs` gives them: whether the curve's shape is the streams' noise,
    and which part of the response (held, queued, served) moves with the rate."""
    mine = figure7[
        (figure7["algorithm"] == FEWJoin.__name__)
        & (figure7["mechanism"] == "paper")
        & figure7["rate"].isin(settings.repeat_rates)
    ]
    more = [
        response_runs(
            settings,
            seed=seed + k,
            clock=clock,
            progress=progress,
            rates=settings.repeat_rates,
            joins=((FEWJoin, "paper"),),
        )  # fmt: skip
        for k in range(1, settings.repeat_seeds + 1)
    ]
    return pd.concat([mine, *more], ignore_index=True)


def variant_runs(
    settings: PaperSettings,
    seed: int = 0,
    clock: Clock = time.thread_time,
    progress: bool = True,
) -> pd.DataFrame:
    """Section 5's cases (:func:`variant_cases`) as :func:`case_runs` runs them: the graph
    join searched for its maximum sustainable rate; the non-uniform clique, whose verdict
    (GCA vs LCA) reads comparisons per tuple only, at rates up to the probe rate
    (:meth:`PaperSettings.probe_only`)."""
    variants = variant_cases(settings)
    clique = [c for c in variants if c.form != "graph"]
    graph = [c for c in variants if c.form == "graph"]
    sizes = settings.probe_only(clique[0].workload)
    return pd.concat(
        [
            case_runs(clique, sizes, seed, clock, progress),
            case_runs(graph, settings, seed, clock, progress),
        ],
        ignore_index=True,
    )
