"""Benchmarks: commands that print figures (``workbench bench ...``), never timed tests."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from workbench.stime import StimeTable, stime, stime_table
from workbench.timestamps import random_templates

__all__ = ["bench_stime"]


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def bench_stime(
    templates: int = 500,
    buckets: int = 10,
    max_length: float = 1000.0,
    delta: float = 0.8,
    sample: int = 200,
    seed: int = 0,
) -> str:
    """Time the vectorised stime table against the scalar binary search (PTJoin Example 5 scale).

    Returns the report; the figures come from one run, so the ratios compare like with like.
    """
    rng = np.random.default_rng(seed)
    ha = random_templates(rng, templates, buckets, max_length, name="A")
    hb = random_templates(rng, templates, buckets, max_length, name="B")
    pairs = templates * templates
    table, t_cold = _timed(lambda: stime_table(ha, hb, delta))
    t_table = min(_timed(lambda: stime_table(ha, hb, delta))[1] for _ in range(2))
    _, t_build = _timed(lambda: StimeTable.build(ha, hb, delta))
    u = rng.integers(0, templates, size=sample)
    v = rng.integers(0, templates, size=sample)
    scalar, t_scalar = _timed(
        lambda: np.array([stime(ha[i], hb[j], delta) for i, j in zip(u, v, strict=True)])
    )
    per_pair_scalar = t_scalar / sample
    per_pair_table = t_table / pairs
    err = float(np.abs(np.asarray(table)[u, v] - np.asarray(scalar)).max())
    return "\n".join(
        [
            f"stime tables: {templates} x {templates} random templates, {buckets} buckets, "
            f"lengths <= {max_length:g} ms, delta = {delta:g} (seed {seed})",
            f"  vectorised table, one delta:         {t_table:8.3f} s  "
            f"{pairs / t_table:12,.0f} pairs/s  (best of 2 after a cold run of {t_cold:.3f} s)",
            f"  StimeTable.build (delta, 1 - delta): {t_build:8.3f} s  "
            f"{2 * pairs / t_build:12,.0f} pairs/s",
            f"  scalar binary search, {sample} pairs:     {t_scalar:8.3f} s  "
            f"{sample / t_scalar:12,.0f} pairs/s",
            "  speed-up of the table over the scalar loop: "
            f"{per_pair_scalar / per_pair_table:,.0f}x",
            f"  max |table - scalar| on the sample: {err:.2e} ms",
        ]
    )
