"""Compiled PTJoin and band join over whole batches (PTJoin Section 3: the naive probe, the
loose partitions of Eq. 4-6, Theorem 3's tight partitions with Theorem 2's stime decisions,
Theorem 4 / Eq. 4 invalidation).

Each kernel runs the events of a batch in arrival order exactly as pushing them one by one
does: a late event only moves the clock; an on-time one probes the other stream's max-time
sorted buffer, evicts its obsolete prefix at that event's clock, then is inserted into its own
buffer.  Pairs come out in the reference's order.  A pair the certified float decision cannot
settle (a comparison inside a stime bracket, or a band probability within its proven bound of
delta) is emitted in place and *flagged*: the operator decides it exactly outside the kernel
and drops it if it fails, so results equal the reference bit for bit.

Buffers are the columns of :class:`~workbench.operators.buffers.SortedBuffer`, one pair of
arrays per column (stream A, stream B), with their live windows in ``bounds`` = ``[start_A,
end_A, start_B, end_B]`` (updated in place); the caller reserved room for the batch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.kernels.band import band_pair
from workbench.kernels.buffers import evict_before, insert_sorted, partition_window

__all__ = ["NAIVE", "LOOSE", "TIGHT", "band_join_batch", "ptjoin_batch"]

NAIVE, LOOSE, TIGHT = 0, 1, 2
"""Probe modes of :func:`ptjoin_batch`: every partner, Eq. 4-6, Theorem 3 (fast path)."""

_U = 2.0**-53  # UNIT_ROUNDOFF of workbench.decision


@njit(cache=True, nogil=True, inline="always")
def _emit(pairs, n, s, own, partner, keep=True):
    """Write pair ``n`` (``own`` of stream ``s``, ``partner`` of the other); the next free row,
    past it only if ``keep`` (no branch: the row is overwritten otherwise)."""
    pairs[n, s] = own
    pairs[n, 1 - s] = partner
    return n + keep


@njit(cache=True, nogil=True, inline="always")
def _flag(flags, flag_m, n_flag, pos, event, v, m):
    """Remember pair ``pos`` (event index, partner template and max time) for the exact path."""
    flags[n_flag, 0] = pos
    flags[n_flag, 1] = event
    flags[n_flag, 2] = v
    flag_m[n_flag] = m
    return n_flag + 1


@njit(cache=True, nogil=True, inline="always")
def _lemma2(inv_lo, inv_hi, sat_lo, sat_hi, v, t, m, d):
    """``StimeTable.verdicts`` for one pair straddling max(Hi): (surely joins, surely not)."""
    dt = m - t
    slack = 4 * _U * (abs(dt) + d)
    if dt >= 0:  # Eq. 8
        y = dt - d
        return y + slack <= sat_lo[v], y - slack > sat_hi[v]
    y = dt + d  # Eq. 9
    return y - slack >= inv_hi[v], y + slack < inv_lo[v]


@njit(cache=True, nogil=True, _nrt=False)
def ptjoin_batch(
    events,
    tmin,
    late,
    buffers,
    bounds,
    pairs,
    flags,
    flag_m,
    progress,
    counts,
    mode,
    params,
    streams,
    templates,
    k_max,
    scratch,
    tables,
    rows,
):
    """PTJoin over a batch (Section 3; naive, loose Eq. 4-6 or tight Theorem 3 by ``mode``).

    ``events`` = (stream, id, template, t_det, arrival); ``buffers`` = (ids, templates, max
    times, min times), each a pair of arrays (A, B); ``params`` = (d, delta, d_max of the
    envelope, whether Theorem 4 invalidates); ``streams`` = (D of the envelope, pi, Theorem
    4's t_min), each per stream; ``templates`` = both streams' local template packs
    (:class:`~workbench.decision.LocalTemplates`) with ``k_max`` and ``scratch`` for
    :func:`~workbench.kernels.band.band_pair`; ``tables`` = (inv_lo, inv_hi, sat_lo,
    sat_hi) and ``rows`` = (inv_min, inv_max, sat_min, sat_max, reach), each per arriving
    stream (the tight mode's stime brackets, Theorem 3).

    Pairs are written to ``pairs``; flagged ones to ``flags`` (pair index, event index,
    partner template) and ``flag_m`` (the partner's max time).  ``progress`` = (next event,
    pairs, flags) and ``counts`` = (prob_evals, stime_lookups, obsolete_removed) are updated
    in place.  The kernel stops before an event whose pairs or flags might not fit; the caller
    makes room and calls again.

    Per on-time event, one helper per step: the other buffer's partitions
    (:func:`_partition`), the surely-joining region's pairs, the probe regions' decisions
    (:func:`_probe_tight` by the stime brackets, else :func:`_probe_band` by the probability),
    then invalidation and insertion (:func:`_invalidate`, :func:`_evict_and_insert`).
    """
    stream, ids, tmpl, t_det, arrival = events
    b_ids, b_tmpl, b_tmax, _ = buffers
    n_pairs, n_flag = progress[1], progress[2]
    for i in range(progress[0], stream.size):
        if late[i]:
            continue
        s, o = stream[i], 1 - stream[i]
        start, end = bounds[2 * o], bounds[2 * o + 1]
        if pairs.shape[0] - n_pairs < end - start or flags.shape[0] - n_flag < end - start:
            progress[0], progress[1], progress[2] = i, n_pairs, n_flag
            return
        u, t, own = tmpl[i], t_det[i], ids[i]
        o_ids, o_tmpl, o_tmax = b_ids[o], b_tmpl[o], b_tmax[o]
        lo, i_sr, j_sr, hi, margin = _partition(
            mode, s, u, t, tmin[i], o_tmax, start, end, params[0], streams[1], rows, counts
        )
        for k in range(i_sr, j_sr):  # SR joins outright
            n_pairs = _emit(pairs, n_pairs, s, own, o_ids[k])
        probe = (i, s, u, t, own, lo, i_sr, j_sr, hi)
        partner = (o_ids, o_tmpl, o_tmax)
        out = (pairs, flags, flag_m)
        if mode == TIGHT:
            n_pairs, n_flag = _probe_tight(
                probe, partner, out, n_pairs, n_flag, margin, params[0], tables
            )
        else:
            n_pairs, n_flag = _probe_band(
                probe, partner, out, n_pairs, n_flag, params, templates, k_max, scratch, counts
            )
        bound = _invalidate(arrival[i], s, params, streams)
        counts[2] += _evict_and_insert(buffers, bounds, s, bound, own, u, t, tmin[i])
    progress[0], progress[1], progress[2] = stream.size, n_pairs, n_flag


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _partition(mode, s, u, t, t_min, o_tmax, start, end, d, pi, rows, counts):
    """The other buffer's live rows ``[start, end)`` split into the left probe region ``[lo,
    i_sr)``, the surely-joining region ``[i_sr, j_sr)`` and the right probe region ``[j_sr,
    hi)`` for an event of stream ``s`` (template ``u``, max time ``t``, min time ``t_min``),
    and the rounding margin the bounds were widened by: everything probed (naive), the loose
    partitions of Eq. 4-6, or Theorem 3's tight partitions (stime brackets ``rows``; the
    look-ups counted)."""
    if mode == NAIVE:
        return start, end, end, end, 0.0  # everything is probed, in buffer order
    if mode == LOOSE:
        pi_b = pi[1 - s]
        margin = 16 * _U * (abs(t) + abs(d) + abs(pi_b) + abs(t - t_min))
        lo, i_sr, j_sr, hi = partition_window(
            o_tmax, start, end, t_min - d - margin, t - d + pi_b + margin,
            t_min + d - margin, t + d + pi_b + margin,
        )  # fmt: skip
        return lo, i_sr, j_sr, hi, margin
    margin = 16 * _U * (abs(t) + d + rows[4][s][u])
    lo, i_sr, j_sr, hi = partition_window(
        o_tmax, start, end, rows[0][s][u] + t - d - margin, rows[1][s][u] + t - d + margin,
        rows[2][s][u] + t + d - margin, rows[3][s][u] + t + d + margin,
    )  # fmt: skip
    counts[1] += (i_sr - lo) + (hi - j_sr)
    return lo, i_sr, j_sr, hi, margin


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _probe_tight(probe, partner, out, n_pairs, n_flag, margin, d, tables):
    """Theorem 3's probe regions decided by the stime brackets of the event's template:
    Eq. 9 (left region wholly before max(Hi)) and Eq. 8 (right region wholly after) against
    the bracket ends, each sum widened by 1.5 margin; else Lemma 2's cases.  A pair inside a
    bracket is kept and flagged.  ``probe`` = (event index, stream, template, max time, id,
    lo, i_sr, j_sr, hi), ``partner`` = the other buffer's (ids, templates, max times), ``out``
    = (pairs, flags, flag_m); the new pair and flag counts."""
    i, s, u, t, own, lo, i_sr, j_sr, hi = probe
    o_ids, o_tmpl, o_tmax = partner
    pairs, flags, flag_m = out
    inv_lo, inv_hi = tables[0][s][u], tables[1][s][u]
    sat_lo, sat_hi = tables[2][s][u], tables[3][s][u]
    shift = 1.5 * margin
    before = lo < i_sr and o_tmax[i_sr - 1] < t
    c_join, c_maybe = t - d + shift, t - d - shift
    for k in range(lo, i_sr):
        v, m = o_tmpl[k], o_tmax[k]
        if before:
            yes, no = m >= inv_hi[v] + c_join, m < inv_lo[v] + c_maybe
        else:
            yes, no = _lemma2(inv_lo, inv_hi, sat_lo, sat_hi, v, t, m, d)
        if not (yes or no):
            n_flag = _flag(flags, flag_m, n_flag, n_pairs, i, v, m)
        n_pairs = _emit(pairs, n_pairs, s, own, o_ids[k], yes or not no)
    after = j_sr < hi and o_tmax[j_sr] >= t
    c_join, c_maybe = t + d - shift, t + d + shift
    for k in range(j_sr, hi):
        v, m = o_tmpl[k], o_tmax[k]
        if after:
            yes, no = m <= sat_lo[v] + c_join, m > sat_hi[v] + c_maybe
        else:
            yes, no = _lemma2(inv_lo, inv_hi, sat_lo, sat_hi, v, t, m, d)
        if not (yes or no):
            n_flag = _flag(flags, flag_m, n_flag, n_pairs, i, v, m)
        n_pairs = _emit(pairs, n_pairs, s, own, o_ids[k], yes or not no)
    return n_pairs, n_flag


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _probe_band(probe, partner, out, n_pairs, n_flag, params, templates, k_max, scratch, counts):
    """The probe regions decided by the certified band probability against delta (Eq. 1; the
    naive and loose modes): a pair within the probability's proven bound of delta is kept and
    flagged.  Arguments as :func:`_probe_tight`'s; the new pair and flag counts."""
    i, s, u, t, own, lo, i_sr, j_sr, hi = probe
    o_ids, o_tmpl, o_tmax = partner
    pairs, flags, flag_m = out
    d, delta = params[0], params[1]
    ae, ap, an, aq, _ = templates[s]
    be, bp, bn, bq, bt = templates[1 - s]
    counts[0] += (i_sr - lo) + (hi - j_sr)
    for a, b in ((lo, i_sr), (j_sr, hi)):
        for k in range(a, b):
            v, m = o_tmpl[k], o_tmax[k]
            p, bound = band_pair(
                ae, ap, an, aq, u, be, bp, bn, bq, bt, v, t - m, d, True, k_max, scratch
            )
            unsure = abs(p - delta) <= bound
            if unsure:
                n_flag = _flag(flags, flag_m, n_flag, n_pairs, i, v, m)
            n_pairs = _emit(pairs, n_pairs, s, own, o_ids[k], unsure or p >= delta)
    return n_pairs, n_flag


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _invalidate(arrival, s, params, streams):
    """The max time below which the other buffer's events are obsolete at the clock of an
    event of stream ``s`` that arrived at ``arrival``: Theorem 4 (with the stream's t_min), or
    Eq. 4's horizon, less its rounding margin."""
    d_max, theorem4 = params[2], params[3]
    env_delay, pi, t_min = streams
    horizon = arrival - env_delay[s]
    margin = 16 * _U * (abs(horizon) + d_max + pi[s])
    if theorem4:
        return horizon - d_max + t_min[s] - margin
    return horizon - pi[s] - d_max - margin


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _evict_and_insert(buffers, bounds, s, bound, event_id, template, t, t_min):
    """Invalidate the other stream's buffer below ``bound``, then insert the event of stream
    ``s`` at its max-time position (PTJoin Section 3.2); how many events left."""
    b_ids, b_tmpl, b_tmax, b_tmin = buffers
    o = 1 - s
    start = bounds[2 * o]
    bounds[2 * o] = evict_before(b_tmax[o], start, bounds[2 * o + 1], bound)
    bounds[2 * s + 1] = insert_sorted(
        b_ids[s], b_tmpl[s], b_tmax[s], b_tmin[s], bounds[2 * s], bounds[2 * s + 1],
        event_id, template, t, t_min,
    )  # fmt: skip
    return bounds[2 * o] - start


@njit(cache=True, nogil=True, _nrt=False)
def band_join_batch(
    events, tmin, late, buffers, bounds, pairs, progress, counts, d, env_delay, d_max
):
    """The deterministic band join ``|max(H_a) - max(H_b)| <= d`` over a batch, evicting at
    ``now - D - d_max`` (PTJoin Section 3's buffers without a probability).

    Arguments as :func:`ptjoin_batch`: ``progress`` = (next event, pairs), ``counts`` =
    (obsolete_removed,)."""
    stream, ids, tmpl, t_det, arrival = events
    b_ids, b_tmpl, b_tmax, b_tmin = buffers
    n_pairs = progress[1]
    for i in range(progress[0], stream.size):
        if late[i]:
            continue
        s, o = stream[i], 1 - stream[i]
        start, end = bounds[2 * o], bounds[2 * o + 1]
        if pairs.shape[0] - n_pairs < end - start:
            progress[0], progress[1] = i, n_pairs
            return
        t, own = t_det[i], ids[i]
        live = b_tmax[o][start:end]
        lo = start + np.searchsorted(live, t - d, side="left")
        hi = start + np.searchsorted(live, t + d, side="right")
        o_ids = b_ids[o]
        for k in range(lo, hi):
            n_pairs = _emit(pairs, n_pairs, s, own, o_ids[k])
        bound = arrival[i] - env_delay[s] - d_max
        counts[0] += _evict_and_insert(buffers, bounds, s, bound, ids[i], tmpl[i], t, tmin[i])
    progress[0], progress[1] = stream.size, n_pairs
