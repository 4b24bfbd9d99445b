"""What every two-stream timing join shares: configuration, validation, lateness, buffers,
steering and counters (PTJoin Section 3; interval timing Section 4.2).

Every join is a :class:`~workbench.protocol_shapes.JoinOperator`: ``push(stream, event_id,
template, t_det, arrival)``, ``push_batch(Events)``, ``advance``, ``flush`` and ``set_params``
each return an :class:`~workbench.records.Emitted` of (a, b) id pairs.  Time is an input: the
clock is the arrival time of the events pushed (non-decreasing), never the wall clock.  An
event is late when it arrives after ``t_det + D`` of its stream (PTJoin Definition 6): it is
counted and emitted as late, never joined.  Partners are kept in max-time sorted buffers
(PTJoin Section 3.2, :mod:`workbench.operators.buffers`).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, replace
from typing import ClassVar, Self, TypeVar

import numpy as np
import pandas as pd

from workbench.decision import BandDecider
from workbench.events import Event, Events
from workbench.kernels.events import valid_events
from workbench.operators.buffers import SortedBuffer
from workbench.protocol import BadEventError, OperatorConfig, check_time, from_config
from workbench.protocol_shapes import JoinOperator
from workbench.records import Counters, Emitted
from workbench.templates import TemplateSet

__all__ = [
    "STREAMS",
    "Envelope",
    "JoinConfig",
    "JoinCounters",
    "StreamSpec",
    "TwoStreamJoin",
    "replay",
]

_ON_TIME = np.zeros(1, dtype=bool)

STREAMS = ("A", "B")
"""The two input streams; events name theirs as "A"/"B" or 0/1."""


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


def _check_params(d: float, threshold: float) -> None:
    if not (isinstance(d, int | float) and math.isfinite(d) and d >= 0):
        raise ValueError(f"d = {d!r} must be a finite window >= 0")
    if not (isinstance(threshold, int | float) and 0 < threshold < 1):
        raise ValueError(f"threshold = {threshold!r} must lie strictly between 0 and 1")


@dataclass(frozen=True, kw_only=True)
class JoinConfig(OperatorConfig):
    """A two-stream join's configuration: the streams (templates, D), the window ``d``, the
    confidence ``threshold`` (ct or delta), the steering ``envelope`` (by default the initial
    values) and the bad-event policy.  Validated on construction.

    >>> from workbench.paper_examples import example3_templates
    >>> spec = StreamSpec(example3_templates(), max_delay=30)
    >>> JoinConfig(streams=(spec, spec), d=60, threshold=0.8).envelope.d_max
    60.0
    """

    streams: tuple[StreamSpec, StreamSpec]
    d: float
    threshold: float
    envelope: Envelope | None = None

    def __post_init__(self) -> None:
        streams = tuple(self.streams)
        if len(streams) != 2 or not all(isinstance(s, StreamSpec) for s in streams):
            raise ValueError(f"streams = {self.streams!r} must be two StreamSpec (A and B)")
        object.__setattr__(self, "streams", streams)
        super().__post_init__()
        _check_params(self.d, self.threshold)
        object.__setattr__(self, "d", float(self.d))
        object.__setattr__(self, "threshold", float(self.threshold))
        if self.envelope is None:
            env = Envelope(self.d, self.threshold, tuple(s.max_delay for s in streams))
            object.__setattr__(self, "envelope", env)
        env = self.envelope
        if self.d > env.d_max:
            raise ValueError(f"d = {self.d!r} exceeds the envelope's d_max = {env.d_max!r}")
        if self.threshold < env.threshold_min:
            raise ValueError(
                f"threshold = {self.threshold!r} is below the envelope's threshold_min = "
                f"{env.threshold_min!r}"
            )
        for s, spec in enumerate(streams):
            if spec.max_delay > env.max_delay[s]:
                raise ValueError(
                    f"max_delay of stream {STREAMS[s]} = {spec.max_delay!r} exceeds the "
                    f"envelope's {env.max_delay[s]!r}"
                )

    @property
    def max_delay(self) -> tuple[float, float]:
        """D of both streams."""
        return (self.streams[0].max_delay, self.streams[1].max_delay)

    def steered(self, **changes: object) -> Self:
        """The configuration after ``changes``, where ``max_delay`` gives both streams' D.

        >>> from workbench.paper_examples import example3_templates
        >>> spec = StreamSpec(example3_templates(), max_delay=30)
        >>> config = JoinConfig(streams=(spec, spec), d=60, threshold=0.8)
        >>> config.steered(max_delay=(20, 10)).max_delay
        (20.0, 10.0)
        """
        delays = changes.pop("max_delay", None)
        config = self
        if delays is not None:
            delays = tuple(delays)
            if len(delays) != 2:
                raise ValueError(f"max_delay = {delays!r} must be two finite delays >= 0")
            streams = tuple(
                replace(s, max_delay=x) for s, x in zip(config.streams, delays, strict=True)
            )
            config = replace(config, streams=streams)
        return replace(config, **changes)


JC = TypeVar("JC", bound=JoinConfig)
"""A two-stream join's configuration type."""


@dataclass
class JoinCounters(Counters):
    """The shared counters plus a join's work: probability evaluations, stime look-ups,
    look-up reuses (LazyWithLookup), exact rational evaluations, obsolete partners removed."""

    prob_evals: int = 0
    stime_lookups: int = 0
    lookup_reuses: int = 0
    exact_evals: int = 0
    obsolete_removed: int = 0


def replay(op: TwoStreamJoin, events: Events) -> tuple[Emitted, np.ndarray]:
    """Push events as one batch, then flush.

    Returns everything emitted and every event's status ("ok", "late" or "bad"), aligned
    with the events.
    """
    out = Emitted.concat([op.push_batch(events), op.flush()], op.arity)
    status = np.full(len(events), "ok", dtype="<U4")
    keys = pd.MultiIndex.from_arrays([events.stream, events.id])  # unique within a replay
    for name, records in (("late", out.late), ("bad", [r for r, _ in out.bad])):
        if records:
            status[keys.isin([r[:2] for r in records])] = name
    return out, status


class TwoStreamJoin(JoinOperator[JC, Event]):
    """Event validation, lateness, buffers, steering and counters shared by every join.

    The constructor takes a :class:`JoinConfig` (the subclass's own: ``class PTJoin(
    TwoStreamJoin[PTJoinConfig])``) or its fields; ``d``, ``threshold`` and the streams'
    ``max_delay`` may be steered inside the envelope.  One ``push`` runs ``_validate`` (an
    :class:`~workbench.events.Event`), the lateness test of
    :class:`~workbench.protocol_shapes.JoinOperator`, then ``_step``, which places min(H) and
    calls the algorithm's ``_join`` (the reference) or, compiled, its ``_join_batch``.  An
    algorithm writes ``_join(stream, event_id, template, t_det, tmin) -> Emitted`` and
    ``_eviction_bound(target) -> float``; one that defers work, ``_release(until)``; a compiled
    one, ``_join_batch``.
    """

    counters_type: ClassVar[type[Counters]] = JoinCounters
    batch_type: ClassVar[type] = Events
    steerable: ClassVar[frozenset[str]] = frozenset({"d", "threshold", "max_delay"})
    arity: ClassVar[int] = 2

    def _start(self) -> None:
        self.buffers = (self._new_buffer(), self._new_buffer())
        streams = self.streams
        # template lengths (max - min) and maxima per stream, to place min(H) of an event
        self._tlen = [np.array([t.length for t in s.templates]) for s in streams]
        self._tmax_phi = [s.templates.max_times for s in streams]
        # plain floats: the per-event representability check (TemplateSet.horizons)
        self._reach = [s.templates.lengths.tolist() for s in streams]
        self._horizons = [s.templates.horizons.tolist() for s in streams]
        # the same per (stream, template), padded, for whole batches (_valid_rows)
        self._n_templates = np.array([len(s.templates) for s in streams])
        width = int(self._n_templates.max())
        self._reach_table = np.full((2, width), np.inf)
        self._horizon_table = np.zeros((2, width))
        for s in (0, 1):
            self._reach_table[s, : self._n_templates[s]] = self._reach[s]
            self._horizon_table[s, : self._n_templates[s]] = self._horizons[s]
        self._tlen_table = np.zeros((2, width))
        for s in (0, 1):
            self._tlen_table[s, : self._n_templates[s]] = self._tlen[s]
        a, b = (s.templates for s in streams)
        # certified jc decisions for arrivals of A (A vs B) and of B (B vs A)
        self._deciders = (BandDecider(a, b), BandDecider(b, a))

    # -- the configuration in force ------------------------------------------------------------
    streams = from_config("streams", "Both streams' templates and D.")
    d = from_config("d", "The window d.")
    threshold = from_config("threshold", "The confidence threshold (ct or delta).")
    envelope = from_config("envelope", "The most permissive parameters it may be steered to.")
    max_delay = from_config("max_delay", "D of both streams.")

    def _new_buffer(self) -> SortedBuffer:
        return SortedBuffer(keep_sorted=True)

    # -- the protocol -----------------------------------------------------------------------
    @property
    def counters(self) -> JoinCounters:
        """A snapshot of the counters, with the current buffer sizes."""
        return replace(
            super().counters, exact_evals=sum(dec.exact_evaluations for dec in self._deciders)
        )

    def _buffered(self) -> tuple[int, int]:
        return (len(self.buffers[0]), len(self.buffers[1]))

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

    def push(
        self, stream: int | str, event_id: int, template: int, t_det: float, arrival: float
    ) -> Emitted:
        """Process one arriving event; emit the pairs it completes (or it, late or bad)."""
        return super().push(stream, event_id, template, t_det, arrival)

    def _validate(
        self, stream: int | str, event_id: int, template: int, t_det: float, arrival: float
    ) -> Event:
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
        t_det, arrival = check_time("t_det", t_det), check_time("arrival", arrival)
        k = int(template)
        if not abs(t_det) + self._reach[s][k] < self._horizons[s][k]:
            raise BadEventError(self.streams[s].templates.faithful_error(k, t_det))
        self._check_arrival("t_det", t_det, arrival)
        return Event(s, int(event_id), k, t_det, arrival)

    def _valid_rows(self, events: Events) -> np.ndarray:
        fields = (events.stream, events.template, events.t_det, events.arrival)
        columns = (np.ascontiguousarray(col) for col in fields)  # one compiled signature
        return valid_events(
            *columns,
            self._n_templates,
            self._reach_table,
            self._horizon_table,
            self._now,
        )

    def _step_batch(self, events: Events) -> Emitted:
        """Valid events through the subclass's kernel (``_join_batch``): lateness (Definition
        6) and min(H) vectorised here, the clock moved to the last arrival."""
        n = len(events)
        s, k, t_det = events.stream, events.template, events.t_det
        delays = np.array(self.max_delay)
        late = events.arrival > t_det + delays[s]
        tmin = t_det - self._tlen_table[s, k]
        for buf in self.buffers:
            buf.reserve(n)
        return self._batch_done(events, late, self._join_batch(events, tmin, late))

    def _join_batch(self, events: Events, tmin: np.ndarray, late: np.ndarray) -> np.ndarray:
        """The (a, b) pairs of valid events (``late`` ones only move the clock), in the order
        of pushing them one by one; buffers and counters updated.  Reference: ``_join`` per
        on-time event (compiled subclasses run a kernel instead)."""
        parts = []
        for i in range(len(events)):
            self._now = float(events.arrival[i])
            if not late[i]:
                s = int(events.stream[i])
                out = self._join(
                    s,
                    int(events.id[i]),
                    int(events.template[i]),
                    float(events.t_det[i]),
                    float(tmin[i]),
                )
                parts.append(out.ids)
        return np.concatenate(parts) if parts else np.empty((0, 2), dtype=np.int64)

    def _step(self, record: Event) -> Emitted:
        s, event_id, k, t_det, arrival = record
        tmin = t_det - float(self._tlen[s][k])
        if not self._compiled():
            return self._join(s, event_id, k, t_det, tmin)
        # the compiled engine runs one admitted event through the batch kernel
        for buf in self.buffers:
            buf.reserve(1)
        one = Events.trusted(
            np.array([s]),
            np.array([event_id]),
            np.array([k]),
            np.array([t_det]),
            np.array([arrival]),
        )
        return Emitted(self._join_batch(one, np.array([tmin]), _ON_TIME))

    def _clear(self) -> None:
        for buf in self.buffers:
            self._counters.obsolete_removed += buf.clear()

    def _evict(self, target: int) -> None:
        """Invalidate the target buffer against every event the other stream may still send."""
        bound = self._eviction_bound(target)
        self._counters.obsolete_removed += self.buffers[target].evict_before(bound)

    @abstractmethod
    def _eviction_bound(self, target: int) -> float:
        """Max times below this can join no event the other stream may still send."""

    @abstractmethod
    def _join(
        self, stream: int, event_id: int, template: int, t_det: float, tmin: float
    ) -> Emitted:
        """Join an on-time event with the other stream's buffer; buffer it."""
