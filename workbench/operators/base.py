"""The incremental protocol shared by every two-stream timing join.

``push(stream, event_id, template, t_det, arrival) -> Matches``, ``flush() -> Matches`` and
``counters``.  Time is an input: the operator's clock is the arrival time of the events it is
given (non-decreasing), never the wall clock.  An event is late when it arrives after
``t_det + D`` of its stream (PTJoin Definition 6): it is counted and reported, never joined.
Partners are kept in max-time sorted buffers (PTJoin Section 3.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from workbench.decision import UNIT_ROUNDOFF, BandDecider
from workbench.events import Events
from workbench.timestamps import TemplateSet, pack_histograms

__all__ = [
    "STREAMS",
    "BadEventError",
    "BadPolicy",
    "Counters",
    "Envelope",
    "Matches",
    "SortedBuffer",
    "StreamSpec",
    "TwoStreamJoin",
    "expand_ranges",
    "partition_slice",
    "partition_slices",
    "replay",
    "rounding_margin",
    "widen",
]

STREAMS = ("A", "B")
"""The two input streams; events name theirs as "A"/"B" or 0/1."""

BadPolicy = Literal["raise", "count"]
"""What a bad event does: raise :class:`BadEventError`, or count it and go on."""

Status = Literal["ok", "late", "bad"]


class BadEventError(ValueError):
    """An event with an unknown stream or template, a non-finite time, or an impossible clock."""


@dataclass(frozen=True)
class StreamSpec:
    """Stream parameters (PTJoin Definitions 4-6): templates (hence pi) and max delay D.

    >>> from workbench.timestamps import HistogramTimestamp
    >>> spec = StreamSpec(TemplateSet("A", (HistogramTimestamp.uniform(0, 5),)), max_delay=50)
    >>> spec.pi, spec.max_delay
    (5.0, 50.0)
    """

    templates: TemplateSet
    max_delay: float

    def __post_init__(self) -> None:
        if not isinstance(self.templates, TemplateSet):
            raise ValueError(f"templates = {self.templates!r} is not a TemplateSet")
        delay = float(self.max_delay)
        if not (math.isfinite(delay) and delay >= 0):
            raise ValueError(f"max_delay = {self.max_delay!r} must be a finite delay >= 0")
        object.__setattr__(self, "max_delay", delay)

    @property
    def pi(self) -> float:
        """pi, the longest template (Definition 5)."""
        return self.templates.pi


@dataclass(frozen=True)
class Envelope:
    """The most permissive parameters a running join may be steered to.

    Buffers are invalidated for ``d <= d_max``, ``threshold >= threshold_min`` and delays up to
    ``max_delay``, so any change inside the envelope keeps the join exact: every pair that
    qualifies under the new parameters still finds its partner in the buffer.

    >>> Envelope(d_max=100.0, threshold_min=0.5, max_delay=(20.0, 30.0)).d_max
    100.0
    """

    d_max: float
    threshold_min: float
    max_delay: tuple[float, float]

    def __post_init__(self) -> None:
        if not (math.isfinite(self.d_max) and self.d_max >= 0):
            raise ValueError(f"envelope d_max = {self.d_max!r} must be a finite window >= 0")
        if not 0 < self.threshold_min < 1:
            raise ValueError(
                f"envelope threshold_min = {self.threshold_min!r} must lie strictly in (0, 1)"
            )
        delays = tuple(float(x) for x in self.max_delay)
        if len(delays) != 2 or not all(math.isfinite(x) and x >= 0 for x in delays):
            raise ValueError(f"envelope max_delay = {self.max_delay!r} needs two delays >= 0")
        object.__setattr__(self, "max_delay", delays)


@dataclass(frozen=True)
class Matches:
    """Join results of one push or flush: pair ``k`` is ``(a_ids[k], b_ids[k])``.

    ``status`` is "late" or "bad" when the pushed event itself was not joined.

    >>> m = Matches(np.array([1, 1]), np.array([7, 9]))
    >>> len(m), m.status
    (2, 'ok')
    """

    a_ids: np.ndarray
    b_ids: np.ndarray
    status: Status = "ok"

    def __len__(self) -> int:
        return int(self.a_ids.size)

    @classmethod
    def empty(cls, status: Status = "ok") -> Matches:
        """No pairs."""
        return cls(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), status)

    @classmethod
    def of(cls, stream: int, own: int | np.ndarray, partners: np.ndarray) -> Matches:
        """Pairs of ``own`` (an id or one id per partner) of ``stream`` with ``partners``."""
        if isinstance(own, np.ndarray):
            own_ids = own.astype(np.int64, copy=False)
        else:
            own_ids = np.full(partners.shape, own, dtype=np.int64)
        partners = partners.astype(np.int64, copy=False)
        return cls(own_ids, partners) if stream == 0 else cls(partners, own_ids)

    @classmethod
    def concat(cls, parts: list[Matches]) -> Matches:
        """All pairs of several results, in order."""
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.a_ids for p in parts]), np.concatenate([p.b_ids for p in parts])
        )


@dataclass
class Counters:
    """What an operator has done so far (a snapshot; buffer sizes at the time of reading)."""

    events_in: int = 0
    results_out: int = 0
    prob_evals: int = 0
    stime_lookups: int = 0
    lookup_reuses: int = 0
    exact_evals: int = 0
    obsolete_removed: int = 0
    late_events: int = 0
    bad_events: int = 0
    buffered: tuple[int, int] = (0, 0)


class SortedBuffer:
    """A stream buffer kept in ascending max-time order (PTJoin Section 3.2).

    A window ``[start, end)`` of preallocated columns: obsolete events leave from the front in
    O(1), an arrival is inserted by binary search, shifting only the later events (few, since
    arrivals are nearly in order).  With ``keep_sorted=False`` it appends in arrival order
    (the Simple algorithm) and evicts by mask.

    >>> buf = SortedBuffer()
    >>> for i, t in enumerate([5.0, 3.0, 9.0]):
    ...     buf.insert(i, 0, t, t - 1)
    >>> buf.tmax.tolist(), buf.ids.tolist()
    ([3.0, 5.0, 9.0], [1, 0, 2])
    >>> buf.evict_before(4.0), buf.ids.tolist()
    (1, [0, 2])
    """

    def __init__(self, keep_sorted: bool = True, capacity: int = 1024) -> None:
        self.keep_sorted = keep_sorted
        self._ids = np.empty(capacity, dtype=np.int64)
        self._tmpl = np.empty(capacity, dtype=np.int64)
        self._tmax = np.empty(capacity, dtype=np.float64)
        self._tmin = np.empty(capacity, dtype=np.float64)
        self._start = 0
        self._end = 0

    def __len__(self) -> int:
        return self._end - self._start

    @property
    def ids(self) -> np.ndarray:
        """Event ids, in buffer order."""
        return self._ids[self._start : self._end]

    @property
    def templates(self) -> np.ndarray:
        """Template indices, in buffer order."""
        return self._tmpl[self._start : self._end]

    @property
    def tmax(self) -> np.ndarray:
        """max(H) of every event (its detection time), ascending when sorted."""
        return self._tmax[self._start : self._end]

    @property
    def tmin(self) -> np.ndarray:
        """min(H) of every event."""
        return self._tmin[self._start : self._end]

    def _columns(self) -> tuple[np.ndarray, ...]:
        return (self._ids, self._tmpl, self._tmax, self._tmin)

    def _make_room(self, extra: int) -> None:
        n = len(self)
        if self._end + extra <= self._ids.size:
            return
        capacity = self._ids.size
        if n + extra > capacity // 2:
            capacity = max(2 * capacity, n + extra)
        for name in ("_ids", "_tmpl", "_tmax", "_tmin"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=old.dtype)
            new[:n] = old[self._start : self._end]
            setattr(self, name, new)
        self._start, self._end = 0, n

    def insert(self, event_id: int, template: int, tmax: float, tmin: float) -> None:
        """Add one event at its max-time position (after equal max times)."""
        self._make_room(1)
        pos = self._end
        if self.keep_sorted:
            pos = self._start + int(np.searchsorted(self.tmax, tmax, side="right"))
            if pos < self._end:
                for col in self._columns():
                    col[pos + 1 : self._end + 1] = col[pos : self._end]
        self._ids[pos], self._tmpl[pos] = event_id, template
        self._tmax[pos], self._tmin[pos] = tmax, tmin
        self._end += 1

    def insert_many(
        self, ids: np.ndarray, templates: np.ndarray, tmax: np.ndarray, tmin: np.ndarray
    ) -> None:
        """Add a block of events, keeping the order (one merge instead of many inserts)."""
        n_new = int(ids.size)
        if n_new == 0:
            return
        n = len(self)
        self._make_room(n_new)
        lo, hi = self._start, self._end + n_new
        merged = (
            np.concatenate((self.ids, ids)),
            np.concatenate((self.templates, templates)),
            np.concatenate((self.tmax, tmax)),
            np.concatenate((self.tmin, tmin)),
        )
        order = np.argsort(merged[2], kind="stable") if self.keep_sorted else slice(None)
        for col, values in zip(self._columns(), merged, strict=True):
            col[lo:hi] = values[order]
        self._end = self._start + n + n_new

    def evict_before(self, bound: float) -> int:
        """Drop every event with max time below ``bound``; return how many left."""
        if self.keep_sorted:
            k = int(np.searchsorted(self.tmax, bound, side="left"))
            self._start += k
            return k
        keep = self.tmax >= bound
        k = int(keep.size - np.count_nonzero(keep))
        if k:
            n = int(keep.size) - k
            for col in self._columns():
                col[self._start : self._start + n] = col[self._start : self._end][keep]
            self._end = self._start + n
        return k

    def clear(self) -> int:
        """Drop everything; return how many left."""
        n = len(self)
        self._start = self._end = 0
        return n


def partition_slices(
    tmax: np.ndarray, lh: np.ndarray, ll: np.ndarray, rl: np.ndarray, rh: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Index bounds ``(i_lh, i_sr, j_sr, j_rh)`` of partitions in an ascending ``tmax``.

    LPR is ``[i_lh, i_sr)``, SR ``[i_sr, j_sr)``, RPR ``[j_sr, j_rh)`` with the conventions of
    :class:`~workbench.partitions.Partitions` (``LPR = [lh, ll)``, ``SR = [ll, rl]``,
    ``RPR = (rl, rh]``); an empty SR (``ll > rl``) leaves one probing range, never a pair
    counted twice.  Vectorised over many arriving events.

    >>> partition_slices(np.array([0., 1., 2., 3., 4., 5.]), np.array([1.]), np.array([2.]),
    ...                  np.array([3.]), np.array([4.]))
    (array([1]), array([2]), array([4]), array([5]))
    """
    i_lh = np.searchsorted(tmax, lh, side="left")
    i_sr = np.searchsorted(tmax, ll, side="left")
    j_sr = np.maximum(np.searchsorted(tmax, rl, side="right"), i_sr)
    j_rh = np.maximum(np.searchsorted(tmax, rh, side="right"), j_sr)
    return i_lh, np.maximum(i_sr, i_lh), j_sr, j_rh


def partition_slice(
    tmax: np.ndarray, lh: float, ll: float, rl: float, rh: float
) -> tuple[int, int, int, int]:
    """:func:`partition_slices` for one arriving event, as plain ints (the per-event path)."""
    i_lh, i_sr = (int(x) for x in tmax.searchsorted((lh, ll), side="left"))
    j_sr, j_rh = (int(x) for x in tmax.searchsorted((rl, rh), side="right"))
    j_sr = max(j_sr, i_sr)
    return i_lh, max(i_sr, i_lh), j_sr, max(j_rh, j_sr)


def widen(lh: float, ll: float, rl: float, rh: float, margin: float) -> tuple[float, ...]:
    """Partition bounds moved outwards by ``margin`` (probing ranges grow, SR and VR shrink),
    so bounds computed in floats never put a pair in SR or VR that belongs in a probing range.

    >>> widen(0.0, 10.0, 20.0, 30.0, 1.0)
    (-1.0, 11.0, 19.0, 31.0)
    """
    return lh - margin, ll + margin, rl - margin, rh + margin


def rounding_margin(*magnitudes: float) -> float:
    """A bound on the rounding of a few float operations over numbers of these magnitudes.

    >>> rounding_margin(1e12, 100.0) > 1e-4
    True
    """
    return 16 * UNIT_ROUNDOFF * sum(abs(float(m)) for m in magnitudes)


def expand_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All ``(k, i)`` with ``starts[k] <= i < ends[k]``, as two aligned index arrays.

    >>> [a.tolist() for a in expand_ranges(np.array([0, 5]), np.array([2, 8]))]
    [[0, 0, 1, 1, 1], [0, 1, 5, 6, 7]]
    """
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.maximum(np.asarray(ends, dtype=np.int64) - starts, 0)
    owner = np.repeat(np.arange(lengths.size), lengths)
    first = np.cumsum(lengths) - lengths
    return owner, np.arange(int(lengths.sum())) - first[owner] + starts[owner]


def replay(op: TwoStreamJoin, events: Events) -> tuple[Matches, np.ndarray]:
    """Push every event in arrival order, then flush.

    Returns all pairs and every event's status ("ok", "late" or "bad"), aligned with events.
    """
    parts, statuses = [], []
    for row in events.rows():
        m = op.push(*row)
        parts.append(m)
        statuses.append(m.status)
    parts.append(op.flush())
    return Matches.concat(parts), np.array(statuses)


@dataclass
class _Clock:
    now: float = -math.inf


def _check_params(d: float, threshold: float) -> None:
    if not (isinstance(d, int | float) and math.isfinite(d) and d >= 0):
        raise ValueError(f"d = {d!r} must be a finite window >= 0")
    if not (isinstance(threshold, int | float) and 0 < threshold < 1):
        raise ValueError(f"threshold = {threshold!r} must lie strictly between 0 and 1")


@dataclass(kw_only=True)
class TwoStreamJoin:
    """Event validation, lateness, buffers, steering and counters shared by every join.

    ``d`` is the window, ``threshold`` the confidence (ct or delta).  ``envelope`` bounds how
    far they (and the streams' D) may be steered while running; by default the initial values.
    Subclasses implement ``_accept(stream, event_id, template, t_det, tmin) -> Matches``,
    ``_eviction_bound(target) -> float`` and, when they defer work, ``_drain() -> Matches``.
    """

    streams: tuple[StreamSpec, StreamSpec]
    d: float
    threshold: float
    envelope: Envelope | None = None
    on_bad: BadPolicy = "raise"
    _counters: Counters = field(default_factory=Counters, init=False, repr=False)
    _clock: _Clock = field(default_factory=_Clock, init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.streams) != 2 or not all(isinstance(s, StreamSpec) for s in self.streams):
            raise ValueError(f"streams = {self.streams!r} must be two StreamSpec (A and B)")
        if self.on_bad not in ("raise", "count"):
            raise ValueError(f"on_bad = {self.on_bad!r} must be 'raise' or 'count'")
        _check_params(self.d, self.threshold)
        self.max_delay = [s.max_delay for s in self.streams]
        if self.envelope is None:
            self.envelope = Envelope(self.d, self.threshold, tuple(self.max_delay))
        self._check_envelope(self.d, self.threshold, self.max_delay)
        self.buffers = (self._new_buffer(), self._new_buffer())
        # template lengths (max - min) and maxima per stream, to place min(H) of an event
        self._tlen = [np.array([t.length for t in s.templates]) for s in self.streams]
        self._tmax_phi = [s.templates.max_times for s in self.streams]
        # plain floats: the per-event representability check (TemplateSet.horizons)
        self._reach = [s.templates.lengths.tolist() for s in self.streams]
        self._horizons = [s.templates.horizons.tolist() for s in self.streams]
        a, b = (s.templates for s in self.streams)
        # certified jc decisions for arrivals of A (A vs B) and of B (B vs A)
        self._deciders = (BandDecider(a, b), BandDecider(b, a))

    def _check_envelope(self, d: float, threshold: float, max_delay: list[float]) -> None:
        env = self.envelope
        if d > env.d_max:
            raise ValueError(f"d = {d!r} exceeds the envelope's d_max = {env.d_max!r}")
        if threshold < env.threshold_min:
            raise ValueError(
                f"threshold = {threshold!r} is below the envelope's threshold_min = "
                f"{env.threshold_min!r}"
            )
        for s in (0, 1):
            if max_delay[s] > env.max_delay[s]:
                raise ValueError(
                    f"max_delay of stream {STREAMS[s]} = {max_delay[s]!r} exceeds the "
                    f"envelope's {env.max_delay[s]!r}"
                )

    def set_params(
        self,
        d: float | None = None,
        threshold: float | None = None,
        max_delay: tuple[float, float] | None = None,
    ) -> Matches:
        """Steer the running join; values must stay inside the envelope (checked first).

        Work still pending (lazy operators) is finished under the old values first and its
        pairs returned, so every pair is judged by the values in force when its later event
        arrived.
        """
        new_d = self.d if d is None else float(d)
        new_t = self.threshold if threshold is None else float(threshold)
        new_delay = list(self.max_delay if max_delay is None else map(float, max_delay))
        _check_params(new_d, new_t)
        if any(not (math.isfinite(x) and x >= 0) for x in new_delay):
            raise ValueError(f"max_delay = {max_delay!r} must be two finite delays >= 0")
        self._check_envelope(new_d, new_t, new_delay)
        drained = self._drain()
        self._counters.results_out += len(drained)
        changed = new_t != self.threshold
        self.d, self.threshold, self.max_delay = new_d, new_t, new_delay
        if changed:
            self._threshold_changed()
        return drained

    def _drain(self) -> Matches:
        """Hook: finish deferred work (lazy operators); eager ones have none."""
        return Matches.empty()

    def _threshold_changed(self) -> None:
        """Hook: rebuild whatever depends on the threshold."""

    def _new_buffer(self) -> SortedBuffer:
        return SortedBuffer(keep_sorted=True)

    # -- the protocol -----------------------------------------------------------------------
    @property
    def counters(self) -> Counters:
        """A snapshot of the counters, with the current buffer sizes."""
        return replace(
            self._counters,
            buffered=(len(self.buffers[0]), len(self.buffers[1])),
            exact_evals=sum(dec.exact_evaluations for dec in self._deciders),
        )

    def _band_ok(
        self,
        stream: int,
        template: int | np.ndarray,
        t_det: float | np.ndarray,
        partner_templates: np.ndarray,
        partner_tmax: np.ndarray,
    ) -> np.ndarray:
        """Whether arrivals of ``stream`` and their partners satisfy jc(d, threshold), exactly
        (a certified float evaluation, rationals where it cannot tell; counted as prob_evals
        and exact_evals)."""
        n = int(np.size(partner_tmax))
        self._counters.prob_evals += n
        if n == 0:
            return np.zeros(0, dtype=bool)
        return self._deciders[stream].decide(
            np.broadcast_to(template, (n,)),
            np.broadcast_to(t_det, (n,)),
            partner_templates,
            partner_tmax,
            self.d,
            self.threshold,
        )

    @property
    def now(self) -> float:
        """The operator's clock: the latest arrival time seen."""
        return self._clock.now

    def push(
        self, stream: int | str, event_id: int, template: int, t_det: float, arrival: float
    ) -> Matches:
        """Process one arriving event; return the pairs it completes (or its late/bad status)."""
        self._counters.events_in += 1
        try:
            s, k = self._validate(stream, template, t_det, arrival)
        except BadEventError:
            if self.on_bad == "raise":
                raise
            self._counters.bad_events += 1
            return Matches.empty("bad")
        self._clock.now = float(arrival)
        if float(arrival) > float(t_det) + self.max_delay[s]:
            self._counters.late_events += 1
            return Matches.empty("late")
        t_det = float(t_det)
        result = self._accept(s, int(event_id), k, t_det, t_det - float(self._tlen[s][k]))
        self._counters.results_out += len(result)
        return result

    def advance(self, now: float) -> Matches:
        """Move the clock to ``now`` without an event (a timer tick); returns pairs that became
        due (a lazy operator's time-based re-evaluation)."""
        if not (isinstance(now, int | float | np.number) and math.isfinite(now)):
            raise BadEventError(f"now = {now!r} is not a finite time")
        if now < self._clock.now:
            raise BadEventError(f"now = {now!r} is earlier than the clock {self._clock.now!r}")
        self._clock.now = float(now)
        result = self._tick()
        self._counters.results_out += len(result)
        return result

    def _tick(self) -> Matches:
        """Hook: work that falls due as time passes (none for eager operators)."""
        return Matches.empty()

    def flush(self) -> Matches:
        """End of stream: emit whatever is pending and empty the buffers."""
        result = self._drain()
        self._counters.results_out += len(result)
        for buf in self.buffers:
            self._counters.obsolete_removed += buf.clear()
        return result

    def _validate(
        self, stream: int | str, template: int, t_det: float, arrival: float
    ) -> tuple[int, int]:
        if isinstance(stream, str) and stream in STREAMS:
            s = STREAMS.index(stream)
        elif isinstance(stream, int | np.integer) and int(stream) in (0, 1):
            s = int(stream)
        else:
            raise BadEventError(f"stream = {stream!r} is not one of 'A', 'B', 0, 1")
        n_templates = len(self.streams[s].templates)
        if not isinstance(template, int | np.integer) or not 0 <= int(template) < n_templates:
            raise BadEventError(
                f"template = {template!r} is not a template index of stream "
                f"{STREAMS[s]} (0..{n_templates - 1})"
            )
        for name, value in (("t_det", t_det), ("arrival", arrival)):
            if not isinstance(value, int | float | np.number) or not math.isfinite(value):
                raise BadEventError(f"{name} = {value!r} is not a finite time")
        k = int(template)
        if not abs(t_det) + self._reach[s][k] < self._horizons[s][k]:
            raise BadEventError(self.streams[s].templates.faithful_error(k, float(t_det)))
        if arrival < t_det:
            raise BadEventError(f"arrival = {arrival!r} precedes t_det = {t_det!r}")
        if arrival < self._clock.now:
            raise BadEventError(
                f"arrival = {arrival!r} is earlier than the clock {self._clock.now!r}: "
                "events must be pushed in arrival order"
            )
        return s, int(template)

    def _evict(self, target: int) -> None:
        """Invalidate the target buffer against every event the other stream may still send."""
        bound = self._eviction_bound(target)
        self._counters.obsolete_removed += self.buffers[target].evict_before(bound)

    def _eviction_bound(self, target: int) -> float:
        raise NotImplementedError

    def _accept(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Matches:
        raise NotImplementedError

    def _packed_local(self, stream: int) -> tuple[np.ndarray, np.ndarray]:
        """Templates of a stream as padded arrays, each moved so that its max is 0."""
        edges, probs = pack_histograms(self.streams[stream].templates.templates)
        return edges - self._tmax_phi[stream][:, None], probs
