"""Windows and what both window extents share (coalescing paper, Section 2.1): the window
rule, lateness, arrival numbering, the raw tuples in key order, configuration and counters.

Windows (Section 2.1): a tuple-based window of size w holds the w accepted tuples with the
largest timestamps; a time-based window of size T holds the accepted tuples with
``ts >= t_max - T`` (t_max the largest timestamp accepted).  A tuple that would fall outside
the window on arrival is too late: counted and emitted as late, never stored.  Ties in ts are
ordered by arrival.  Every extent is an :class:`~workbench.protocol_shapes.ExtentOperator`: it
emits no results (its output is its coalesced ``view()``, :mod:`workbench.coalesce.scan`),
only late and bad records.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import ClassVar, Literal, NamedTuple

import numpy as np

from workbench.coalesce.equivalence import Equivalence
from workbench.coalesce.order import KeyOrder
from workbench.coalesce.scan import Key, coalesce_sorted, recoalesce, uncoalesced
from workbench.kernels.coalesce import KIND_CODES, Params
from workbench.protocol import (
    BadEventError,
    OperatorConfig,
    check_time,
    from_config,
)
from workbench.protocol_shapes import ExtentOperator
from workbench.records import Coalesced, Columns, Counters, Emitted

__all__ = [
    "Coalesced",
    "ExtentConfig",
    "ExtentCounters",
    "Mechanism",
    "RawTuple",
    "Readings",
    "Window",
    "WindowExtent",
    "coalesce_sorted",
    "object_bytes",
    "recoalesce",
    "uncoalesced",
]


class RawTuple(NamedTuple):
    """One raw tuple as an extent's validation leaves it (the record its hooks pass on): its
    key (ts, arrival number), group and value.

    >>> RawTuple((3.0, 0), "region 2", 81).key[0]
    3.0
    """

    key: Key
    group: Hashable
    value: object


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


Mechanism = Literal["fast", "paper"]
"""How an eager extent stores its coalesced tuples (the word the W-join uses).  ``fast``:
:class:`~workbench.coalesce.extent.EagerExtent`'s linked tuples with binary-searched
vectors.  ``paper``: Algorithm 2 literally on an array
(:class:`~workbench.coalesce.array_extent.ArrayExtent`: linear scans, shifts).  Same view,
same atomic operations; only work, time and memory differ.  The lazy extent's one mechanism
is Algorithm 1's array of raw tuples in key order: it takes both words."""


@dataclass(frozen=True, kw_only=True)
class ExtentConfig(OperatorConfig):
    """An extent's configuration: its window, the value equivalence, the mechanism
    (:data:`Mechanism`) and the bad-record policy.

    >>> ExtentConfig(window=Window("tuples", 3)).equivalence.kind
    'equal'
    """

    window: Window
    equivalence: Equivalence = field(default_factory=Equivalence)
    mechanism: Mechanism = "fast"

    def __post_init__(self) -> None:
        if not isinstance(self.window, Window):
            raise ValueError(f"window = {self.window!r} is not a Window")
        if not isinstance(self.equivalence, Equivalence):
            raise ValueError(f"equivalence = {self.equivalence!r} is not an Equivalence")
        if self.mechanism not in ("fast", "paper"):
            raise ValueError(f"mechanism = {self.mechanism!r} is not fast or paper")
        super().__post_init__()


def object_bytes(objects: Iterable[object]) -> int:
    """The bytes of the distinct Python objects given (and of the items of tuples among
    them), each counted once: what an extent's object columns keep alive."""
    seen: set[int] = set()
    total = 0
    stack = list(objects)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if type(obj) is tuple:
            stack.extend(obj)
    return total


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class WindowExtent(KeyOrder, ExtentOperator[ExtentConfig, RawTuple]):
    """What both extents share: the window rule, lateness, arrival numbering, counters, and
    the window's raw tuples in key order.

    ``push(ts, value, group=None)``: ``_validate`` numbers the arrival (a :class:`RawTuple`),
    ``_admit`` applies the window rule, ``_step`` stores it (the extent's ``_insert``) and
    expires what left the window (its ``_remove_oldest``).  The window may be steered to a
    smaller size of its kind (the oldest tuples expire).  An extent writes ``_insert``,
    ``_remove_oldest`` and ``view()``; it may answer ``oldest()`` and ``_referenced()`` from
    its own arrays and run batches in a kernel (``_push_compiled``).

    The state is the raw tuples' timestamps in key order
    (:class:`~workbench.coalesce.order.KeyOrder`) and an extent's own arrays, which ``push``
    (the readable reference) and the compiled ``push_batch`` both read and write, so the two
    interleave freely.
    """

    counters_type: ClassVar[type[Counters]] = ExtentCounters
    batch_type: ClassVar[type] = Readings
    steerable: ClassVar[frozenset[str]] = frozenset({"window"})

    def __init__(
        self,
        config: ExtentConfig | Window | None = None,
        /,
        equivalence: Equivalence | None = None,
        **fields: object,
    ) -> None:
        """Run with ``config``, or with the configuration its fields make, of which the window
        and the equivalence may come first (``LazyExtent(Window("tuples", 3))``)."""
        if isinstance(config, Window):
            config, fields["window"] = None, config
        if equivalence is not None:
            fields["equivalence"] = equivalence
        super().__init__(config, **fields)

    @classmethod
    def conformance_params(cls) -> dict[str, object]:
        """A small configuration for the conformance suite (tests/test_conformance.py)."""
        return {"window": Window("tuples", 12), "equivalence": Equivalence("absolute", 1.0)}

    def _start(self) -> None:
        self._seq = 0  # the next arrival number
        self._t_max = float("-inf")
        self._new_order()

    window = from_config("window", "The window in force.")
    equivalence = from_config("equivalence", "The value equivalence.")

    @property
    def t_max(self) -> float:
        """The largest timestamp accepted (or advanced to)."""
        return self._t_max

    def _params(self) -> Params:
        """The window and the equivalence as the kernels take them."""
        eq, window = self.equivalence, self._config.window
        return Params(
            window.kind == "tuples",
            float(window.size),
            KIND_CODES[eq.kind],
            float(eq.tolerance),
            float(eq.quantum),
            not eq.transitive,
        )

    def _buffered(self) -> tuple[int]:
        return (len(self),)

    def push(self, ts: float, value: object, group: Hashable = None) -> Emitted:
        """Add one arriving tuple; a too-late one is counted and emitted as late."""
        return super().push(ts, value, group)

    def _validate(self, ts: float, value: object, group: Hashable) -> RawTuple:
        ts = check_time("ts", ts)
        if not _hashable(group):
            raise BadEventError(f"group = {group!r} is not hashable")
        key = (ts, self._seq)
        self._seq += 1
        return RawTuple(key, group, value)

    def _admit(self, record: RawTuple) -> bool:
        """The window rule (coalescing Algorithm 1, Line 6; Algorithm 2, Line 11; mirrors
        ``kernels.coalesce._late``)."""
        ts, window = record.key[0], self._config.window
        if window.kind == "tuples":  # not older than the oldest (a tie arrived later: younger)
            return not (self._end - self._head >= window.size and ts < self._ts[self._head])
        return ts >= self._t_max - window.size

    def _step(self, record: RawTuple) -> Emitted:
        key, group, value = record
        if key[0] < self._t_max:
            self._counters.out_of_order += 1
        else:
            self._t_max = key[0]
        self._insert(key, group, value)
        self._expire()
        self._fit()
        return Emitted.none(0)

    def _advance(self, now: float) -> Emitted:
        """The clock is the largest timestamp: a time window's oldest tuples expire."""
        self._t_max = max(self._t_max, now)
        self._expire()
        self._fit()
        return Emitted.none(0)

    def _retune(self, new: ExtentConfig) -> Emitted:
        """A smaller window of the same kind: the oldest tuples expire."""
        if new.window.kind != self.window.kind or new.window.size > self.window.size:
            raise ValueError(
                f"window = {new.window!r}: a running extent's window can only shrink within "
                f"its kind (now {self.window!r})"
            )
        self._config = new
        self._expire()
        self._fit()
        return Emitted.none(0)

    def remove_oldest(self) -> None:
        """Expire the window's oldest raw tuple: a delete, or a detach from its coalesced
        tuple's timestamp vector (Table 4; :mod:`~workbench.experiments.atomic_costs` times
        them).  The window must not be empty."""
        self._remove_oldest()

    def _expire(self) -> None:
        """The oldest raw tuples that left the window leave (Algorithm 1, Lines 1-3; Algorithm
        2, Lines 1-8; mirrors the loops on ``kernels.coalesce._expired``)."""
        window = self._config.window
        if window.kind == "tuples":
            while self._end - self._head > window.size:
                self._remove_oldest()
        else:
            bound = self._t_max - window.size
            while self._head < self._end and self._ts[self._head] < bound:
                self._remove_oldest()

    def _valid_rows(self, batch: Readings) -> np.ndarray:
        ok = np.isfinite(batch.ts)
        if batch.group.dtype == object:
            ok &= np.fromiter(map(_hashable, batch.group.tolist()), bool, len(batch))
        return ok

    def _step_batch(self, batch: Readings) -> Emitted:
        k, window = len(batch), self._config.window
        if window.kind == "tuples":  # a tuple window holds at most size + 1 at once
            k = min(k, int(window.size) + 1 - len(self))
        self._reserve(k)
        late = self._push_compiled(batch)
        if late is None:  # values the kernel cannot judge: the reference path
            return super()._step_batch(batch)
        self._fit()
        n_late = int(np.count_nonzero(late))
        counters = self._counters
        counters.events_in += len(batch)
        counters.late += n_late
        if not n_late:
            return Emitted.none(0)
        rows = zip(*(col[late].tolist() for col in batch.columns()), strict=True)
        return Emitted(np.empty((0, 0), dtype=np.int64), late=tuple(rows))

    def _add_counts(self, counts: np.ndarray) -> None:
        """Add a kernel's ``[out_of_order, inserts, deletes, merges, splits, detaches]``."""
        c = self._counters
        out_of_order, inserts, deletes, merges, splits, detaches = counts.tolist()
        c.out_of_order += out_of_order
        c.inserts += inserts
        c.deletes += deletes
        c.merges += merges
        c.splits += splits
        c.detaches += detaches

    def oldest(self) -> Key | None:
        """The key (ts, arrival number) of the window's oldest raw tuple, None when empty:
        the first key of the view (which it reads; an extent answers from its own arrays)."""
        return min(((c.ts, c.seq) for c in self.view()), default=None)

    def allocated_bytes(self) -> int:
        """The bytes the extent allocates: the ``nbytes`` of every NumPy array it owns (their
        whole room, not only the entries in use) and the distinct Python objects it refers to
        (``object_bytes``: values, groups), what ``tracemalloc`` sees it take.

        >>> from workbench.coalesce import EagerExtent, LazyExtent
        >>> same = Readings(np.arange(5000.0), np.full(5000, 20.5), np.zeros(5000, int))
        >>> eager, lazy = EagerExtent(Window("tuples", 5000)), LazyExtent(Window("tuples", 5000))
        >>> _, _ = eager.push_batch(same), lazy.push_batch(same)
        >>> eager.allocated_bytes() < lazy.allocated_bytes()  # one run: its value once
        True
        """
        arrays = {id(a): a for a in vars(self).values() if isinstance(a, np.ndarray)}
        return sum(a.nbytes for a in arrays.values()) + object_bytes(self._referenced())

    def _referenced(self) -> Iterable[object]:
        """The Python objects the extent's arrays and dicts refer to (``allocated_bytes``):
        by default the items of its object arrays."""
        arrays = (a for a in vars(self).values() if isinstance(a, np.ndarray))
        return [item for a in arrays if a.dtype == object for item in a]

    def _push_compiled(self, batch: Readings) -> np.ndarray | None:
        """Valid rows through the extent's kernel: which rows were too late, or None when the
        kernel cannot judge these values (nothing done then; without a kernel, always)."""
        return None

    @abstractmethod
    def _insert(self, key: Key, group: Hashable, value: object) -> None:
        """Store an accepted raw tuple (``_store``) and count the work."""

    @abstractmethod
    def _remove_oldest(self) -> None:
        """Remove the oldest raw tuple (``_drop_oldest``) and count the work."""
