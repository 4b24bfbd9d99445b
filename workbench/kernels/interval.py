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

The kernels take typed bundles (named tuples of arrays, as numba passes them): the batch's
columns (:class:`Batch`), two buffers (:class:`Buffers`: their columns, each a pair of arrays
for stream A then B, and their live windows), the join's parameters (:class:`Params`), the lazy
triggers (:class:`Triggers`) and the output written so far (:class:`Written`); ``counts``
accumulates ``[prob_evals, lookup_reuses, obsolete_removed]``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from workbench.kernels.buffers import evict_before, grow, insert_sorted, partition_window
from workbench.kernels.interval_bounds import lh_ll_rl_rh

__all__ = [
    "Batch",
    "Buffers",
    "Params",
    "Triggers",
    "Written",
    "band_certified",
    "eager_batch",
    "lazy_batch",
    "probe_bounds",
]

U = 2.0**-53  # the unit roundoff, as workbench.decision.UNIT_ROUNDOFF
SIMPLE, SSORT, EAGER = 0, 1, 2  # the eager kernels' algorithms
VIOLATED, SATISFIED, UNSURE = 0, 1, 2  # a probe's verdict


class Batch(NamedTuple):
    """A batch's columns in arrival order (int64 but ``t_det``, ``tmin``, ``arrival``: float64;
    ``late``: bool)."""

    stream: np.ndarray
    ids: np.ndarray
    tmpl: np.ndarray
    t_det: np.ndarray
    tmin: np.ndarray
    arrival: np.ndarray
    late: np.ndarray


class Buffers(NamedTuple):
    """Two buffers' columns, each the pair (stream A, stream B) of preallocated arrays, and their
    live windows ``[start_A, end_A, start_B, end_B]`` (moved in place): the max-time buffers
    of :func:`~workbench.operators.buffers.kernel_state`, or the lazy algorithms' pending
    blocks (unsorted, in arrival order)."""

    ids: tuple[np.ndarray, np.ndarray]
    tmpl: tuple[np.ndarray, np.ndarray]
    tmax: tuple[np.ndarray, np.ndarray]
    tmin: tuple[np.ndarray, np.ndarray]
    window: np.ndarray


class Params(NamedTuple):
    """The join's parameters: template lengths per (stream, template), the streams' longest
    templates ``pi``, ``d`` and ``ct``, and the envelope's eviction parameters (max delays per
    stream, ``d_max``, ``ct_min``)."""

    tlen: np.ndarray
    pi: np.ndarray
    d: float
    ct: float
    delay: np.ndarray
    d_max: float
    ct_min: float


class Triggers(NamedTuple):
    """When a lazy block is correlated: at ``max_pending`` waiting tuples or ``max_wait`` (NaN:
    never) since the last evaluation, ``last_eval[0]`` (NaN before the first arrival; moved in
    place)."""

    max_pending: int
    max_wait: float
    last_eval: np.ndarray


class Written(NamedTuple):
    """The output so far: pairs and unsure ones (row, stream, template, t_det, partner template,
    partner max time) in their first ``n_pairs`` / ``n_unsure`` rows; a kernel returns a new
    one (the arrays grow when full)."""

    pairs: np.ndarray
    n_pairs: int
    unsure: np.ndarray
    n_unsure: int


class Block(NamedTuple):
    """One stream's pending block sorted by max time (Algorithm 4): ids, templates, max and min
    times."""

    ids: np.ndarray
    tmpl: np.ndarray
    tmax: np.ndarray
    tmin: np.ndarray


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
def _evict(buffers, target, keep_sorted, now, params):
    """Drop the target buffer's tuples below ``LH(e_inv)`` at clock ``now`` (Section 4.2's
    invalidation, less its rounding margin; the envelope's ``d_max`` and ``ct_min``); how many
    left.  Mirrored by ``IntervalCorrelation._eviction_bound``."""
    base = 1 - target
    delay, pi, d, ct = params.delay, params.pi, params.d_max, params.ct_min
    bound = now - delay[base] - pi[base] + ct * pi[base] - d
    bound -= 16 * U * (abs(now) + abs(delay[base]) + abs(pi[base]) + abs(d))
    window = buffers.window
    start, end = window[2 * target], window[2 * target + 1]
    tmax = buffers.tmax[target]
    if keep_sorted:
        new_start = evict_before(tmax, start, end, bound)
        window[2 * target] = new_start
        return new_start - start
    ids, tmpl, tmin = buffers.ids[target], buffers.tmpl[target], buffers.tmin[target]
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
def _probe_range(s, own, template, t_det, lo, hi, buffers, params, counts, out):
    """Probe the other stream's buffer rows ``[lo, hi)`` for one base tuple by the trapezoid
    (Section 4.1): a pair is written unless violated, an unsure one flagged in place."""
    t = 1 - s
    t_ids, t_tmpl, t_tmax = buffers.ids[t], buffers.tmpl[t], buffers.tmax[t]
    tlen, d, ct = params.tlen, params.d, params.ct
    pairs, n_pairs, unsure, n_unsure = out
    len_a = tlen[s, template]
    for pos in range(lo, hi):
        k = t_tmpl[pos]
        verdict = _verdict(len_a, t_det, tlen[t, k], t_tmax[pos], d, ct)
        _emit(pairs, n_pairs, s, own, t_ids[pos])  # kept unless violated
        if verdict == UNSURE:
            _flag(unsure, n_unsure, n_pairs, s, template, t_det, k, t_tmax[pos])
            n_unsure += 1
        else:
            counts[0] += 1
        n_pairs += verdict != VIOLATED
    return Written(pairs, n_pairs, unsure, n_unsure)


@njit(cache=True, nogil=True)
def _insert(buffers, s, keep_sorted, own, template, t_det, tmin):
    """Insert a tuple into its stream's buffer: at its max-time position, or appended in
    arrival order (Simple)."""
    window = buffers.window
    if keep_sorted:
        window[2 * s + 1] = insert_sorted(
            buffers.ids[s], buffers.tmpl[s], buffers.tmax[s], buffers.tmin[s],
            window[2 * s], window[2 * s + 1], own, template, t_det, tmin,
        )  # fmt: skip
        return
    end = window[2 * s + 1]
    buffers.ids[s][end], buffers.tmpl[s][end] = own, template
    buffers.tmax[s][end], buffers.tmin[s][end] = t_det, tmin
    window[2 * s + 1] = end + 1


@njit(cache=True, nogil=True)
def eager_batch(batch, first, last, kind, buffers, params, counts, out):
    """Simple, SSort (Algorithm 1) and Eager (Algorithms 2-3) over rows ``[first, last)`` of
    ``batch``: per on-time arrival, probe the target (all of it, or LPR and RPR with SR joined
    unprobed), evict the target by ``LH(e_inv)`` at its clock, insert it.  Pairs and unsure
    ones are written after those of ``out`` (grown when full); returns the new
    :class:`Written`.  Mirrored by the ``_join`` of ``SimpleCorrelation`` and
    ``EagerCorrelation`` (the Python references)."""
    window = buffers.window
    for i in range(first, last):
        if batch.late[i]:
            continue
        s, own, template, t_det = batch.stream[i], batch.ids[i], batch.tmpl[i], batch.t_det[i]
        t = 1 - s
        start, end = window[2 * t], window[2 * t + 1]
        pairs, n_pairs, unsure, n_unsure = out
        if kind == EAGER:
            lh, ll, rl, rh = probe_bounds(batch.tmin[i], t_det, params.d, params.ct, params.pi[t])
            i_lh, i_sr, j_sr, j_rh = partition_window(buffers.tmax[t], start, end, lh, ll, rl, rh)
            pairs = grow(pairs, n_pairs, j_rh - i_lh)
            for pos in range(i_sr, j_sr):
                _emit(pairs, n_pairs, s, own, buffers.ids[t][pos])
                n_pairs += 1
        else:
            i_lh, i_sr, j_sr, j_rh = start, end, end, end
            pairs = grow(pairs, n_pairs, end - start)
        unsure = grow(unsure, n_unsure, (i_sr - i_lh) + (j_rh - j_sr))
        out = Written(pairs, n_pairs, unsure, n_unsure)
        for lo, hi in ((i_lh, i_sr), (j_sr, j_rh)):
            out = _probe_range(s, own, template, t_det, lo, hi, buffers, params, counts, out)
        counts[2] += _evict(buffers, t, kind != SIMPLE, batch.arrival[i], params)
        _insert(buffers, s, kind != SIMPLE, own, template, t_det, batch.tmin[i])
    return out


@njit(cache=True, nogil=True)
def _block_slices(s, block, buffers, params):
    """Each block tuple's ``(i_lh, i_sr, j_sr, j_rh)`` in the target buffer (Algorithm 5's
    binary searches, ``partition_slices`` of the widened bounds)."""
    t = 1 - s
    out = np.empty((block.tmax.size, 4), np.int64)
    start, end = buffers.window[2 * t], buffers.window[2 * t + 1]
    for k in range(block.tmax.size):
        lh, ll, rl, rh = probe_bounds(
            block.tmin[k], block.tmax[k], params.d, params.ct, params.pi[t]
        )
        i_lh, i_sr, j_sr, j_rh = partition_window(buffers.tmax[t], start, end, lh, ll, rl, rh)
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = i_lh, i_sr, j_sr, j_rh
    return out


@njit(cache=True, nogil=True)
def _satisfied_pairs(s, block, sl, buffers, pairs, n_pairs):
    """Every block tuple's SR pairs, joined unprobed (Algorithm 5 lines 4-9), after room for
    all its probe regions too; the pairs array and its new row count."""
    t_ids = buffers.ids[1 - s]
    total = 0
    for k in range(block.ids.size):
        total += sl[k, 3] - sl[k, 0]
    pairs = grow(pairs, n_pairs, total)
    for k in range(block.ids.size):
        for pos in range(sl[k, 1], sl[k, 2]):
            _emit(pairs, n_pairs, s, block.ids[k], t_ids[pos])
            n_pairs += 1
    return pairs, n_pairs, total


@njit(cache=True, nogil=True)
def _plain_block(s, block, sl, buffers, params, counts, out):
    """BlockTimingCorrelation (Algorithm 5) of one stream's sorted block: every SR pair, then
    the left probe regions' hits, then the right ones'.  Mirrored by
    ``LazyCorrelation._correlate_block``."""
    pairs, n_pairs, unsure, n_unsure = out
    pairs, n_pairs, total = _satisfied_pairs(s, block, sl, buffers, pairs, n_pairs)
    out = Written(pairs, n_pairs, grow(unsure, n_unsure, total), n_unsure)
    for lo_col, hi_col in ((0, 1), (2, 3)):
        for k in range(block.ids.size):
            out = _probe_range(
                s, block.ids[k], block.tmpl[k], block.tmax[k], sl[k, lo_col], sl[k, hi_col],
                buffers, params, counts, out,
            )  # fmt: skip
    return out


@njit(cache=True, nogil=True)
def _lookup_block(s, block, sl, buffers, params, counts, out):
    """LookupBlockTimingCorrelation (Algorithms 6-7) of one stream's sorted block: SR pairs,
    then the left probe regions from the last base tuple to the first and the right ones from
    first to last, reusing a stored *satisfied* verdict when ``min(e_new) <= min(e_b)`` (left)
    or ``>=`` (right).  Returns the output and False, nothing written, at an unsure probe.
    Mirrored by ``LazyLookupCorrelation._correlate_block``."""
    t = 1 - s
    t_ids, t_tmpl, t_tmax = buffers.ids[t], buffers.tmpl[t], buffers.tmax[t]
    tlen, d, ct = params.tlen, params.d, params.ct
    start = buffers.window[2 * t]
    m = block.ids.size
    pairs, n_pairs, total = _satisfied_pairs(s, block, sl, buffers, out.pairs, out.n_pairs)
    n_target = buffers.window[2 * t + 1] - start
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
            len_a, own, own_min = tlen[s, block.tmpl[b]], block.ids[b], block.tmin[b]
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
                verdict = _verdict(len_a, block.tmax[b], tlen[t, v], t_tmax[pos], d, ct)
                if verdict == UNSURE:
                    return Written(pairs, out.n_pairs, out.unsure, out.n_unsure), False
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
    return Written(pairs, n_pairs, out.unsure, out.n_unsure), True


@njit(cache=True, nogil=True)
def _merge_block(buffers, s, block):
    """Merge a sorted block into stream ``s``'s buffer window in place (Algorithm 4's
    insertion of the processed block), buffered tuples first among equal max times (as
    ``SortedBuffer.insert_many``)."""
    ids, tmpl, tmax, tmin = buffers.ids[s], buffers.tmpl[s], buffers.tmax[s], buffers.tmin[s]
    start, end = buffers.window[2 * s], buffers.window[2 * s + 1]
    i, j, k = end - 1, block.ids.size - 1, end + block.ids.size - 1
    while j >= 0:
        if i >= start and tmax[i] > block.tmax[j]:
            ids[k], tmpl[k], tmax[k], tmin[k] = ids[i], tmpl[i], tmax[i], tmin[i]
            i -= 1
        else:
            ids[k], tmpl[k] = block.ids[j], block.tmpl[j]
            tmax[k], tmin[k] = block.tmax[j], block.tmin[j]
            j -= 1
        k -= 1
    buffers.window[2 * s + 1] = end + block.ids.size


@njit(cache=True, nogil=True)
def _sorted_block(pending, s):
    """Stream ``s``'s pending tuples sorted by max time, stable (Algorithm 4)."""
    lo, hi = pending.window[2 * s], pending.window[2 * s + 1]
    order = lo + np.argsort(pending.tmax[s][lo:hi], kind="mergesort")
    return Block(pending.ids[s][order], pending.tmpl[s][order], pending.tmax[s][order],
                 pending.tmin[s][order])  # fmt: skip


@njit(cache=True, nogil=True)
def _due(pending, triggers, now):
    """Whether the pending blocks are correlated at clock ``now`` (the triggers), moving the
    last evaluation's clock when they are (or at the first arrival)."""
    last_eval = triggers.last_eval
    if math.isnan(last_eval[0]):
        last_eval[0] = now
    window = pending.window
    count = window[1] - window[0] + window[3] - window[2]
    if not (count >= triggers.max_pending or now - last_eval[0] >= triggers.max_wait):
        return False
    last_eval[0] = now
    return True


@njit(cache=True, nogil=True)
def lazy_batch(batch, first, last, lookup, pending, buffers, params, triggers, counts, out):
    """Lazy (Algorithms 4-5) and LazyWithLookup (Algorithms 6-7) over rows ``[first, last)``
    of ``batch``: on-time arrivals join the ``pending`` blocks, a block is correlated when the
    ``triggers`` say so, part A then part B, then both buffers are invalidated.  Pairs and
    unsure ones are written as by :func:`eager_batch`; returns the new :class:`Written` and
    -1, -1, or, when a look-up part meets an unsure probe, (row, part) to finish outside, with
    the rows before it.  Mirrored by ``LazyCorrelation._join`` (the Python reference)."""
    for i in range(first, last):
        if batch.late[i]:
            continue
        now, s = batch.arrival[i], batch.stream[i]
        _insert(pending, s, False, batch.ids[i], batch.tmpl[i], batch.t_det[i], batch.tmin[i])
        if not _due(pending, triggers, now):
            continue
        for part in (0, 1):
            if pending.window[2 * part] == pending.window[2 * part + 1]:
                continue
            block = _sorted_block(pending, part)
            sl = _block_slices(part, block, buffers, params)
            if lookup:
                out, done = _lookup_block(part, block, sl, buffers, params, counts, out)
                if not done:
                    return out, i, part
            else:
                out = _plain_block(part, block, sl, buffers, params, counts, out)
            _merge_block(buffers, part, block)
            pending.window[2 * part] = pending.window[2 * part + 1] = 0
        for target in (0, 1):
            counts[2] += _evict(buffers, target, True, now, params)
    return out, -1, -1
