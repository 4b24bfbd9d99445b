"""The one streaming protocol that every operator and window extent speaks, in two shapes.

``push(*event)`` takes one event's fields (in the order of the operator's batch columns) and
``push_batch(batch)`` a columnar batch of them (what Spark micro-batches, replays and compiled
kernels call); ``advance(now)`` moves the clock, ``flush()`` ends the streams and
``set_params(**changes)`` steers a running operator.  Each returns an :class:`Emitted`, which
keeps results, late records and bad records apart (after bytewax's ``WindowOut``).  The
configuration is a frozen dataclass apart from the state, so ``clone()`` rebuilds a fresh
operator from it (after River's ``clone``).  Counters share one set of names
(:class:`Counters`); families add their own work measures to it.

:class:`StreamOperator` is the machinery both shapes share; an operator is one of them, both
in :mod:`workbench.protocol_shapes`:

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
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any, ClassVar, Generic, Literal, Self, TypeVar

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


R = TypeVar("R")
"""The record an operator's ``_validate`` makes of one pushed event, which its other hooks take."""

C = TypeVar("C", bound=OperatorConfig)
"""The operator's frozen configuration type."""


class StreamOperator(ABC, Generic[R, C]):
    """What every operator shares: the frozen configuration ``C`` (``config_type``; its fields
    are the constructor's keyword arguments, and it validates them), the counters
    (``counters_type``), the columnar batch (``batch_type``), steering (``steerable``), and the
    protocol's methods built on a few hooks.

    One ``push(*fields)`` is a template over the record ``R`` the operator's hooks pass on:
    ``_validate(*fields) -> R`` checks and types the fields (a :class:`BadEventError` is raised
    or counted and emitted by ``on_bad``), ``_admit(record) -> bool`` moves the clock and says
    whether the record is in time (a late one is counted and emitted), and
    ``_accept(record) -> Emitted`` processes it.  ``advance`` calls ``_advance(now)``;
    ``counters`` reads ``_buffered()``; ``_start()`` builds the empty state.  Optional hooks:
    ``_drain``/``_clear`` (``flush``), ``_valid_rows``/``_push_valid`` (the compiled
    ``push_batch``), ``_steered``/``_reconfigured`` (``set_params``).  The clock is the time of
    the data pushed, never the wall clock.  Emissions are the operator's only output besides
    an extent's view: a caller that ignores one loses it.
    """

    config_type: ClassVar[type]
    counters_type: ClassVar[type[Counters]] = Counters
    batch_type: ClassVar[type[Columns]]
    steerable: ClassVar[frozenset[str]] = frozenset()
    arity: ClassVar[int]

    def __init__(self, **config: Any) -> None:
        self._config: C = self.config_type(**config)
        self._counters = self.counters_type()
        self._start()

    @abstractmethod
    def _start(self) -> None:
        """Build the empty state for the configuration in force."""

    @property
    def config(self) -> C:
        """The frozen configuration in force (``set_params`` replaces it)."""
        return self._config

    @property
    def counters(self) -> Counters:
        """A snapshot of the counters, with what is buffered now."""
        return replace(self._counters, buffered=self._buffered())

    @abstractmethod
    def _buffered(self) -> tuple[int, ...]:
        """Records held now, per stream (one entry for an extent)."""

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
        out = self._accept(record)
        counters.results_out += out.ids.shape[0]
        return out

    @abstractmethod
    def _validate(self, *event: object) -> R:
        """The record's fields checked and typed, or :class:`BadEventError` naming one."""

    @abstractmethod
    def _admit(self, record: R) -> bool:
        """Move the clock with an arriving record; False when it is late for the operator."""

    @abstractmethod
    def _accept(self, record: R) -> Emitted:
        """Process an admitted record; emit what it completes."""

    def push_batch(self, batch: Columns) -> Emitted:
        """Process a columnar batch of records in arrival order: the same emissions, in the
        same order, as pushing its rows one by one."""
        if not isinstance(batch, self.batch_type):
            raise TypeError(
                f"batch is a {type(batch).__name__}, {type(self).__name__} takes "
                f"{self.batch_type.__name__}"
            )
        if self._config.engine == "python":
            return Emitted.concat([self.push(*row) for row in batch.rows()], self.arity)
        if not len(batch):
            return Emitted.none(self.arity)
        good = self._valid_rows(batch)
        if good.all():
            return self._push_valid(batch)
        # bad rows go through ``push`` (raised or counted by on_bad), the runs between them
        # through the kernel: the same emissions, in the same order, as one by one
        parts, start = [], 0
        for k in np.flatnonzero(~good).tolist():
            if k > start:
                parts.append(self._push_valid(batch[start:k]))
            parts.append(self.push(*next(batch[k : k + 1].rows())))
            start = k + 1
        if start < len(batch):
            parts.append(self._push_valid(batch[start:]))
        return Emitted.concat(parts, self.arity)

    def _valid_rows(self, batch: Columns) -> np.ndarray:
        """Which rows ``_validate`` would take, given the state now (vectorised)."""
        return np.ones(len(batch), dtype=bool)

    def _push_valid(self, batch: Columns) -> Emitted:
        """Process rows that are all valid, in the compiled kernel (reference: one by one)."""
        return Emitted.concat([self.push(*row) for row in batch.rows()], self.arity)

    def advance(self, now: float) -> Emitted:
        """Move the clock to ``now`` without a record; emit what fell due."""
        out = self._advance(check_time("now", now))
        self._counters.results_out += len(out)
        return out

    @abstractmethod
    def _advance(self, now: float) -> Emitted:
        """Move the clock (checked finite) to ``now``; the work that fell due."""

    def flush(self) -> Emitted:
        """End of the streams: emit whatever is pending and empty the buffers."""
        out = self._drain()
        self._counters.results_out += len(out)
        self._clear()
        return out

    def _drain(self) -> Emitted:
        """Finish deferred work (operators that defer override it)."""
        return Emitted.none(self.arity)

    def _clear(self) -> None:  # noqa: B027 - optional hook
        """Empty the buffers at the end of the streams (an extent keeps its view)."""

    def set_params(self, **changes: Any) -> Emitted:
        """Steer the running operator to new parameter values (``steerable`` names them);
        the work pending under the old values is finished first and emitted, so every result
        is judged by the values in force when its last record arrived."""
        fixed = set(changes) - self.steerable
        if fixed:
            raise ValueError(
                f"{', '.join(sorted(fixed))} cannot be steered on a running "
                f"{type(self).__name__}; steerable: {', '.join(sorted(self.steerable))}"
            )
        out = self._retune(self._steered(changes))
        self._counters.results_out += len(out)
        return out

    def _steered(self, changes: dict[str, Any]) -> C:
        """The configuration after ``changes`` (validated; refused where it would lose
        exactness)."""
        return replace(self._config, **changes)

    def _retune(self, new: C) -> Emitted:
        """Put ``new`` in force: finish the pending work under the old configuration first,
        then rebuild what depends on the parameters (``_reconfigured``)."""
        out = self._drain()
        old, self._config = self._config, new
        self._reconfigured(old)
        return out

    def _reconfigured(self, old: C) -> None:  # noqa: B027 - optional hook
        """Rebuild whatever depends on the parameters that changed from ``old``."""

    def clone(self) -> Self:
        """A fresh operator (no state) with the configuration in force (after River's
        ``clone``)."""
        config = self.config
        return type(self)(**{f.name: getattr(config, f.name) for f in fields(config)})
