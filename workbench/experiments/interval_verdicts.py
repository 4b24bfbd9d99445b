"""The "Reproduced?" rows of the interval timing paper's rate results (Section 4.2), every
figure from the runs at each rate
(:func:`~workbench.experiments.interval_rates.interval_rate_runs`): the paper's claim, ours
with the python reference (one ``push`` per event, as the paper times its algorithms) and
with the compiled kernels (micro-batches), the verdict, and the measured reason for any
difference (probability evaluations per event, CPU per event, Lazy's block, the compiled
micro-batch, the loads).  :func:`verdict_row` is the one row format, shared with the
replay's rows (:mod:`~workbench.experiments.timing_joins`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.experiments.interval_rates import max_sustainable_rates

__all__ = ["CLAIMS", "Finding", "rate_verdicts", "verdict_row"]

Finding = tuple[bool | None, str]
"""One engine's answer to a claim: holds (None: the grid does not reach the case) and the
figures behind it."""


def _at(table: pd.DataFrame, engine: str, name: str, rate: float) -> pd.Series:
    """The run of ``name`` in ``engine`` at ``rate``."""
    hit = table[
        (table["engine"] == engine) & (table["algorithm"] == name) & (table["rate"] == rate)
    ]
    return hit.iloc[0]


def _rates(table: pd.DataFrame, engine: str, *names: str) -> list[float]:
    """The rates at which every one of ``names`` ran in ``engine``, ascending."""
    runs = table[table["engine"] == engine]
    common = set.intersection(*(set(runs["rate"][runs["algorithm"] == n]) for n in names))
    return sorted(common)


def _rate(value: float) -> str:
    return f"{value:,.0f}/s" if value else "none of the grid"


def _sustains(table: pd.DataFrame, engine: str, a: str, b: str) -> Finding:
    """Whether ``a`` sustains a higher rate than ``b``: by the maximum sustainable rates, a
    tie by the throughput at the highest rate both ran."""
    best = max_sustainable_rates(table)[engine]
    common = _rates(table, engine, a, b)
    if not common:
        return None, "no rate run by both"
    top = common[-1]
    ta, tb = (_at(table, engine, n, top)["throughput"] for n in (a, b))
    holds = best[a] > best[b] if best[a] != best[b] else ta > tb
    grid_top = table["rate"].max()
    ra, rb = (_rate(best[n]) + (" (the grid's top)" if best[n] == grid_top else "") for n in (a, b))
    return holds, (
        f"sustained {a} {ra} vs {b} {rb}; at {top:,.0f}/s {ta:,.0f} vs {tb:,.0f} events per CPU s"
    )


def _same(table: pd.DataFrame, engine: str) -> Finding:
    runs = table[table["engine"] == engine]
    top = runs["rate"].max()
    return bool(runs["same_results"].all()), (
        f"{runs['rate'].nunique()} rates, {int(runs['results'][runs['rate'] == top].iloc[0]):,} "
        f"pairs at {top:,.0f}/s, the same checksum for every algorithm and both engines"
    )


def _eager_bounds(table: pd.DataFrame, engine: str) -> Finding:
    found = [_sustains(table, engine, "Eager", other) for other in ("Simple", "SSort")]
    if any(h is None for h, _ in found):
        return None, "; ".join(t for _, t in found)
    return all(h for h, _ in found), "; ".join(t for _, t in found)


def _lazy_rates(table: pd.DataFrame, engine: str) -> Finding:
    return _sustains(table, engine, "Lazy", "Eager")


def _lookup(table: pd.DataFrame, engine: str) -> Finding:
    return _sustains(table, engine, "LazyWithLookup", "Lazy")


def _slow_at_low(table: pd.DataFrame, engine: str) -> Finding:
    common = _rates(table, engine, "Lazy", "Eager")
    if not common:
        return None, "no rate run by both"
    lazy, eager = (_at(table, engine, n, common[0])["response_ms"] for n in ("Lazy", "Eager"))
    return bool(lazy > eager), f"at {common[0]:,.0f}/s Lazy {lazy:,.2f} vs Eager {eager:,.2f} ms"


def _sooner_when_behind(table: pd.DataFrame, engine: str) -> Finding:
    for rate in _rates(table, engine, "Lazy", "Eager"):
        eager, lazy = (_at(table, engine, n, rate) for n in ("Eager", "Lazy"))
        if not eager["keeps_up"] and lazy["keeps_up"]:
            return bool(lazy["response_ms"] < eager["response_ms"]), (
                f"at {rate:,.0f}/s (Eager's load {eager['load']:.2f}) Lazy "
                f"{lazy['response_ms']:,.2f} vs Eager {eager['response_ms']:,.2f} ms"
            )
    return None, "no rate of the grid where Eager falls behind and Lazy keeps up"


def _work(table: pd.DataFrame, names: Sequence[str]) -> str:
    """Probability evaluations per event (the same in both engines: the same work) and CPU
    microseconds per event of ``names`` in each engine, at the highest rate they all ran in
    the reference (in the compiled engine if the reference ran none), and where the last
    name's CPU does not follow its probes against the first's."""
    common = _rates(table, "python", *names) or _rates(table, "compiled", *names)
    if not common:
        return "no common rate"
    top, parts, notes, probes = common[-1], [], [], ""
    for engine in ("python", "compiled"):
        if top not in _rates(table, engine, *names):
            continue
        runs = [_at(table, engine, n, top) for n in names]
        parts.append(f"{engine} " + " / ".join(f"{r['cpu_us']:,.2f}" for r in runs) + " us")
        probes = probes or " / ".join(f"{r['prob_evals']:.1f}" for r in runs)
        first, last = runs[0], runs[-1]
        work = last["prob_evals"] / max(first["prob_evals"], 1e-12)
        cost = last["cpu_us"] / first["cpu_us"]
        if work <= 1.0 and cost > 1.1:
            notes.append(
                f"{engine}: {names[-1]} probes {work:.2f}x {names[0]}'s yet takes {cost:.2f}x "
                "its CPU per event (the steps around the probes, not the probes, decide)"
            )
    return (
        f"at {top:,.0f}/s, {' / '.join(names)}: probability evaluations per event {probes}; "
        f"CPU per event {', '.join(parts)}" + "".join(f"; {n}" for n in notes)
    )


def _blocks(table: pd.DataFrame) -> str:
    """Lazy's block in the reference and the compiled engine's call, at the lowest rate
    Eager and Lazy both ran."""
    text = []
    for engine in ("python", "compiled"):
        common = _rates(table, engine, "Lazy", "Eager")
        if not common:
            continue
        low = common[0]
        eager, lazy = (_at(table, engine, n, low) for n in ("Eager", "Lazy"))
        extra = round(lazy["response_ms"] - eager["response_ms"], 1) + 0.0  # no "-0.0"
        if engine == "python":
            block = lazy["events_per_emit"]
            text.append(
                f"at {low:,.0f}/s the reference's Lazy emits once per {block:,.0f} events (a "
                f"block spans {1000.0 * block / low:,.0f} ms of arrivals): {extra:+,.1f} ms "
                "mean over Eager"
            )
        else:
            rows = min(lazy["batch"], lazy["events"])
            text.append(
                f"every compiled call is a micro-batch of up to {lazy['batch']:,.0f} events "
                f"({1000.0 * rows / low:,.0f} ms of arrivals at {low:,.0f}/s), a wait Eager "
                "and Lazy share; a lazy block still open at a batch's end waits for the next "
                f"batch: {extra:+,.1f} ms mean over Eager"
            )
    return "; ".join(text)


def _block_calls(table: pd.DataFrame) -> str:
    """How many events the reference's Lazy takes per emitting call (its block), at the
    highest rate it ran."""
    runs = table[(table["algorithm"] == "Lazy") & (table["engine"] == "python")]
    if not len(runs):
        return "the reference's Lazy not run"
    top = runs.sort_values("rate").iloc[-1]
    return (
        f"the reference's Lazy takes {top['events_per_emit']:,.0f} events per emitting call at "
        f"{top['rate']:,.0f}/s (one block's vectorised steps), Eager one"
    )


def _queue(table: pd.DataFrame) -> str:
    """Eager's and Lazy's loads at the highest rate both ran, per engine."""
    parts = []
    for engine in ("python", "compiled"):
        common = _rates(table, engine, "Lazy", "Eager")
        if common:
            e, z = (_at(table, engine, n, common[-1]) for n in ("Eager", "Lazy"))
            parts.append(
                f"{engine} at {common[-1]:,.0f}/s: load Eager {e['load']:.2f}, Lazy "
                f"{z['load']:.2f} (above 1 the queue, and the response, grow with the run)"
            )
    return "; ".join(parts)


def _reuses(table: pd.DataFrame) -> str:
    runs = table[(table["algorithm"] == "LazyWithLookup") & (table["engine"] == "python")]
    top = runs.sort_values("rate").iloc[-1] if len(runs) else None
    return f"{top['reuses']:.2f} at {top['rate']:,.0f}/s" if top is not None else "not run"


CLAIMS = (
    (
        "Simple, SSort, Eager, Lazy and LazyWithLookup give the same correlation result",
        _same,
        lambda t: "every run's pairs compared by count and order-free checksum",
    ),
    (
        "Eager's bounds (Algorithms 2-3) process faster than Simple and SSort (Algorithm 1)",
        _eager_bounds,
        lambda t: _work(t, ("Simple", "SSort", "Eager")),
    ),
    (
        "Lazy sustains higher arrival rates than Eager (Section 4.2: preferable when the "
        "rates are too high to handle every tuple instantly)",
        _lazy_rates,
        lambda t: f"{_work(t, ('Eager', 'Lazy'))}; {_block_calls(t)}",
    ),
    (
        "Lazy answers later than Eager at low rates (Section 4.2: at the expense of a longer "
        "response time)",
        _slow_at_low,
        _blocks,
    ),
    (
        "Where Eager can no longer keep up, Lazy answers sooner (Section 4.2)",
        _sooner_when_behind,
        _queue,
    ),
    (
        "The look-up table (Algorithms 6-7) makes Lazy faster",
        _lookup,
        lambda t: _work(t, ("Lazy", "LazyWithLookup")) + f"; reuses per event {_reuses(t)}",
    ),
)
"""The rate results of the interval paper's Section 4.2: (claim, one engine's finding,
the measured reason)."""


def _verdict(ref: bool | None, comp: bool | None) -> str:
    if ref is None and comp is None:
        return "not reached in this grid"
    if ref is None or comp is None:
        one = "reference" if comp is None else "compiled"
        held = ref if comp is None else comp
        return f"{'yes' if held else 'no'} ({one} only; the other engine does not reach it)"
    if ref and comp:
        return "yes"
    if not ref and not comp:
        return "no"
    return "reference only" if ref else "compiled only"


def _cell(found: Finding) -> str:
    holds, text = found
    return f"{'-' if holds is None else 'yes' if holds else 'no'}: {text}"


def verdict_row(claim: str, ref: Finding, comp: Finding, reason: str) -> dict[str, str]:
    """One "Reproduced?" row: the paper's claim, ours with the python reference and with the
    compiled kernels (each: holds, and the figures), the verdict and the measured reason.

    >>> verdict_row("c", (True, "1 vs 2"), (False, "3 vs 4"), "why")["verdict"]
    'reference only'
    """
    return {
        "paper's claim": claim,
        "ours: reference (python)": _cell(ref),
        "ours: compiled kernels": _cell(comp),
        "verdict": _verdict(ref[0], comp[0]),
        "measured reason": reason,
    }


def rate_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Notebook 03's "Reproduced?" rows for the rate results (interval timing paper, Section
    4.2), every figure from ``table`` (:func:`interval_rate_runs`): the paper's claim, ours
    with the reference (python, one push per event) and with the compiled kernels
    (micro-batches), the verdict and the measured reason for any difference.

    >>> from workbench.experiments.interval_rates import RateGrid, interval_rate_runs
    >>> t = interval_rate_runs(RateGrid((1000.0, 8000.0), 150), progress=False)
    >>> v = rate_verdicts(t)
    >>> list(v.columns)[-2:], v["verdict"].iloc[0]
    (['verdict', 'measured reason'], 'yes')
    """
    return pd.DataFrame(
        [
            verdict_row(claim, finding(table, "python"), finding(table, "compiled"), reason(table))
            for claim, finding, reason in CLAIMS
        ]
    )
