"""Adaptive eager/lazy selection for several coalescing queries (beyond the coalescing paper).

The paper assumes cp and oop are known.  :class:`AdaptiveCoalescing` estimates them from the
stream, re-runs the optimal selection of Theorem 1 (:func:`workbench.coalesce.cost.select`)
every ``reevaluate_every`` arrivals, and switches queries between schemes without losing or
duplicating a tuple:

- lazy to eager: the query's eager extent is rebuilt from the shared lazy extent's raw tuples
  (the window's content, in timestamp order) and serves from then on;
- eager to lazy: the eager extent keeps serving until the shared lazy extent (started now if
  no query was lazy) provably holds the same window (as many tuples, the same oldest one:
  the lazy extent only holds tuples the window accepted once its oldest is the window's), then
  it is dropped.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal, NamedTuple

import numpy as np

from workbench import protocol
from workbench.coalesce.cost import Atomic, AtomicCosts, Dcq, Weights, select
from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.extent import EagerExtent
from workbench.coalesce.lazy import LazyExtent
from workbench.coalesce.scan import coalesce_sorted
from workbench.coalesce.window import Window
from workbench.protocol import BadEventError
from workbench.protocol_shapes import ExtentOperator
from workbench.records import Coalesced, Columns, Emitted

__all__ = ["AdaptiveCoalescing", "AdaptiveConfig", "Query", "Record", "Records"]


@dataclass(frozen=True)
class Query:
    """A distinct coalescing query: coalescing attributes, grouping attributes, equivalence."""

    name: str
    values: tuple[str, ...]
    groups: tuple[str, ...] = ()
    equivalence: Equivalence = Equivalence()

    def project(self, row: Mapping[str, object]) -> tuple[Hashable, object]:
        """(group, value) of a row for this query."""
        value = tuple(row[a] for a in self.values)
        group = tuple(row[g] for g in self.groups)
        return group, value[0] if len(value) == 1 else value


class Record(NamedTuple):
    """One row as :class:`AdaptiveCoalescing`'s validation leaves it (the record its hooks
    pass on): its timestamp and its attribute values.

    >>> Record(1.0, {"temperature": 20.0}).row["temperature"]
    20.0
    """

    ts: float
    row: Mapping[str, object]


@dataclass(frozen=True, eq=False)
class Records(Columns):
    """A batch of rows in arrival order: timestamps and the rows (mappings of attribute
    values) every query projects.

    >>> len(Records(np.array([1.0]), np.array([{"temperature": 20.0}])))
    1
    """

    ts: np.ndarray
    row: np.ndarray

    def __post_init__(self) -> None:
        ts = np.asarray(self.ts, dtype=np.float64)
        row = np.empty(len(self.row), dtype=object)
        row[:] = list(self.row)
        if row.shape != ts.shape:
            raise ValueError(f"row has shape {row.shape}, expected {ts.shape} like ts")
        object.__setattr__(self, "ts", ts)
        object.__setattr__(self, "row", row)


@dataclass(frozen=True, kw_only=True)
class AdaptiveConfig(protocol.OperatorConfig):
    """The queries served, their shared window, the cost weights and atomic costs of the
    selection (Section 6, Theorem 1; constants or functions of (cp, oop)), how often it
    re-runs and the initial scheme."""

    queries: tuple[Query, ...]
    window: Window
    weights: Weights = field(default_factory=lambda: Weights(1.0, 1.0, 2.0))
    atomic: Atomic = field(default_factory=lambda: AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1))
    reevaluate_every: int = 10_000
    initial: Literal["eager", "lazy"] = "lazy"

    def __post_init__(self) -> None:
        queries = tuple(self.queries)
        object.__setattr__(self, "queries", queries)
        names = [q.name for q in queries]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"queries {names!r} must be one or more distinct names")
        if self.initial not in ("eager", "lazy"):
            raise ValueError(f"initial = {self.initial!r} must be 'eager' or 'lazy'")
        if self.reevaluate_every < 1:
            raise ValueError(f"reevaluate_every = {self.reevaluate_every!r} must be at least 1")
        super().__post_init__()


class AdaptiveCoalescing(ExtentOperator[AdaptiveConfig, Record]):
    """Serve several queries' coalesced views, choosing eager or lazy per query as cp and oop
    drift (see the module docstring).  ``push(ts, row)``; a too-late row is emitted as late.

    >>> qs = [Query("t", ("temperature",), ("mote",))]
    >>> ac = AdaptiveCoalescing(queries=qs, window=Window("tuples", 100), reevaluate_every=50)
    >>> for i in range(200):
    ...     _ = ac.push(float(i), {"temperature": 20.0, "mote": i % 2})
    >>> ac.scheme["t"], [(c.group, c.count) for c in ac.view("t")]
    ('eager', [((0,), 50), ((1,), 50)])
    >>> ac.view() == ac.view("t")   # its one query
    True
    """

    batch_type: ClassVar[type] = Records

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        queries = (
            Query("value", ("value",), ("group",), Equivalence("absolute", 1.0)),
            Query("all", ("value",)),
        )
        return {"queries": queries, "window": Window("tuples", 12), "reevaluate_every": 9}

    def _start(self) -> None:
        config = self._config
        self.queries = {q.name: q for q in config.queries}
        self.scheme = dict.fromkeys(self.queries, config.initial)
        self.switches = 0
        self._raw: LazyExtent | None = None
        self._eager: dict[str, EagerExtent] = {}
        if config.initial == "lazy":
            self._raw = LazyExtent(self.window)
        else:
            self._eager = {q.name: EagerExtent(self.window, q.equivalence) for q in config.queries}
        self._since = 0  # arrivals counted at the last re-evaluation
        self._late = 0
        self._t_max = float("-inf")
        self._coalesced = dict.fromkeys(self.queries, 0)
        self._last: dict[str, dict[Hashable, object]] = {name: {} for name in self.queries}
        self.decided: dict[str, tuple[float, float]] = {}
        """(cp, oop) per query that the last re-evaluation selected on (empty before one)."""

    window = protocol.from_config("window", "The window every query shares.")

    @property
    def _arrivals(self) -> int:
        return self._counters.events_in

    def _buffered(self) -> tuple[int]:
        return (len(self._any()),)

    @property
    def estimates(self) -> dict[str, tuple[float, float]]:
        """(cp, oop) per query over the arrivals since the last re-evaluation (so they drift)."""
        n = max(self._arrivals - self._since, 1)
        return {name: (self._coalesced[name] / n, self._late / n) for name in self.queries}

    def push(self, ts: float, row: Mapping[str, object]) -> Emitted:
        """Add one row to every extent; a row too late for the window is emitted as late."""
        return super().push(ts, row)

    def _validate(self, ts: float, row: Mapping[str, object]) -> Record:
        ts = protocol.check_time("ts", ts)
        if not isinstance(row, Mapping):
            raise BadEventError(f"row = {row!r} is not a mapping of attribute values")
        for q in self.queries.values():
            missing = [a for a in (*q.values, *q.groups) if a not in row]
            if missing:
                raise BadEventError(f"row = {row!r} has no {missing[0]!r} (query {q.name!r})")
        return Record(ts, row)

    def _admit(self, record: Record) -> bool:
        """Every extent takes the row (the window decides alike for all); oop counts it."""
        ts, row = record
        if ts < self._t_max:
            self._late += 1
        self._t_max = max(self._t_max, ts)
        decisions = []
        if self._raw is not None:
            decisions.append(self._raw.push(ts, dict(row)))
        for name, extent in self._eager.items():
            group, value = self.queries[name].project(row)
            decisions.append(extent.push(ts, value, group))
        # an eager extent's decision is the window's; a raw store still filling may accept more
        decision = decisions[-1] if len(decisions) > 1 or self._raw is None else decisions[0]
        self._observe(row)
        return decision.status == "ok"

    def _step(self, record: Record) -> Emitted:
        """Nothing more: ``_admit`` put the row in every extent to learn the window's
        decision."""
        return Emitted.none(0)

    def _observe(self, row: Mapping[str, object]) -> None:
        """Count the coalescing rate cp, then re-evaluate when due."""
        for name, q in self.queries.items():  # cp: coalesces with its group's previous tuple
            group, value = q.project(row)
            last = self._last[name]
            if group in last and q.equivalence.same(last[group], value):
                self._coalesced[name] += 1
            last[group] = value
        self._finish_transitions()
        if self._arrivals % self._config.reevaluate_every == 0:
            self._reevaluate()

    def _advance(self, now: float) -> Emitted:
        for extent in (self._raw, *self._eager.values()):
            if extent is not None:
                extent.advance(now)
        return Emitted.none(0)

    def view(self, name: str | None = None) -> list[Coalesced]:
        """The coalesced view of the window for query ``name`` (which may be left out when
        one query is served)."""
        if name is None:
            if len(self.queries) != 1:
                raise ValueError(f"view() of {len(self.queries)} queries needs a query name")
            name = next(iter(self.queries))
        q = self.queries[name]
        if name in self._eager:
            return self._eager[name].view()
        rows = (((ts, seq), *q.project(row)) for ts, seq, _, row in self._raw.raw())
        return coalesce_sorted(rows, q.equivalence)

    def _reevaluate(self) -> None:
        size = self.window.size if self.window.kind == "tuples" else max(len(self._any()), 1)
        self.decided = self.estimates
        dcqs = [Dcq(name, cp, oop) for name, (cp, oop) in self.decided.items()]
        config = self._config
        chosen = select(dcqs, self._arrivals, int(size), config.atomic, config.weights).eager
        for name in self.queries:
            want = "eager" if name in chosen else "lazy"
            if want != self.scheme[name]:
                self._switch(name, want)
        self._since, self._late = self._arrivals, 0
        self._coalesced = dict.fromkeys(self.queries, 0)
        self._finish_transitions()

    def _any(self) -> LazyExtent | EagerExtent:
        return self._raw if self._raw is not None else next(iter(self._eager.values()))

    def _switch(self, name: str, want: str) -> None:
        self.switches += 1
        self.scheme[name] = want
        q = self.queries[name]
        if want == "eager":
            if name in self._eager:  # still serving from a transition: keep it
                return
            extent = EagerExtent(self.window, q.equivalence)
            for ts, _, _, row in self._raw.raw():
                group, value = q.project(row)
                extent.push(ts, value, group)
            self._eager[name] = extent
            if all(s == "eager" for s in self.scheme.values()):
                self._raw = None  # no lazy query left: the raw window is not needed
        elif self._raw is None:
            self._raw = LazyExtent(self.window)  # the eager extent serves until it is full
            if self._eager[name].t_max > float("-inf"):
                self._raw.advance(self._eager[name].t_max)
        # the eager extent serves until the raw store provably holds the same window

    def _finish_transitions(self) -> None:
        if self._raw is None:
            return
        for name in [n for n, s in self.scheme.items() if s == "lazy" and n in self._eager]:
            eager = self._eager[name]
            raw_oldest, eager_oldest = self._raw.oldest(), eager.oldest()
            same_oldest = (raw_oldest is None) == (eager_oldest is None) and (
                raw_oldest is None or raw_oldest[0] == eager_oldest[0]
            )
            if len(self._raw) == len(eager) and same_oldest:
                del self._eager[name]  # the lazy extent now holds the same window
