"""Compiled screening of a batch of two-stream events: which rows ``TwoStreamJoin._validate``
would take (PTJoin Definitions 4-6: a known stream and template, finite times, a faithful
detection time, arrivals in order and not before detection)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["valid_events"]


@njit(cache=True, nogil=True)
def valid_events(stream, template, t_det, arrival, n_templates, reach, horizon, now):
    """Per row, whether it is a valid event given the clock ``now`` (the latest arrival of a
    valid row before it); ``reach`` and ``horizon`` are per (stream, template)."""
    n = stream.shape[0]
    ok = np.zeros(n, dtype=np.bool_)
    clock = now
    for i in range(n):
        s, k, t, a = stream[i], template[i], t_det[i], arrival[i]
        if s != 0 and s != 1:
            continue
        if k < 0 or k >= n_templates[s] or not (math.isfinite(t) and math.isfinite(a)):
            continue
        if abs(t) + reach[s, k] < horizon[s, k] and a >= t and a >= clock:
            ok[i] = True
            clock = a
    return ok
