"""Compiled kernels of interval timing correlation (interval timing paper, Section 4.2,
Algorithms 1-7) over the operators' own state: the max-time buffers of
:class:`~workbench.operators.buffers.SortedBuffer` (columns and live window) and the lazy
algorithms' pending blocks (unsorted buffers of the same kind).

Every float decision repeats :func:`~workbench.interval_bounds.uniform_band_certified`,
:func:`~workbench.interval_bounds.bounds_tuple` and the operators' eviction bound operation for
operation (same roundings, so the same verdicts).  A pair the trapezoid's bound cannot settle
is *unsure*: the eager kernels and the plain lazy block emit it in its place with its row
number and arguments in ``unsure`` (columns: row, stream, template, t_det, partner template,
partner max time), for the caller's exact path to keep or drop.  The look-up block needs the
verdict itself (it is stored for reuse), so there the kernel stops before the block's part and
returns; the caller runs that part in Python and resumes.

Shared arguments: ``b_*`` the two buffers' columns (tuples, stream A then B) and ``window``
their live ``[start, end)`` as ``[start_a, end_a, start_b, end_b]``; ``tlen`` the template
lengths per (stream, template); ``pi`` the streams' longest templates; ``delay``, ``d_max``,
``ct_min`` the envelope's eviction parameters; ``counts`` accumulates ``[prob_evals,
lookup_reuses, obsolete_removed]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from workbench.interval_bounds import lh_ll_rl_rh
from workbench.kernels.buffers import evict_before, grow, insert_sorted, partition_window

__all__ = ["band_certified", "eager_batch", "lazy_batch", "probe_bounds"]

U = 2.0**-53  # the unit roundoff, as workbench.decision.UNIT_ROUNDOFF
SIMPLE, SSORT, EAGER = 0, 1, 2  # the eager kernels' algorithms
VIOLATED, SATISFIED, UNSURE = 0, 1, 2  # a probe's verdict


@njit(cache=True, nogil=True)
def _numerator(z, a, b, base, width):
    """``2ab`` times the trapezoid's CDF at ``z``: the relu-square formula (Section 4.1)."""
    s = min(max(z - base, 0.0), width)
    sa = max(s - a, 0.0)
    sb = max(s - b, 0.0)
    return s * s - sa * sa - sb * sb


@njit(cache=True, nogil=True)
def band_certified(len_a, t_a, len_b, t_b, d):
    """P(|Xa - Xb| <= d) of intervals ``[t - len, t]`` and its proven error bound (Section
    4.1's trapezoid; the scalar twin of ``uniform_band_certified``)."""
    shift = t_a - t_b
    base = -len_b - shift
    width = len_a + len_b
    twice_ab = 2 * len_a * len_b
    band = _numerator(d, len_a, len_b, base, width) / twice_ab
    band = band - _numerator(-d, len_a, len_b, base, width) / twice_ab
    p = min(max(band, 0.0), 1.0)
    bound = U * (
        16 * (d + abs(shift) + width) / max(len_a, len_b)
        + 16 * width * width / (len_a * len_b)
        + 22
    )
    return p, bound


@njit(cache=True, nogil=True)
def _verdict(len_a, t_a, len_b, t_b, d, ct):
    """jc(d, ct) of one pair by the trapezoid (Section 4.1): VIOLATED, SATISFIED or UNSURE."""
    p, bound = band_certified(len_a, t_a, len_b, t_b, d)
    if abs(p - ct) <= bound:
        return UNSURE
    return SATISFIED if p >= ct else VIOLATED


@njit(cache=True, nogil=True)
def probe_bounds(lo, hi, d, ct, pi):
    """LH, LL, RL, RH of base ``[lo, hi]`` moved outwards by their rounding margin (Section
    4.1; ``bounds_tuple`` then ``widen``)."""
    lh, ll, rl, rh = lh_ll_rl_rh(lo, hi, d, ct, pi)
    length = hi - lo
    margin = 16 * U * (abs(hi) + d + pi + length)
    return lh - margin, ll + margin, rl - margin, rh + margin


@njit(cache=True, nogil=True)
def _evict(b_tmax, b_ids, b_tmpl, b_tmin, window, target, keep_sorted, now, delay, pi, d, ct):
    """Drop the target buffer's tuples below ``LH(e_inv)`` at clock ``now`` (Section 4.2's
    invalidation, less its rounding margin); how many left."""
    base = 1 - target
    bound = now - delay[base] - pi[base] + ct * pi[base] - d
    bound -= 16 * U * (abs(now) + abs(delay[base]) + abs(pi[base]) + abs(d))
    start, end = window[2 * target], window[2 * target + 1]
    tmax = b_tmax[target]
    if keep_sorted:
        new_start = evict_before(tmax, start, end, bound)
        window[2 * target] = new_start
        return new_start - start
    ids, tmpl, tmin = b_ids[target], b_tmpl[target], b_tmin[target]
    kept = start
    for k in range(start, end):  # compacted in arrival order
        if tmax[k] >= bound:
            ids[kept], tmpl[kept], tmax[kept], tmin[kept] = ids[k], tmpl[k], tmax[k], tmin[k]
            kept += 1
    window[2 * target + 1] = kept
    return end - kept


@njit(cache=True, nogil=True)
def _emit(pairs, n_pairs, stream, own, partner):
    """Write the pair (own of ``stream``, partner) at row ``n_pairs``."""
    pairs[n_pairs, stream] = own
    pairs[n_pairs, 1 - stream] = partner


@njit(cache=True, nogil=True)
def _flag(unsure, n_unsure, row, stream, template, t_det, partner_template, partner_tmax):
    """Record an unsure pair's row and arguments for the caller's exact path."""
    unsure[n_unsure, 0] = row
    unsure[n_unsure, 1] = stream
    unsure[n_unsure, 2] = template
    unsure[n_unsure, 3] = t_det
    unsure[n_unsure, 4] = partner_template
    unsure[n_unsure, 5] = partner_tmax


@njit(cache=True, nogil=True)
def eager_batch(
    first, last, kind, stream, ids, tmpl, t_det, tmin, arrival, late,
    b_ids, b_tmpl, b_tmax, b_tmin, window, tlen, pi, d, ct, delay, d_max, ct_min, counts,
    pairs, n_pairs, unsure, n_unsure,
):  # fmt: skip
    """Simple, SSort (Algorithm 1) and Eager (Algorithms 2-3) over rows ``[first, last)`` of
    a batch: per on-time arrival, probe the target (all of it, or LPR and RPR with SR joined
    unprobed), evict the target by ``LH(e_inv)`` at its clock, insert it.  Pairs and unsure
    ones are written after the first ``n_pairs`` / ``n_unsure`` rows of ``pairs`` / ``unsure``
    (grown when full); returns both arrays and their new row counts."""
    for i in range(first, last):
        if late[i]:
            continue
        s = stream[i]
        t = 1 - s
        start, end = window[2 * t], window[2 * t + 1]
        t_ids, t_tmpl, t_tmax = b_ids[t], b_tmpl[t], b_tmax[t]
        len_a = tlen[s, tmpl[i]]
        if kind == EAGER:
            lh, ll, rl, rh = probe_bounds(tmin[i], t_det[i], d, ct, pi[t])
            i_lh, i_sr, j_sr, j_rh = partition_window(t_tmax, start, end, lh, ll, rl, rh)
            pairs = grow(pairs, n_pairs, j_rh - i_lh)
            for pos in range(i_sr, j_sr):
                _emit(pairs, n_pairs, s, ids[i], t_ids[pos])
                n_pairs += 1
        else:
            i_lh, i_sr, j_sr, j_rh = start, end, end, end
            pairs = grow(pairs, n_pairs, end - start)
        unsure = grow(unsure, n_unsure, (i_sr - i_lh) + (j_rh - j_sr))
        for lo, hi in ((i_lh, i_sr), (j_sr, j_rh)):
            for pos in range(lo, hi):
                k = t_tmpl[pos]
                verdict = _verdict(len_a, t_det[i], tlen[t, k], t_tmax[pos], d, ct)
                _emit(pairs, n_pairs, s, ids[i], t_ids[pos])  # kept unless violated
                if verdict == UNSURE:
                    _flag(unsure, n_unsure, n_pairs, s, tmpl[i], t_det[i], k, t_tmax[pos])
                    n_unsure += 1
                else:
                    counts[0] += 1
                n_pairs += verdict != VIOLATED
        counts[2] += _evict(
            b_tmax, b_ids, b_tmpl, b_tmin, window, t, kind != SIMPLE,
            arrival[i], delay, pi, d_max, ct_min,
        )  # fmt: skip
        if kind == SIMPLE:  # appended in arrival order
            end = window[2 * s + 1]
            b_ids[s][end], b_tmpl[s][end] = ids[i], tmpl[i]
            b_tmax[s][end], b_tmin[s][end] = t_det[i], tmin[i]
            window[2 * s + 1] = end + 1
        else:
            window[2 * s + 1] = insert_sorted(
                b_ids[s], b_tmpl[s], b_tmax[s], b_tmin[s], window[2 * s], window[2 * s + 1],
                ids[i], tmpl[i], t_det[i], tmin[i],
            )  # fmt: skip
    return pairs, n_pairs, unsure, n_unsure


@njit(cache=True, nogil=True)
def _block_slices(s, btmin, btmax, b_tmax, window, pi, d, ct):
    """Each block tuple's ``(i_lh, i_sr, j_sr, j_rh)`` in the target buffer (Algorithm 5's
    binary searches, ``partition_slices`` of the widened bounds)."""
    t = 1 - s
    out = np.empty((btmax.size, 4), np.int64)
    for k in range(btmax.size):
        lh, ll, rl, rh = probe_bounds(btmin[k], btmax[k], d, ct, pi[t])
        start, end = window[2 * t], window[2 * t + 1]
        i_lh, i_sr, j_sr, j_rh = partition_window(b_tmax[t], start, end, lh, ll, rl, rh)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = i_lh, i_sr, j_sr, j_rh
    return out


@njit(cache=True, nogil=True)
def _plain_block(
    s, bid, btmpl, btmax, sl, b_ids, b_tmpl, b_tmax, tlen, d, ct,
    pairs, n_pairs, unsure, n_unsure, counts,
):  # fmt: skip
    """BlockTimingCorrelation (Algorithm 5) of one stream's sorted block: every SR pair, then
    the left probe regions' hits, then the right ones'."""
    t = 1 - s
    t_ids, t_tmpl, t_tmax = b_ids[t], b_tmpl[t], b_tmax[t]
    m = bid.size
    total = evals = 0
    for k in range(m):
        total += sl[k, 3] - sl[k, 0]
    pairs = grow(pairs, n_pairs, total)
    unsure = grow(unsure, n_unsure, total)
    for k in range(m):
        for pos in range(sl[k, 1], sl[k, 2]):
            _emit(pairs, n_pairs, s, bid[k], t_ids[pos])
            n_pairs += 1
    for lo_col, hi_col in ((0, 1), (2, 3)):
        for k in range(m):
            len_a = tlen[s, btmpl[k]]
            for pos in range(sl[k, lo_col], sl[k, hi_col]):
                v = t_tmpl[pos]
                verdict = _verdict(len_a, btmax[k], tlen[t, v], t_tmax[pos], d, ct)
                _emit(pairs, n_pairs, s, bid[k], t_ids[pos])  # kept unless violated
                if verdict == UNSURE:
                    _flag(unsure, n_unsure, n_pairs, s, btmpl[k], btmax[k], v, t_tmax[pos])
                    n_unsure += 1
                else:
                    evals += 1
                n_pairs += verdict != VIOLATED
    counts[0] += evals
    return pairs, n_pairs, unsure, n_unsure


@njit(cache=True, nogil=True)
def _lookup_block(
    s, bid, btmpl, btmax, btmin, sl, b_ids, b_tmpl, b_tmax, window, tlen, d, ct,
    pairs, n_pairs, counts,
):  # fmt: skip
    """LookupBlockTimingCorrelation (Algorithms 6-7) of one stream's sorted block: SR pairs,
    then the left probe regions from the last base tuple to the first and the right ones from
    first to last, reusing a stored *satisfied* verdict when ``min(e_new) <= min(e_b)`` (left)
    or ``>=`` (right).  Returns the pairs and False, nothing written, at an unsure probe."""
    t = 1 - s
    t_ids, t_tmpl, t_tmax = b_ids[t], b_tmpl[t], b_tmax[t]
    start = window[2 * t]
    m = bid.size
    total = 0
    for k in range(m):
        total += sl[k, 3] - sl[k, 0]
    pairs = grow(pairs, n_pairs, total)
    first = n_pairs
    for k in range(m):
        for pos in range(sl[k, 1], sl[k, 2]):
            _emit(pairs, n_pairs, s, bid[k], t_ids[pos])
            n_pairs += 1
    n_target = window[2 * t + 1] - start
    stored = np.zeros(n_target, np.int8)  # 0 notInit, 1 violated, 2 satisfied
    stored_min = np.zeros(n_target)
    hits = np.empty(n_target, np.int64)  # one base tuple's probed hits, after its reused ones
    evals = reuses = 0
    for side in (1.0, -1.0):  # left: min(e_new) <= min(e_b), i.e. side * (new - b) <= 0
        stored[:] = 0
        stored_min[:] = 0.0
        lo_col = 0 if side > 0 else 2
        for step in range(m):
            b = m - 1 - step if side > 0 else step
            len_a, own, own_min = tlen[s, btmpl[b]], bid[b], btmin[b]
            n_hits = 0
            for pos in range(sl[b, lo_col], sl[b, lo_col + 1]):
                r = pos - start
                state = stored[r]
                usable = (state > 0) & (side * (own_min - stored_min[r]) <= 0.0)
                if usable & (state == 2):
                    _emit(pairs, n_pairs, s, own, t_ids[pos])
                    n_pairs += 1
                    reuses += 1
                    continue
                v = t_tmpl[pos]
                verdict = _verdict(len_a, btmax[b], tlen[t, v], t_tmax[pos], d, ct)
                if verdict == UNSURE:
                    return pairs, first, False
                evals += 1
                # SetLookup where the table was not usable (written branch-free)
                stored[r] = state if usable else 1 + (verdict == SATISFIED)
                stored_min[r] = stored_min[r] if usable else own_min
                hits[n_hits] = t_ids[pos]
                n_hits += verdict == SATISFIED
            for h in range(n_hits):
                _emit(pairs, n_pairs, s, own, hits[h])
                n_pairs += 1
    counts[0] += evals
    counts[1] += reuses
    return pairs, n_pairs, True


@njit(cache=True, nogil=True)
def _merge_block(ids, tmpl, tmax, tmin, start, end, bid, btmpl, btmax, btmin):
    """Merge a sorted block into a buffer's window in place (Algorithm 4's insertion of the
    processed block), buffered tuples first among equal max times (as
    ``SortedBuffer.insert_many``); the new end."""
    i, j, k = end - 1, bid.size - 1, end + bid.size - 1
    while j >= 0:
        if i >= start and tmax[i] > btmax[j]:
            ids[k], tmpl[k], tmax[k], tmin[k] = ids[i], tmpl[i], tmax[i], tmin[i]
            i -= 1
        else:
            ids[k], tmpl[k], tmax[k], tmin[k] = bid[j], btmpl[j], btmax[j], btmin[j]
            j -= 1
        k -= 1
    return end + bid.size


@njit(cache=True, nogil=True)
def lazy_batch(
    first, last, lookup, stream, ids, tmpl, t_det, tmin, arrival, late,
    p_ids, p_tmpl, p_tmax, p_tmin, pending,
    b_ids, b_tmpl, b_tmax, b_tmin, window, tlen, pi, d, ct, delay, d_max, ct_min,
    max_pending, max_wait, last_eval, counts, pairs, n_pairs, unsure, n_unsure,
):  # fmt: skip
    """Lazy (Algorithms 4-5) and LazyWithLookup (Algorithms 6-7) over rows ``[first, last)``
    of a batch: on-time arrivals join the pending blocks (``pending``: their windows, as
    ``window``), a block is correlated at ``max_pending`` tuples or ``max_wait`` (NaN: never)
    since the last evaluation (``last_eval[0]``, NaN before the first arrival), part A then
    part B, then both buffers are invalidated.  Pairs and unsure ones are written as by
    :func:`eager_batch`; returns those arrays, their row counts and -1, -1, or, when a look-up
    part meets an unsure probe, (row, part) to finish outside, with the rows before it."""
    for i in range(first, last):
        if late[i]:
            continue
        now = arrival[i]
        s = stream[i]
        e = pending[2 * s + 1]
        p_ids[s][e], p_tmpl[s][e], p_tmax[s][e], p_tmin[s][e] = ids[i], tmpl[i], t_det[i], tmin[i]
        pending[2 * s + 1] = e + 1
        if math.isnan(last_eval[0]):
            last_eval[0] = now
        count = pending[1] - pending[0] + pending[3] - pending[2]
        if not (count >= max_pending or now - last_eval[0] >= max_wait):
            continue
        last_eval[0] = now
        for part in (0, 1):
            lo, hi = pending[2 * part], pending[2 * part + 1]
            if lo == hi:
                continue
            order = lo + np.argsort(p_tmax[part][lo:hi], kind="mergesort")
            bid, btmpl = p_ids[part][order], p_tmpl[part][order]
            btmax, btmin = p_tmax[part][order], p_tmin[part][order]
            sl = _block_slices(part, btmin, btmax, b_tmax, window, pi, d, ct)
            if lookup:
                pairs, n_pairs, done = _lookup_block(
                    part, bid, btmpl, btmax, btmin, sl, b_ids, b_tmpl, b_tmax, window, tlen,
                    d, ct, pairs, n_pairs, counts,
                )  # fmt: skip
                if not done:
                    return pairs, n_pairs, unsure, n_unsure, i, part
            else:
                pairs, n_pairs, unsure, n_unsure = _plain_block(
                    part, bid, btmpl, btmax, sl, b_ids, b_tmpl, b_tmax, tlen, d, ct,
                    pairs, n_pairs, unsure, n_unsure, counts,
                )  # fmt: skip
            window[2 * part + 1] = _merge_block(
                b_ids[part], b_tmpl[part], b_tmax[part], b_tmin[part],
                window[2 * part], window[2 * part + 1], bid, btmpl, btmax, btmin,
            )  # fmt: skip
            pending[2 * part] = pending[2 * part + 1] = 0
        for target in (0, 1):
            counts[2] += _evict(
                b_tmax, b_ids, b_tmpl, b_tmin, window, target, True, now, delay, pi, d_max, ct_min
            )
    return pairs, n_pairs, unsure, n_unsure, -1, -1
