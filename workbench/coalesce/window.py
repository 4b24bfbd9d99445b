"""Windows, coalesced tuples and what both window extents share (coalescing paper, Sections
2.1-2.3): the window rule, lateness, arrival numbering, configuration and counters.

A raw tuple (timestamp ts, group, value) becomes a temporal tuple valid over [ts, te): te is
the timestamp of the group's next tuple, or ts itself while the tuple is the group's latest
(Section 2.3).  Windows (Section 2.1): a tuple-based window of size w holds the w accepted
tuples with the largest timestamps; a time-based window of size T holds the accepted tuples
with ``ts >= t_max - T`` (t_max the largest timestamp accepted).  A tuple that would fall
outside the window on arrival is too late: counted and emitted as late, never stored.  Ties in
ts are ordered by arrival.  Every extent speaks the protocol of :mod:`workbench.protocol`; it
emits no results (its output is its coalesced ``view()``), only late and bad records.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from workbench.coalesce.equivalence import Equivalence
from workbench.protocol import (
    BadEventError,
    BadPolicy,
    Engine,
    OperatorConfig,
    StreamOperator,
    check_time,
    from_config,
)
from workbench.records import Columns, Counters, Emitted

__all__ = [
    "Coalesced",
    "ExtentConfig",
    "ExtentCounters",
    "Readings",
    "Window",
    "WindowExtent",
    "coalesce_sorted",
    "recoalesce",
    "uncoalesced",
]

Key = tuple[float, int]  # (ts, arrival sequence number)


@dataclass(frozen=True)
class Window:
    """A tuple-based (``size`` tuples) or time-based (``size`` time units) window.

    >>> Window("time", 3600.0).kind
    'time'
    """

    kind: Literal["tuples", "time"]
    size: float

    def __post_init__(self) -> None:
        if self.kind not in ("tuples", "time"):
            raise ValueError(f"kind = {self.kind!r} must be 'tuples' or 'time'")
        if self.kind == "tuples" and not (float(self.size).is_integer() and self.size >= 1):
            raise ValueError(f"size = {self.size!r} must be a whole number of tuples >= 1")
        if not self.size > 0:
            raise ValueError(f"size = {self.size!r} must be positive")


@dataclass(frozen=True, order=True)
class Coalesced:
    """One coalesced temporal tuple: a group's run of value-equivalent tuples over [ts, te)."""

    ts: float
    seq: int
    te: float = field(compare=False)
    group: Hashable = field(compare=False)
    value: object = field(compare=False)
    count: int = field(compare=False)


@dataclass
class ExtentCounters(Counters):
    """The shared counters plus an extent's work: the atomic operations of the cost model
    (Table 4) and the out-of-order arrivals."""

    out_of_order: int = 0
    inserts: int = 0
    deletes: int = 0
    merges: int = 0
    splits: int = 0
    detaches: int = 0
    reads: int = 0

    @property
    def cp(self) -> float:
        """The coalescing rate: merges per accepted tuple (Section 6)."""
        return self.merges / max(self.events_in - self.late, 1)

    @property
    def oop(self) -> float:
        """The out-of-order rate: out-of-order arrivals per arrival (Section 6)."""
        return self.out_of_order / max(self.events_in, 1)


def coalesce_sorted(
    rows: Iterable[tuple[Key, Hashable, object]], equivalence: Equivalence
) -> list[Coalesced]:
    """Coalesce raw tuples ``((ts, seq), group, value)`` given in key order (the scan of a lazily
    coalesced extent, Algorithm 1).

    A coalesced tuple reports ``equivalence.representative`` of its first raw value.

    >>> rows = [((1.0, 0), "r1", 81), ((2.0, 1), "r1", 81), ((3.0, 2), "r1", 80)]
    >>> [(c.ts, c.te, c.value, c.count) for c in coalesce_sorted(rows, Equivalence())]
    [(1.0, 3.0, 81, 2), (3.0, 3.0, 80, 1)]
    """
    # per group: [first key, last ts, first value, count, last value]
    open_runs: dict[Hashable, list] = {}
    out: list[Coalesced] = []
    rep = equivalence.representative
    for key, group, value in rows:
        run = open_runs.get(group)
        if run is not None and equivalence.same(run[4], value):
            run[1], run[3], run[4] = key[0], run[3] + 1, value
            continue
        if run is not None:
            out.append(Coalesced(run[0][0], run[0][1], key[0], group, rep(run[2]), run[3]))
        open_runs[group] = [key, key[0], value, 1, value]
    for group, run in open_runs.items():
        out.append(Coalesced(run[0][0], run[0][1], run[1], group, rep(run[2]), run[3]))
    out.sort()
    return out


def uncoalesced(raw: list[tuple[float, int, object, object]]) -> list[Coalesced]:
    """Raw window tuples ``(ts, seq, group, value)`` as temporal tuples, one per reading.

    A tuple is valid until its group's next tuple (Section 2.3), coalescing nothing (what a
    lazy extent stores).

    >>> [(c.ts, c.te) for c in uncoalesced([(1.0, 0, "r1", 81), (2.0, 1, "r1", 81)])]
    [(1.0, 2.0), (2.0, 2.0)]
    """
    by_group: dict[object, list[tuple[float, int, object]]] = defaultdict(list)
    for ts, seq, group, value in raw:
        by_group[group].append((ts, seq, value))
    out = []
    for group, rows in by_group.items():
        for k, (ts, seq, value) in enumerate(rows):
            te = rows[k + 1][0] if k + 1 < len(rows) else ts
            out.append(Coalesced(ts, seq, te, group, value, 1))
    out.sort()
    return out


def recoalesce(
    rows: Iterable[tuple[float, int, Hashable, object]], equivalence: Equivalence
) -> list[Coalesced]:
    """The oracle: coalesce raw tuples ``(ts, seq, group, value)`` from scratch.

    >>> rows = [(1, 0, "r1", 81), (2, 1, "r1", 81), (3, 2, "r1", 80)]
    >>> [(c.ts, c.te, c.value, c.count) for c in recoalesce(rows, Equivalence())]
    [(1, 3, 81, 2), (3, 3, 80, 1)]
    """
    ordered = sorted(rows, key=lambda r: (r[0], r[1]))
    return coalesce_sorted((((ts, seq), g, v) for ts, seq, g, v in ordered), equivalence)


@dataclass(frozen=True, eq=False)
class Readings(Columns):
    """A batch of raw tuples in arrival order: timestamps, values and groups.

    >>> list(Readings(np.array([1.0, 2.0]), np.array([81, 80]), np.array(["r2", "r2"])).rows())
    [(1.0, 81, 'r2'), (2.0, 80, 'r2')]
    """

    ts: np.ndarray
    value: np.ndarray
    group: np.ndarray

    def __post_init__(self) -> None:
        self._coerce(ts=np.float64)


@dataclass(frozen=True, kw_only=True)
class ExtentConfig(OperatorConfig):
    """An extent's configuration: its window, the value equivalence and the bad-record policy.

    >>> ExtentConfig(window=Window("tuples", 3)).equivalence.kind
    'equal'
    """

    window: Window
    equivalence: Equivalence = field(default_factory=Equivalence)

    def __post_init__(self) -> None:
        if not isinstance(self.window, Window):
            raise ValueError(f"window = {self.window!r} is not a Window")
        if not isinstance(self.equivalence, Equivalence):
            raise ValueError(f"equivalence = {self.equivalence!r} is not an Equivalence")
        super().__post_init__()


class WindowExtent(StreamOperator):
    """What both extents share: the window rule, lateness, arrival numbering, counters.

    ``push(ts, value, group=None)``; the window may be steered to a smaller size of its kind
    (the oldest tuples expire).
    """

    config_type: ClassVar[type] = ExtentConfig
    counters_type: ClassVar[type[Counters]] = ExtentCounters
    batch_type: ClassVar[type] = Readings
    steerable: ClassVar[frozenset[str]] = frozenset({"window"})
    arity: ClassVar[int] = 0

    def __init__(
        self,
        window: Window,
        equivalence: Equivalence | None = None,
        on_bad: BadPolicy = "raise",
        engine: Engine = "compiled",
    ) -> None:
        super().__init__(
            window=window, equivalence=equivalence or Equivalence(), on_bad=on_bad, engine=engine
        )

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return {"window": Window("tuples", 12), "equivalence": Equivalence("absolute", 1.0)}

    def _start(self) -> None:
        self._seq = 0
        self._t_max = float("-inf")
        self._n = 0  # raw tuples in the window

    def __len__(self) -> int:
        """Raw tuples currently in the window."""
        return self._n

    window = from_config("window", "The window in force.")
    equivalence = from_config("equivalence", "The value equivalence.")

    @property
    def t_max(self) -> float:
        """The largest timestamp accepted (or advanced to)."""
        return self._t_max

    def _buffered(self) -> tuple[int]:
        return (self._n,)

    def push(self, ts: float, value: object, group: Hashable = None) -> Emitted:
        """Add one arriving tuple; a too-late one is counted and emitted as late."""
        return super().push(ts, value, group)

    def _validate(self, ts: float, value: object, group: Hashable) -> tuple[Key, Hashable, Any]:
        ts = check_time("ts", ts)
        try:
            hash(group)
        except TypeError:
            raise BadEventError(f"group = {group!r} is not hashable") from None
        key = (ts, self._seq)
        self._seq += 1
        return key, group, value

    def _admit(self, parsed: tuple[Key, Hashable, Any]) -> bool:
        key, window = parsed[0], self._config.window
        if window.kind == "tuples":
            return not (self._n >= window.size and key < self.oldest())
        return key[0] >= self._t_max - window.size

    def _accept(self, parsed: tuple[Key, Hashable, Any]) -> Emitted:
        key, group, value = parsed
        if key[0] < self._t_max:
            self._counters.out_of_order += 1
        else:
            self._t_max = key[0]
        self._insert(key, group, value)
        self._n += 1
        self._expire()
        return Emitted.none(0)

    def _advance(self, now: float) -> Emitted:
        """The clock is the largest timestamp: a time window's oldest tuples expire."""
        self._t_max = max(self._t_max, now)
        self._expire()
        return Emitted.none(0)

    def _clear(self) -> None:
        """The view is the extent's output: the end of the streams keeps it."""

    def _steered(self, changes: dict[str, Any]) -> ExtentConfig:
        new = super()._steered(changes)
        if new.window.kind != self.window.kind or new.window.size > self.window.size:
            raise ValueError(
                f"window = {new.window!r}: a running extent's window can only shrink within "
                f"its kind (now {self.window!r})"
            )
        return new

    def _reconfigured(self, old: ExtentConfig) -> None:
        self._expire()

    def remove_oldest(self) -> None:
        """Expire the window's oldest raw tuple: a delete, or a detach from its coalesced
        tuple's timestamp vector (Table 4; :func:`~workbench.coalesce.cost.measure_atomic_costs`
        times it).  The window must not be empty."""
        self._remove_oldest()
        self._n -= 1

    def _expire(self) -> None:
        window = self._config.window
        if window.kind == "tuples":
            while self._n > window.size:
                self.remove_oldest()
        else:
            bound = self._t_max - window.size
            while (oldest := self.oldest()) is not None and oldest[0] < bound:
                self.remove_oldest()

    @abstractmethod
    def view(self) -> list[Coalesced]:
        """The coalesced view of the current window, sorted by (ts, arrival)."""

    @abstractmethod
    def oldest(self) -> Key | None:
        """The key (ts, arrival number) of the window's oldest raw tuple, None when empty."""

    @abstractmethod
    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        """Store an accepted raw tuple."""

    @abstractmethod
    def _remove_oldest(self) -> None:
        """Remove the oldest raw tuple."""
