"""Experiments: workloads, the one timing harness (one first-come-first-served response-time
model) and the papers' analyses, shared by the benchmark commands, the notebooks and the
dashboard.

- :mod:`~workbench.experiments.harness`: :func:`fcfs_finish`, :class:`JoinProfile`,
  :func:`profile_join` (two-stream joins), :func:`profile_wjoin` (multi-way joins);
- :mod:`~workbench.experiments.workloads`: PTJoin Example 5, the interval paper's streams,
  the W-join paper's integer streams, the deployment replay;
  :mod:`~workbench.experiments.coalescing_stream`: the coalescing paper's streams;
- :mod:`~workbench.experiments.timing_joins`: PTJoin runs and the two-stream joins' tables;
- :mod:`~workbench.experiments.interval_rates`: the interval timing correlation algorithms
  run at each arrival rate (throughput, maximum sustainable rate, response time per event);
  :mod:`~workbench.experiments.interval_verdicts`: their "Reproduced?" rows;
- :mod:`~workbench.experiments.wjoin`: the W-join measures of one run, GCA/LCA and the
  modified BEW across window sizes, the retail stand-in (Figure 8);
- :mod:`~workbench.experiments.wjoin_paper`: the W-join experiments at the paper's settings
  (Figures 4, 6, 7, delayed tuples, Section 5), both mechanisms, and their verdicts (sizes
  and cases in :mod:`~workbench.experiments.wjoin_settings`, rates and response times in
  :mod:`~workbench.experiments.wjoin_rates`, the table in
  :mod:`~workbench.experiments.wjoin_verdicts`);
- :mod:`~workbench.experiments.coalescing`: coalescing throughput, the model's cost surfaces
  (Figures 3 and 4), the deployment;
- :mod:`~workbench.experiments.atomic_costs`: Table 4's atomic costs timed per (cp, oop) on
  the compiled extents;
- :mod:`~workbench.experiments.cost_surfaces`: Figures 3 and 4 from measured runs beside the
  model's;
- :mod:`~workbench.experiments.coalescing_selection`: Tables 5 and 6, Figure 5 (a) and (b);
- :mod:`~workbench.experiments.coalescing_queries`: Table 6's six queries run and timed;
- :mod:`~workbench.experiments.coalescing_verdicts`: Section 7 per mechanism and its
  "Reproduced?" rows.
"""

from __future__ import annotations

from workbench.experiments.atomic_costs import cost_grid_of, measure_cells, mechanisms_available
from workbench.experiments.coalescing import (
    PAPER_LIKE_COSTS,
    coalesce_deployment,
    coalesce_rates,
    cost_surface,
    deployment_coalescing,
    rates_grid,
)
from workbench.experiments.coalescing_queries import six_query_run
from workbench.experiments.coalescing_selection import (
    table5_cps,
    table5_selection,
    table6_selection,
    what_if_array_costs,
)
from workbench.experiments.coalescing_stream import coalescing_rows
from workbench.experiments.coalescing_verdicts import reproduced_rows, run_section7
from workbench.experiments.harness import (
    COMPILED_BATCH,
    ENGINES,
    Clock,
    JoinProfile,
    engine_calls,
    fcfs_finish,
    profile_join,
    profile_wjoin,
    timed,
    warm_up,
    wtuples,
)
from workbench.experiments.interval_rates import (
    RateGrid,
    interval_rate_runs,
    max_sustainable_rates,
    rate_grid,
)
from workbench.experiments.interval_verdicts import rate_verdicts
from workbench.experiments.timing_joins import (
    engine_profile,
    join_summary,
    join_table,
    ptjoin_runs,
    replay_verdicts,
    stime_timings,
)
from workbench.experiments.wjoin import (
    RETAIL_WORKLOAD,
    VARIANTS_WORKLOAD,
    wjoin_measures,
    wjoin_retail,
    wjoin_variants,
    wjoin_window_sweep,
)
from workbench.experiments.workloads import (
    EXAMPLE5,
    INTERVAL_QUERY,
    DeploymentReplay,
    Example5Workload,
    IntervalQuery,
    IntervalWorkload,
    RetailWorkload,
    WJoinWorkload,
    as_intervals,
    deployment_replay,
)

__all__ = [
    "COMPILED_BATCH",
    "ENGINES",
    "EXAMPLE5",
    "INTERVAL_QUERY",
    "PAPER_LIKE_COSTS",
    "RETAIL_WORKLOAD",
    "RateGrid",
    "VARIANTS_WORKLOAD",
    "Clock",
    "DeploymentReplay",
    "Example5Workload",
    "IntervalQuery",
    "IntervalWorkload",
    "JoinProfile",
    "RetailWorkload",
    "WJoinWorkload",
    "as_intervals",
    "coalesce_deployment",
    "coalesce_rates",
    "coalescing_rows",
    "cost_grid_of",
    "cost_surface",
    "deployment_coalescing",
    "deployment_replay",
    "engine_calls",
    "engine_profile",
    "fcfs_finish",
    "interval_rate_runs",
    "join_summary",
    "join_table",
    "max_sustainable_rates",
    "measure_cells",
    "mechanisms_available",
    "profile_join",
    "profile_wjoin",
    "ptjoin_runs",
    "replay_verdicts",
    "rate_grid",
    "rate_verdicts",
    "rates_grid",
    "reproduced_rows",
    "run_section7",
    "six_query_run",
    "stime_timings",
    "table5_cps",
    "table5_selection",
    "table6_selection",
    "timed",
    "warm_up",
    "what_if_array_costs",
    "wtuples",
    "wjoin_measures",
    "wjoin_retail",
    "wjoin_variants",
    "wjoin_window_sweep",
]
