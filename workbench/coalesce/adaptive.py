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

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from workbench.coalesce.cost import AtomicCosts, Dcq, Weights, select
from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.extent import (
    Coalesced,
    EagerExtent,
    LazyExtent,
    Window,
    coalesce_sorted,
)

__all__ = ["AdaptiveCoalescing", "Query"]


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


class AdaptiveCoalescing:
    """Serve several queries' coalesced views, choosing eager or lazy per query as cp and oop
    drift (see the module docstring).

    >>> qs = [Query("t", ("temperature",), ("mote",))]
    >>> ac = AdaptiveCoalescing(qs, Window("tuples", 100), reevaluate_every=50)
    >>> for i in range(200):
    ...     _ = ac.push(float(i), {"temperature": 20.0, "mote": i % 2})
    >>> ac.scheme["t"], [(c.group, c.count) for c in ac.view("t")]
    ('eager', [((0,), 50), ((1,), 50)])
    """

    def __init__(
        self,
        queries: Sequence[Query],
        window: Window,
        weights: Weights | None = None,
        atomic: AtomicCosts | None = None,
        reevaluate_every: int = 10_000,
        initial: str = "lazy",
    ) -> None:
        names = [q.name for q in queries]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"queries {names!r} must be one or more distinct names")
        if initial not in ("eager", "lazy"):
            raise ValueError(f"initial = {initial!r} must be 'eager' or 'lazy'")
        if reevaluate_every < 1:
            raise ValueError(f"reevaluate_every = {reevaluate_every!r} must be at least 1")
        self.queries = {q.name: q for q in queries}
        self.window = window
        self.weights = weights or Weights(1.0, 1.0, 2.0)
        self.atomic = atomic or AtomicCosts(1, 1, 0.2, 1.2, 1, 1.2, 5, 1)
        self.reevaluate_every = reevaluate_every
        self.scheme = {name: initial for name in names}
        self.switches = 0
        self._raw: LazyExtent | None = LazyExtent(window) if initial == "lazy" else None
        self._eager: dict[str, EagerExtent] = {}
        if initial == "eager":
            self._eager = {q.name: EagerExtent(window, q.equivalence) for q in queries}
        self._arrivals = 0
        self._since = 0  # arrivals counted at the last re-evaluation
        self._late = 0
        self._t_max = float("-inf")
        self._coalesced = dict.fromkeys(names, 0)
        self._last: dict[str, dict[Hashable, object]] = {name: {} for name in names}
        self.decided: dict[str, tuple[float, float]] = {}
        """(cp, oop) per query that the last re-evaluation selected on (empty before one)."""

    @property
    def estimates(self) -> dict[str, tuple[float, float]]:
        """(cp, oop) per query over the arrivals since the last re-evaluation (so they drift)."""
        n = max(self._arrivals - self._since, 1)
        return {name: (self._coalesced[name] / n, self._late / n) for name in self.queries}

    def push(self, ts: float, row: Mapping[str, object]) -> bool:
        """Add one tuple to every extent; False when it arrived too late for the window."""
        self._arrivals += 1
        ts = float(ts)
        if ts < self._t_max:
            self._late += 1
        self._t_max = max(self._t_max, ts)
        decisions = {}
        if self._raw is not None:
            decisions["raw"] = self._raw.push(ts, dict(row))
        for name, extent in self._eager.items():
            group, value = self.queries[name].project(row)
            decisions[name] = extent.push(ts, value, group)
        # an eager extent's decision is the window's; a raw store still filling may accept more
        accepted = next((v for k, v in decisions.items() if k != "raw"), decisions.get("raw"))
        for name, q in self.queries.items():  # cp: coalesces with its group's previous tuple
            group, value = q.project(row)
            last = self._last[name]
            if group in last and q.equivalence.same(last[group], value):
                self._coalesced[name] += 1
            last[group] = value
        self._finish_transitions()
        if self._arrivals % self.reevaluate_every == 0:
            self._reevaluate()
        return bool(accepted)

    def view(self, name: str) -> list[Coalesced]:
        """The coalesced view of the window for one query."""
        q = self.queries[name]
        if name in self._eager:
            return self._eager[name].view()
        rows = (((ts, seq), *q.project(row)) for ts, seq, _, row in self._raw.raw())
        return coalesce_sorted(rows, q.equivalence)

    def _reevaluate(self) -> None:
        size = self.window.size if self.window.kind == "tuples" else max(len(self._any()), 1)
        self.decided = self.estimates
        dcqs = [Dcq(name, cp, oop) for name, (cp, oop) in self.decided.items()]
        chosen = select(dcqs, self._arrivals, int(size), self.atomic, self.weights).eager
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
            self._raw._t_max = self._eager[name]._t_max
        # the eager extent serves until the raw store provably holds the same window

    def _finish_transitions(self) -> None:
        if self._raw is None:
            return
        for name in [n for n, s in self.scheme.items() if s == "lazy" and n in self._eager]:
            eager = self._eager[name]
            raw_oldest, eager_oldest = self._raw._oldest(), eager._oldest()
            same_oldest = (raw_oldest is None) == (eager_oldest is None) and (
                raw_oldest is None or raw_oldest[0] == eager_oldest[0]
            )
            if len(self._raw) == len(eager) and same_oldest:
                del self._eager[name]  # the lazy extent now holds the same window
