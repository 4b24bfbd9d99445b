"""The one streaming protocol that every operator and window extent speaks, in two shapes.

``push(*event)`` takes one event's fields (in the order of the operator's batch columns) and
``push_batch(batch)`` a columnar batch of them (what Spark micro-batches, replays and compiled
kernels call); ``advance(now)`` moves the clock, ``flush()`` ends the streams and
``set_params(**changes)`` steers a running operator.  Each returns an :class:`Emitted`, which
keeps results, late records and bad records apart (after bytewax's ``WindowOut``).  The
configuration is a frozen dataclass apart from the state, so ``clone()`` rebuilds a fresh
operator from it (after River's ``clone``).  Counters share one set of names
(:class:`Counters`); families add their own work measures to it.

:class:`StreamOperator` is the machinery both shapes share, built on two methods an operator
writes (``_validate`` a pushed event, ``_step`` an admitted record) and a few optional hooks;
an operator is of one shape, both in :mod:`workbench.protocol_shapes`:

- :class:`~workbench.protocol_shapes.JoinOperator`: a timing join whose emissions carry its
  results, tuples of event ids (PTJoin Section 3, interval timing Section 4.2, W-join
  Sections 3-5);
- :class:`~workbench.protocol_shapes.ExtentOperator`: a window extent whose ``push`` updates
  the coalesced view it exposes with ``view()``; it emits only late and bad records
  (coalescing Sections 2-5).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import ClassVar, Generic, Literal, Self, TypeVar, get_args, get_origin

import numpy as np

from workbench.records import Columns, Counters, Emitted

__all__ = [
    "BadEventError",
    "BadPolicy",
    "Engine",
    "OperatorConfig",
    "StreamOperator",
    "check_policy",
    "check_time",
    "from_config",
]


class BadEventError(ValueError):
    """A record no operator can take: an unknown stream or template, a non-finite time, an
    impossible clock.  Its message names the field and the value."""


BadPolicy = Literal["raise", "count"]
"""What a bad record does: raise :class:`BadEventError`, or count it, emit it and go on."""


Engine = Literal["compiled", "python"]
"""What runs ``push_batch``: the operator's numba kernel over the whole batch ("compiled"), or
the readable per-record reference path ("python"), which the conformance suite compares it to."""


def check_policy(on_bad: str) -> None:
    """Reject an unknown bad-record policy, naming it.

    >>> check_policy("sometimes")
    Traceback (most recent call last):
    ValueError: on_bad = 'sometimes' must be 'raise' or 'count'
    """
    if on_bad not in ("raise", "count"):
        raise ValueError(f"on_bad = {on_bad!r} must be 'raise' or 'count'")


def check_time(name: str, value: object) -> float:
    """``value`` as a finite float time, or :class:`BadEventError` naming ``name``.

    >>> check_time("ts", 3)
    3.0
    """
    if value.__class__ is float and math.isfinite(value):  # the common case, first
        return value
    if not isinstance(value, int | float | np.number) or not math.isfinite(value):
        raise BadEventError(f"{name} = {value!r} is not a finite time")
    return float(value)


def from_config(name: str, doc: str) -> property:
    """A read-only operator attribute forwarded from the configuration in force (a C-level
    getter: operators read these on every push).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Config:
    ...     d: float
    >>> class Op:
    ...     d = from_config("d", "The window d.")
    ...     def __init__(self): self._config = Config(5.0)
    >>> Op().d, Op.d.__doc__
    (5.0, 'The window d.')
    """
    return property(attrgetter(f"_config.{name}"), doc=doc)


@dataclass(frozen=True, kw_only=True)
class OperatorConfig:
    """What every operator's frozen configuration holds: the bad-record policy and the engine
    that runs batches.

    >>> OperatorConfig(on_bad="count").engine
    'compiled'
    """

    on_bad: BadPolicy = "raise"
    engine: Engine = "compiled"

    def __post_init__(self) -> None:
        check_policy(self.on_bad)
        if self.engine not in ("compiled", "python"):
            raise ValueError(f"engine = {self.engine!r} must be 'compiled' or 'python'")

    def steered(self, **changes: object) -> Self:
        """The configuration after ``changes`` to a running operator, validated as on
        construction (a family maps its own steering names onto its fields).

        >>> OperatorConfig().steered(on_bad="count").on_bad
        'count'
        """
        return replace(self, **changes)


C = TypeVar("C", bound=OperatorConfig)
"""The operator's frozen configuration type."""

R = TypeVar("R")
"""The record an operator's ``_validate`` makes of one pushed event, which ``_step`` takes."""


class StreamOperator(ABC, Generic[C, R]):
    """What every operator shares: the frozen configuration ``C``, the counters
    (``counters_type``), the columnar batch (``batch_type``), steering (``steerable``), and the
    protocol's methods, all built on two abstract methods and a few optional hooks.

    **What an operator writes** (abstract): ``_validate(*fields) -> R`` checks and types one
    pushed event (a :class:`BadEventError` is raised or counted and emitted by ``on_bad``), and
    ``_step(record) -> Emitted`` processes one admitted record, the readable reference engine.

    **What a shape fills in** (optional; the defaults suit an operator without a clock, a
    window or buffers): ``_start()`` builds the empty state; ``_admit(record) -> bool`` moves
    the clock and says whether the record is in time (a late one is counted and emitted);
    ``_advance(now) -> Emitted`` moves the clock without a record; ``_finish() -> Emitted``
    ends the streams; ``_buffered()`` says what is held; ``_retune(new) -> Emitted`` puts a
    steered configuration (``OperatorConfig.steered``) in force.

    **The compiled engine** (optional): ``_step_batch(batch) -> Emitted`` runs a batch of valid
    rows through a kernel, ``_valid_rows(batch)`` finds the rows ``_validate`` would refuse.
    Whether the kernel runs is decided in one place, ``_compiled()``.

    The configuration class is the generic argument (``class Op(StreamOperator[OpConfig,
    Record])`` sets ``config_type``); the constructor takes one, or its fields.  The clock is
    the time of the data pushed, never the wall clock.  Emissions are the operator's only
    output besides an extent's view: a caller that ignores one loses it.

    >>> from dataclasses import dataclass
    >>> from workbench.records import Columns
    >>> @dataclass(frozen=True, kw_only=True)
    ... class EveryConfig(OperatorConfig):
    ...     k: int = 2
    >>> @dataclass(frozen=True, eq=False)
    ... class Values(Columns):
    ...     value: np.ndarray
    >>> class Every(StreamOperator[EveryConfig, int]):
    ...     batch_type, arity = Values, 1   # emit every k-th value
    ...     def _start(self): self._seen = 0
    ...     def _validate(self, value): return int(value)
    ...     def _step(self, value):
    ...         self._seen += 1
    ...         return Emitted.rows([(value,)] if self._seen % self.config.k == 0 else [], 1)
    >>> op = Every(EveryConfig(k=2))
    >>> [op.push(v).ids.tolist() for v in (7, 8, 9)], op.config_type.__name__
    ([[], [[8]], []], 'EveryConfig')
    >>> op.push_batch(Values(np.array([10, 11]))).ids.tolist(), op.counters.events_in
    ([[10]], 5)
    """

    config_type: ClassVar[type[C]]  # type: ignore[misc]  # from the generic argument
    counters_type: ClassVar[type[Counters]] = Counters
    batch_type: ClassVar[type[Columns]]
    steerable: ClassVar[frozenset[str]] = frozenset()
    arity: ClassVar[int]

    def __init_subclass__(cls, **kwargs: object) -> None:
        """Take ``config_type`` from the generic argument: ``class PTJoin(
        TwoStreamJoin[PTJoinConfig])`` is configured by a ``PTJoinConfig``."""
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            origin, args = get_origin(base), get_args(base)
            if isinstance(origin, type) and issubclass(origin, StreamOperator) and args:
                if isinstance(args[0], type) and issubclass(args[0], OperatorConfig):
                    cls.config_type = args[0]

    def __init__(self, config: C | None = None, /, **fields: object) -> None:
        """Run with ``config``, or with the configuration that ``fields`` make (validated by
        ``config_type``); fields given beside a configuration replace its own."""
        if config is None:
            config = self.config_type(**fields)
        elif not isinstance(config, self.config_type):
            raise ValueError(
                f"config = {config!r} is not a {self.config_type.__name__} "
                f"({type(self).__name__}'s configuration)"
            )
        elif fields:
            config = replace(config, **fields)
        self._config: C = config
        self._counters = self.counters_type()
        self._start()

    def _start(self) -> None:  # noqa: B027 - optional hook
        """Build the empty state for the configuration in force (none by default)."""

    @property
    def config(self) -> C:
        """The frozen configuration in force (``set_params`` replaces it)."""
        return self._config

    @property
    def counters(self) -> Counters:
        """A snapshot of the counters, with what is buffered now."""
        return replace(self._counters, buffered=self._buffered())

    def _buffered(self) -> tuple[int, ...]:
        """Records held now, per stream (one entry for an extent; none held by default)."""
        return ()

    def push(self, *event: object) -> Emitted:
        """Process one arriving record, given as its fields in batch-column order."""
        counters = self._counters
        counters.events_in += 1
        try:
            record = self._validate(*event)
        except BadEventError as err:
            if self._config.on_bad == "raise":
                raise
            counters.bad += 1
            return Emitted.bad_record(self.arity, event, str(err))
        if not self._admit(record):
            counters.late += 1
            return Emitted.late_record(self.arity, event)
        out = self._step(record)
        counters.results_out += out.ids.shape[0]
        return out

    @abstractmethod
    def _validate(self, *event: object) -> R:
        """The record's fields checked and typed, or :class:`BadEventError` naming one."""

    def _admit(self, record: R) -> bool:
        """Move the clock with an arriving record; False when it is late (never by default)."""
        return True

    @abstractmethod
    def _step(self, record: R) -> Emitted:
        """Process an admitted record; emit what it completes (the reference engine)."""

    def push_batch(self, batch: Columns) -> Emitted:
        """Process a columnar batch of records in arrival order: the same emissions, in the
        same order, as pushing its rows one by one."""
        if not isinstance(batch, self.batch_type):
            raise TypeError(
                f"batch is a {type(batch).__name__}, {type(self).__name__} takes "
                f"{self.batch_type.__name__}"
            )
        if not self._compiled():
            return Emitted.concat([self.push(*row) for row in batch.rows()], self.arity)
        if not len(batch):
            return Emitted.none(self.arity)
        good = self._valid_rows(batch)
        if good.all():
            return self._step_batch(batch)
        # bad rows go through ``push`` (raised or counted by on_bad), the runs between them
        # through the kernel: the same emissions, in the same order, as one by one
        parts, start = [], 0
        for k in np.flatnonzero(~good).tolist():
            if k > start:
                parts.append(self._step_batch(batch[start:k]))
            parts.append(self.push(*next(batch[k : k + 1].rows())))
            start = k + 1
        if start < len(batch):
            parts.append(self._step_batch(batch[start:]))
        return Emitted.concat(parts, self.arity)

    def _compiled(self) -> bool:
        """Whether the compiled engine runs the work: the one place the configuration's
        ``engine`` is read (an operator narrows it where its kernel cannot serve)."""
        return self._config.engine == "compiled"

    def _valid_rows(self, batch: Columns) -> np.ndarray:
        """Which rows ``_validate`` would take, given the state now (vectorised)."""
        return np.ones(len(batch), dtype=bool)

    def _step_batch(self, batch: Columns) -> Emitted:
        """Process rows that are all valid, in the compiled kernel (by default: one by one)."""
        return Emitted.concat([self.push(*row) for row in batch.rows()], self.arity)

    def advance(self, now: float) -> Emitted:
        """Move the clock to ``now`` without a record; emit what fell due."""
        out = self._advance(check_time("now", now))
        self._counters.results_out += len(out)
        return out

    def _advance(self, now: float) -> Emitted:
        """Move the clock (checked finite) to ``now``; the work that fell due (no clock by
        default: none)."""
        return Emitted.none(self.arity)

    def flush(self) -> Emitted:
        """End of the streams: emit whatever is pending and empty the buffers."""
        out = self._finish()
        self._counters.results_out += len(out)
        return out

    def _finish(self) -> Emitted:
        """Finish what is pending and empty the buffers (nothing to do by default; an extent
        keeps its view)."""
        return Emitted.none(self.arity)

    def set_params(self, **changes: object) -> Emitted:
        """Steer the running operator to new parameter values (``steerable`` names them);
        the work pending under the old values is finished first and emitted, so every result
        is judged by the values in force when its last record arrived."""
        fixed = set(changes) - self.steerable
        if fixed:
            raise ValueError(
                f"{', '.join(sorted(fixed))} cannot be steered on a running "
                f"{type(self).__name__}; steerable: {', '.join(sorted(self.steerable))}"
            )
        out = self._retune(self._config.steered(**changes))
        self._counters.results_out += len(out)
        return out

    def _retune(self, new: C) -> Emitted:
        """Put ``new`` (validated by the configuration) in force; emit the work it finished
        first (none pending by default) and rebuild what depends on the values changed."""
        self._config = new
        return Emitted.none(self.arity)

    def clone(self) -> Self:
        """A fresh operator (no state) with the configuration in force (after River's
        ``clone``)."""
        return type(self)(self.config)
