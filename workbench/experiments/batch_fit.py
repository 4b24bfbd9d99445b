"""Per-operation costs fitted to timed batches (coalescing paper, Eq. 3: a batch costs the sum
of its operations' costs): ordinary least squares with an intercept for the batch's call,
refitted without the batches with the largest residuals, each cost with its standard error.

:mod:`~workbench.experiments.atomic_costs` fits Table 4's update costs with it (the counts:
each batch's inserts, merges, splits, detaches and deletes) and the scans' costs per tuple
read.  A term no batch exercised gets NaN, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TRIM", "Fit", "fit_costs"]

TRIM = 0.05
"""Share of batches with the largest residuals dropped before the refit."""


@dataclass(frozen=True)
class Fit:
    """A least-squares fit: each term's cost and standard error (NaN where no observation
    exercised the term), the intercept's, and which observations the refit kept."""

    cost: np.ndarray
    se: np.ndarray
    intercept: float
    intercept_se: float
    inliers: np.ndarray

    @property
    def kept(self) -> int:
        """How many observations the refit kept."""
        return int(self.inliers.sum())


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ordinary least squares: coefficients, their standard errors and the residuals."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ beta
    dof = max(len(y) - x.shape[1], 1)
    variance = float(residual @ residual) / dof
    covariance = variance * np.linalg.pinv(x.T @ x)
    return beta, np.sqrt(np.maximum(np.diag(covariance), 0.0)), residual


def fit_costs(counts: np.ndarray, seconds: np.ndarray, trim: float = TRIM) -> Fit:
    """Per-operation costs such that each batch's seconds are an intercept (the batch's call)
    plus its operations' counts times their costs: least squares, refitted without the
    ``trim`` share of batches with the largest residuals (module docstring).

    The estimator's oracle: known costs come back from exact synthetic times.

    >>> rng = np.random.default_rng(0)
    >>> counts = rng.integers(0, 100, (50, 3)).astype(float)
    >>> counts[:, 2] = 0  # never exercised
    >>> fit = fit_costs(counts, 5.0 + counts @ [2.0, 3.0, 7.0])
    >>> np.round(fit.cost, 6).tolist(), round(fit.intercept, 6)
    ([2.0, 3.0, nan], 5.0)
    """
    counts = np.asarray(counts, dtype=float)
    seconds = np.asarray(seconds, dtype=float)
    if counts.ndim != 2 or len(counts) != len(seconds):
        raise ValueError(f"counts of shape {counts.shape} do not match {len(seconds)} seconds")
    seen = counts.any(axis=0)
    x = np.column_stack([np.ones(len(seconds)), counts[:, seen]])
    if len(seconds) < x.shape[1]:
        raise ValueError(f"{len(seconds)} batches cannot fit {x.shape[1]} costs")
    beta, se, residual = _ols(x, seconds)
    drop = int(trim * len(seconds))
    kept = np.ones(len(seconds), dtype=bool)
    if drop and len(seconds) - drop >= x.shape[1] + 1:
        kept[np.argsort(np.abs(residual))[len(seconds) - drop :]] = False
        beta, se, _ = _ols(x[kept], seconds[kept])
    cost, error = np.full(len(seen), np.nan), np.full(len(seen), np.nan)
    cost[seen], error[seen] = beta[1:], se[1:]
    return Fit(cost, error, float(beta[0]), float(se[0]), kept)
