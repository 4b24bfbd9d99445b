"""The coalescing paper's synthetic stream (Section 7.1): pushes of one time-varying attribute
in groups of one time-invariant one, with a given cp and oop defined in arrival order
(:func:`coalescing_rows`), the out-of-order fraction it can reach (:func:`coalescing_max_oop`)."""

from __future__ import annotations

import numpy as np

__all__ = ["COALESCING_GROUPS", "COALESCING_LATE_RUN", "coalescing_max_oop", "coalescing_rows"]

COALESCING_GROUPS = 3
"""The groups of :func:`coalescing_rows` (Section 7.1's first time-invariant attribute)."""

COALESCING_LATE_RUN = 49
"""The most late arrivals :func:`coalescing_rows` gives a group in a row: after that many its
next arrival is in order, so oop reaches at most ``49 / 50 = 0.98`` (oop = 1 cannot be had,
see there) and a late tuple stays within a few hundred tuples of the largest timestamp."""


def coalescing_max_oop(late_run: int = COALESCING_LATE_RUN) -> float:
    """The largest out-of-order fraction :func:`coalescing_rows` reaches (at ``oop = 1``):
    ``late_run`` late arrivals for every one in order, less each group's first arrival.

    >>> coalescing_max_oop()
    0.98
    """
    return late_run / (late_run + 1)


def coalescing_rows(
    rng: np.random.Generator,
    n: int,
    cp: float,
    oop: float,
    late_run: int = COALESCING_LATE_RUN,
) -> list[tuple[float, int, int]]:
    """A synthetic coalescing stream (coalescing paper, Section 7.1) as pushes of one
    time-varying attribute grouped by one time-invariant one (:data:`COALESCING_GROUPS`
    groups): ``(ts, value, group)`` in arrival order, with coalescing probability ``cp`` and
    out-of-order probability ``oop``.

    Both probabilities are defined in *arrival* order, as Table 4 defines ``cp_i`` and
    ``oop_i`` per arriving tuple: an arrival's value equals the previous arrival's value of
    its group with probability ``cp`` (else a fresh value from a large range), and with
    probability ``oop`` it is late (its timestamp below the largest so far, Algorithm 1's
    ``s_latest``): it falls between its group's two latest timestamps, inside the run (if
    any) its group's previous arrival ends.  A group's first arrival is in order.

    **Timestamps.**  The stream's timestamps are ``n`` clock readings (gaps uniform in [0.5,
    1.5)), each used once, so every cell of the grid has the same ``n`` distinct timestamps
    and a time window holds about as many tuples whatever oop is.  An arrival in order takes
    the reading ``r + 1`` places above the largest one taken, where ``r`` is the number of late
    arrivals its group makes before its next arrival in order (read ahead in the draws), and
    leaves the ``r`` readings below it to them, in arrival order: each late one lands above its
    group's previous arrival and below the group's latest timestamp, so a group's tuples are in
    the order described above.

    **oop = 1 cannot be had.**  The first arrival is in order, and only an arrival in order
    moves the largest timestamp, the clock of a time window (Algorithm 1's time-based Lines
    1-4): if every later arrival were late, a time window would never expire a tuple by time
    (it would hold the whole stream), and the late ones would have to squeeze below one
    timestamp.  So a group's arrival after ``late_run`` late ones in a row is in order
    (:data:`COALESCING_LATE_RUN` = 49 by default): the out-of-order fraction follows ``oop``
    to about 0.001 up to oop = 0.9 and reaches :func:`coalescing_max_oop` (0.98) at oop = 1,
    its late tuples within a few hundred readings of the largest (a 1,000-tuple time window
    then holds about 94 % of what it holds at oop = 0.5 and drops none as too late).

    Splits: Eq. 3 charges ``C_split`` on the late arrivals that do not coalesce, ``oop x (1 -
    cp)`` of them (Algorithm 2, Line 18, which calls ``splitTuple`` whatever the target
    holds); a run is cut only when the late one lands inside it, between two equal values
    (probability cp by Table 4's cp_i, whatever its lateness: Eq. 3 multiplies ``oop_i`` and
    ``cp_i``) and differs (``1 - cp``), so an eager extent's split counter is about ``oop x cp
    x (1 - cp)`` of arrivals, less at high oop, where a late arrival lands next to its group's
    previous late one.  Every cut uses up a run's inner gap, which only a merge makes, so no
    generator cuts more runs than it merges tuples (about cp per arrival);
    :mod:`~workbench.experiments.coalescing_mechanisms` measures both counts
    (``split_paths``).

    (Until issue 48 the values were drawn in timestamp order and late tuples displaced
    afterwards, so a late tuple re-entered the run it had been taken from and never cut one:
    the split counter was 0 in every cell.  Until 2026-11-28 a late tuple took a point
    between its group's two latest timestamps, a fraction of their gap: at oop = 1 no arrival
    was in order, and 200,000 tuples collapsed onto 162 distinct timestamps, measured oop
    0.67, the time window holding the whole stream.)

    >>> rows = coalescing_rows(np.random.default_rng(0), 5, cp=1.0, oop=0.0)
    >>> len(rows), len(rows[0]), len({v for _, v, _ in rows}) <= COALESCING_GROUPS
    (5, 3, True)
    >>> ts = [t for t, _, _ in coalescing_rows(np.random.default_rng(0), 1000, 0.5, 1.0)]
    >>> len(set(ts)), sum(t < max(ts[:i]) for i, t in enumerate(ts) if i) / len(ts)
    (1000, 0.978)
    """
    if not 0 <= cp <= 1:
        raise ValueError(f"cp = {cp!r} must lie in [0, 1]")
    if not 0 <= oop <= 1:
        raise ValueError(f"oop = {oop!r} must lie in [0, 1]")
    if late_run < 0:
        raise ValueError(f"late_run = {late_run!r} must be >= 0")
    group = rng.integers(0, COALESCING_GROUPS, n)
    repeat = rng.random(n) < cp
    fresh = rng.integers(0, 1 << 30, n)
    drawn_late = rng.random(n) < oop
    clock = np.cumsum(rng.uniform(0.5, 1.5, n))
    late = _late_arrivals(group, drawn_late, late_run)
    ts = clock[_clock_places(group, late)]
    value = _arrival_values(group, repeat, fresh)
    return list(zip(ts.tolist(), value.tolist(), group.tolist(), strict=True))


def _late_arrivals(group: np.ndarray, drawn: np.ndarray, late_run: int) -> np.ndarray:
    """Which arrivals are late: those drawn late, but never a group's first arrival nor one
    after ``late_run`` late arrivals of its group in a row (:func:`coalescing_rows`)."""
    late = np.zeros(len(group), dtype=bool)
    run = [-1] * COALESCING_GROUPS  # per group: late arrivals in a row, -1 before its first
    for i, (g, want) in enumerate(zip(group.tolist(), drawn.tolist(), strict=True)):
        late[i] = want and 0 <= run[g] < late_run
        run[g] = run[g] + 1 if late[i] else 0
    return late


def _clock_places(group: np.ndarray, late: np.ndarray) -> np.ndarray:
    """Each arrival's place among the sorted clock readings (:func:`coalescing_rows`): an
    arrival in order ``room + 1`` above the largest taken, ``room`` its group's late arrivals
    before its next in order; the late ones fill the readings it skipped, in arrival order."""
    n = len(group)
    room = np.zeros(n, dtype=np.int64)  # at an arrival in order: the readings it leaves below
    head = np.zeros(n, dtype=np.int64)  # each arrival's last arrival in order of its group
    rank = np.zeros(n, dtype=np.int64)  # its place after that one (0 for the one in order)
    for g in range(COALESCING_GROUPS):
        mine = np.flatnonzero(group == g)
        if not len(mine):
            continue
        block = np.cumsum(~late[mine]) - 1  # a group's first arrival is in order: block 0
        heads = mine[~late[mine]]
        head[mine] = heads[block]
        room[heads] = np.bincount(block, minlength=len(heads)) - 1
        rank[mine] = np.arange(len(mine)) - np.searchsorted(block, block)
    top = np.cumsum(np.where(late, 0, room + 1)) - 1  # at an arrival in order: its place
    return np.where(late, (top - room)[head] + rank - 1, top)


def _arrival_values(group: np.ndarray, repeat: np.ndarray, fresh: np.ndarray) -> np.ndarray:
    """Each arrival's value: its group's previous arrival's where ``repeat`` (and the group
    had one), else its own ``fresh`` one (cp in arrival order, Table 4's cp_i)."""
    value = np.empty(len(group), dtype=np.int64)
    for g in range(COALESCING_GROUPS):
        mine = np.flatnonzero(group == g)
        new = ~repeat[mine]
        new[:1] = True
        source = np.maximum.accumulate(np.where(new, np.arange(len(mine)), 0))
        value[mine] = fresh[mine[source]]
    return value
