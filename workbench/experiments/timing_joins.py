"""Analyses of the two-stream timing joins: PTJoin's stime tables and variants (PTJoin
Sections 3.1-3.2, Example 5) and the tables of any two-stream join's replays (the interval
timing correlation algorithms too), all replayed through the one harness.  The interval
algorithms against the arrival rate: :mod:`workbench.experiments.interval_rates`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from workbench.events import Events
from workbench.experiments.harness import (
    ENGINES,
    JoinProfile,
    engine_calls,
    profile_join,
    timed,
    warm_up,
)
from workbench.experiments.interval_verdicts import Finding, verdict_row
from workbench.experiments.workloads import Example5Workload
from workbench.operators import BandJoin, PTJoin, TwoStreamJoin
from workbench.paper_examples import Example5Setting
from workbench.stime import StimeTable, stime, stime_table

__all__ = [
    "engine_profile",
    "join_summary",
    "join_table",
    "ptjoin_runs",
    "replay_verdicts",
    "stime_timings",
]


def join_summary(profile: JoinProfile, speed: float = 1.0) -> dict[str, float]:
    """Throughput, results, work per event and mean response time of a two-stream join's
    replay (PTJoin Section 3; interval timing paper, Section 4.2).

    >>> from workbench.operators import BandJoin, StreamSpec
    >>> from workbench.paper_examples import example3_templates
    >>> spec = StreamSpec(example3_templates(), 50.0)
    >>> events = Example5Workload(Example5Setting(templates=2), events_per_stream=20).build()[1]
    >>> band = BandJoin(streams=(spec, spec), d=40.0, threshold=0.8)
    >>> s = join_summary(profile_join(band, events))
    >>> s["events"], s["prob_evals"]
    (40, 0.0)
    """
    c = profile.counters
    n = profile.events
    return {
        "events": n,
        "seconds": profile.seconds,
        "events_per_s": n / profile.seconds,
        "results": profile.results,
        "prob_evals": c.prob_evals / n,
        "stime_lookups": c.stime_lookups / n,
        "reuses": c.lookup_reuses / n,
        "exact_evals": c.exact_evals,
        "response_ms": profile.mean_response_ms(speed),
        "late": c.late,
    }


def join_table(profiles: Mapping[str, JoinProfile]) -> pd.DataFrame:
    """One row per operator: :func:`join_summary` and ``same_pairs``, whether its results
    equal the first operator's (interval timing paper: every algorithm, one result).

    >>> streams, events = Example5Workload(Example5Setting(templates=3), 40).build()
    >>> kw = {"streams": streams, "d": 1500.0, "threshold": 0.8}
    >>> t = join_table({"naive": profile_join(PTJoin(**kw, mode="naive"), events),
    ...                 "tight": profile_join(PTJoin(**kw), events)})
    >>> t["same_pairs"].tolist(), t["prob_evals"].gt(0).tolist()
    ([True, True], [True, False])
    """
    first = next(iter(profiles.values())).pairs()
    rows = {
        name: {**join_summary(p), "same_pairs": bool(np.array_equal(p.pairs(), first))}
        for name, p in profiles.items()
    }
    return pd.DataFrame.from_dict(rows, orient="index")


def stime_timings(setting: Example5Setting, sample: int = 200, seed: int = 0) -> dict[str, float]:
    """Seconds taken by the vectorised stime table (cold, then best of 2), by
    ``StimeTable.build`` and by ``sample`` scalar ``stime`` calls on the setting's random
    templates (PTJoin Section 3.1, Lemma 3, Example 5), and the largest table-vs-scalar
    difference on the sample (ms).

    >>> t = stime_timings(Example5Setting(templates=3, buckets=2), sample=2)
    >>> sorted(t), bool(t["max_error_ms"] < 1e-6)
    (['build_s', 'cold_s', 'max_error_ms', 'pairs', 'scalar_s', 'table_s'], True)
    """
    rng = np.random.default_rng(seed)
    ha, hb = setting.template_sets(rng)
    delta, n = setting.delta, setting.templates
    table, cold = timed(lambda: stime_table(ha, hb, delta))
    best = min(timed(lambda: stime_table(ha, hb, delta))[1] for _ in range(2))
    _, build = timed(lambda: StimeTable.build(ha, hb, delta))
    u, v = rng.integers(0, n, size=sample), rng.integers(0, n, size=sample)
    scalar, scalar_s = timed(
        lambda: np.array([stime(ha[i], hb[j], delta) for i, j in zip(u, v, strict=True)])
    )
    return {
        "pairs": n * n,
        "cold_s": cold,
        "table_s": best,
        "build_s": build,
        "scalar_s": scalar_s,
        "max_error_ms": float(np.abs(np.asarray(table)[u, v] - np.asarray(scalar)).max()),
    }


def engine_profile(op: TwoStreamJoin, events: Events) -> JoinProfile:
    """:func:`profile_join` with the calls of the operator's engine (:func:`engine_calls`),
    after a warm-up run of a fresh copy (:func:`warm_up`)."""
    warm_up(op, events)
    return profile_join(op, events, batch=engine_calls(op))


def ptjoin_runs(
    workload: Example5Workload,
    prefix: int = 4_000,
    begin: Callable[[str, int], object] | None = None,
) -> tuple[dict[str, float], dict[str, dict[str, dict[str, float]]]]:
    """PTJoin naive / loose / tight against the deterministic band join on one replay (PTJoin
    Section 3, Theorems 2-4), each by the python reference and by its compiled kernel.

    Returns the seconds to install the query (two stime tables) and of the kernels' first
    call (compile, or load from the on-disk cache) and, by ``"mode · engine"``, the
    :func:`join_summary` of a run on the first ``prefix`` events (every mode and engine) and
    on all of them (the python reference of naive and loose only on the prefix: too slow).
    ``begin(stage, stages)`` is told each stage as it starts, and how many there are.

    >>> w = Example5Workload(Example5Setting(templates=3), events_per_stream=30)
    >>> setup, runs = ptjoin_runs(w, prefix=10)
    >>> sorted(setup), len(runs["prefix"]), list(runs["all"])[:2]
    (['first_call_s', 'install_s'], 8, ['loose · compiled', 'tight · python'])
    >>> len({r["results"] for name, r in runs["all"].items() if not name.startswith("band")})
    1
    """
    streams, events = workload.build()
    kw = {"streams": streams, "d": workload.setting.d, "threshold": workload.setting.delta}
    installed, install_s = timed(lambda: PTJoin(**kw))
    _, first_call_s = timed(lambda: installed.push_batch(events.head(256)))

    def make(mode: str, engine: str) -> TwoStreamJoin:
        if mode == "band floor":
            return BandJoin(**kw, engine=engine)
        return PTJoin(**kw, mode=mode, engine=engine)

    modes = ("naive", "loose", "tight", "band floor")
    scopes = {
        "prefix": (events.head(prefix), [(m, e) for m in modes for e in ENGINES]),
        "all": (
            events,
            [(m, e) for m in modes[1:] for e in ENGINES if (m, e) != ("loose", "python")],
        ),
    }
    out: dict[str, dict[str, dict[str, float]]] = {}
    stages = sum(len(todo) for _, todo in scopes.values())
    for scope, (ev, todo) in scopes.items():
        out[scope] = {}
        for mode, engine in todo:
            if begin is not None:
                begin(f"{scope}: {mode} · {engine}", stages)
            out[scope][f"{mode} · {engine}"] = join_summary(engine_profile(make(mode, engine), ev))
    return {"install_s": install_s, "first_call_s": first_call_s}, out


def replay_verdicts(
    tables: Mapping[str, Mapping[str, pd.DataFrame]], batched: Mapping[str, float]
) -> pd.DataFrame:
    """Notebook 03's "Reproduced?" rows measured on one replay (interval timing paper, Section
    4.2; PTJoin Section 3, Theorem 2), every figure from the runs: ``tables`` by engine, then
    family (``"PTJoin"``, ``"interval"``), of :func:`join_table` (one push per event);
    ``batched``: events/s of each compiled operator driven in micro-batches.  Columns as
    :func:`~workbench.experiments.interval_verdicts.verdict_row`'s.

    >>> streams, events = Example5Workload(Example5Setting(templates=3), 40).build()
    >>> kw = {"streams": streams, "d": 1500.0, "threshold": 0.8}
    >>> ops = {m: PTJoin(**kw, mode=m.split()[1]) for m in ("PTJoin naive", "PTJoin tight")}
    >>> t = {"PTJoin": join_table({m: profile_join(op, events) for m, op in ops.items()})}
    >>> batched = {"PTJoin naive": 1.0, "PTJoin tight": 2.0}
    >>> replay_verdicts({"python": t, "compiled": t}, batched)["verdict"].tolist()[:1]
    ['yes']
    """
    claims = []
    if all("interval" in t for t in tables.values()):
        claims += _interval_claims(tables)
    if all("PTJoin" in t for t in tables.values()):
        claims += _ptjoin_claims(tables, batched)
    return pd.DataFrame(
        [
            verdict_row(claim, find(tables["python"]), find(tables["compiled"]), reason)
            for claim, find, reason in claims
        ]
    )


Claim = tuple[str, Callable[[Mapping[str, pd.DataFrame]], Finding], str]
"""A claim, one engine's finding from its tables, and the measured reason."""


def _interval_claims(tables: Mapping[str, Mapping[str, pd.DataFrame]]) -> list[Claim]:
    """The interval paper's claims about results and work, from one replay."""
    work = ["results", "prob_evals", "reuses"]
    same_work = tables["python"]["interval"][work].equals(tables["compiled"]["interval"][work])

    def same(t: Mapping[str, pd.DataFrame]) -> Finding:
        it = t["interval"]
        return bool(it["same_pairs"].all()), f"{int(it['results'].iloc[0]):,} pairs each"

    def bounds(t: Mapping[str, pd.DataFrame]) -> Finding:
        e = t["interval"]["prob_evals"]
        return bool(max(e["Eager"], e["Lazy"]) < e["Simple"]), (
            f"Simple {e['Simple']:.2f} -> Eager {e['Eager']:.2f}, Lazy {e['Lazy']:.2f} "
            "evaluations per event"
        )

    def lookup(t: Mapping[str, pd.DataFrame]) -> Finding:
        it = t["interval"]
        lazy, table = it.loc["Lazy", "prob_evals"], it.loc["LazyWithLookup", "prob_evals"]
        return bool(table < lazy), (
            f"Lazy {lazy:.3f} -> LazyWithLookup {table:.3f} evaluations per event, "
            f"{it.loc['LazyWithLookup', 'reuses']:.3f} reuses"
        )

    it = tables["python"]["interval"]["prob_evals"]
    both = "the same counts in both engines" if same_work else "the engines' counts DIFFER"
    saved = 1.0 - it["LazyWithLookup"] / max(it["Lazy"], 1e-12)
    return [
        (
            "Interval paper: Simple, SSort, Eager, Lazy and LazyWithLookup give the same "
            "correlation result",
            same,
            f"pairs compared sorted with Simple's; {both} (results, evaluations, reuses)",
        ),
        (
            "Interval paper: the LH/LL/RL/RH bounds avoid probability evaluations",
            bounds,
            f"a property of the algorithms: {both}",
        ),
        (
            "Interval paper: the look-up table avoids evaluations (Corollary 2)",
            lookup,
            f"it saves {saved:.0%} of Lazy's evaluations on this replay; {both}",
        ),
    ]


def _ptjoin_claims(
    tables: Mapping[str, Mapping[str, pd.DataFrame]], batched: Mapping[str, float]
) -> list[Claim]:
    """PTJoin's claims about its tight partitions, from one replay."""

    def fast_path(t: Mapping[str, pd.DataFrame]) -> Finding:
        pt = t["PTJoin"]
        ev = pt["prob_evals"]
        loose = f", loose {ev['PTJoin loose']:.2f}" if "PTJoin loose" in ev else ""
        return bool(ev["PTJoin tight"] == 0), (
            f"tight {ev['PTJoin tight']:.2f} evaluations per event{loose}, naive "
            f"{ev['PTJoin naive']:.2f}; tight {pt.loc['PTJoin tight', 'stime_lookups']:.2f} "
            "stime look-ups per event"
        )

    def faster(t: Mapping[str, pd.DataFrame]) -> Finding:
        rate = t["PTJoin"]["events_per_s"]
        tight, naive = rate["PTJoin tight"], rate["PTJoin naive"]
        return bool(tight > naive), (
            f"{tight / naive:.1f}x naive's events/s ({tight:,.0f} vs {naive:,.0f}, one push "
            "per event)"
        )

    tight, naive = batched["PTJoin tight"], batched["PTJoin naive"]
    return [
        (
            "PTJoin: tight partitions evaluate no probability on the fast path (Theorem 2)",
            fast_path,
            "tight decides by one stime look-up and a comparison; both engines count alike",
        ),
        (
            "PTJoin: tight runs far faster than naive",
            faster,
            f"compiled in micro-batches tight {tight:,.0f} vs naive {naive:,.0f} events/s "
            f"({tight / naive:.1f}x): one push per event, the call's own cost hides the work "
            "saved",
        ),
    ]
