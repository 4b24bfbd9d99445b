"""What flows through the streaming protocol (:mod:`workbench.protocol`): columnar batches in
(:class:`Columns`), emissions out (:class:`Emitted`: results, late and bad records kept apart,
after bytewax's ``WindowOut``), the rows of an extent's view (:class:`Coalesced`) and the
counters every operator shares (:class:`Counters`)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Literal, Self

import numpy as np

__all__ = ["Coalesced", "Columns", "Counters", "Emitted", "Status"]

Status = Literal["ok", "late", "bad"]


class Columns:
    """A columnar batch: a frozen dataclass of equal-length 1-D arrays, one row per event in
    arrival order.  Subclasses declare the columns as fields (in ``push`` order) and validate
    them in ``__post_init__``."""

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        """The columns' names, in ``push`` order (read once per class: a one-record batch
        on its way into a kernel asks for them on every push)."""
        names = cls.__dict__.get("_column_names")
        if names is None:
            names = tuple(f.name for f in fields(cls))
            cls._column_names = names  # type: ignore[attr-defined]
        return names

    def __len__(self) -> int:
        return int(np.size(getattr(self, self._names()[0])))

    def _coerce(self, **dtypes: object) -> None:
        """Make every column a 1-D array of its dtype (None: as given, objects kept) and of
        the first column's length, or raise naming the column."""
        n = None
        for f in fields(self):
            col = np.asarray(getattr(self, f.name), dtype=dtypes.get(f.name))
            n = col.shape if n is None else n
            if col.ndim != 1 or col.shape != n:
                raise ValueError(f"{f.name} has shape {col.shape}, expected {n} like the first")
            object.__setattr__(self, f.name, col)

    @classmethod
    def trusted(cls, *columns: np.ndarray) -> Self:
        """A batch of columns already of the right dtypes and lengths, unchecked (one record
        the operator has validated, on its way into a kernel)."""
        batch = object.__new__(cls)
        for name, col in zip(cls._names(), columns, strict=True):
            object.__setattr__(batch, name, col)
        return batch

    def columns(self) -> tuple[np.ndarray, ...]:
        """The columns, in ``push`` order."""
        return tuple(getattr(self, name) for name in self._names())

    def rows(self) -> Iterator[tuple]:
        """Python-typed rows, each the arguments of one ``push``."""
        return zip(*(col.tolist() for col in self.columns()), strict=True)

    def __getitem__(self, rows: slice) -> Self:
        """The rows of a slice, as a batch of the same kind."""
        if not isinstance(rows, slice):
            raise TypeError(f"rows = {rows!r}: a batch is sliced, not indexed")
        return type(self)(*(col[rows] for col in self.columns()))


@dataclass
class Counters:
    """What a streaming operator has done so far: the names every family shares.

    ``events_in`` counts every pushed event; ``late`` and ``bad`` those that were not taken
    (late: past the stream's delay bound or outside the window; bad: invalid), ``results_out``
    the results emitted and ``buffered`` the events held now, per stream.

    >>> Counters(events_in=3, late=1).late
    1
    """

    events_in: int = 0
    results_out: int = 0
    late: int = 0
    bad: int = 0
    buffered: tuple[int, ...] = ()


@dataclass(frozen=True, order=True)
class Coalesced:
    """One coalesced temporal tuple: a group's run of value-equivalent tuples over [ts, te)
    (coalescing paper, Section 2.3), ordered by (ts, arrival number ``seq`` of its first).

    >>> Coalesced(2.0, 1, 3.0, "region 2", 81, 2) < Coalesced(3.0, 2, 4.0, "region 2", 79, 2)
    True
    """

    ts: float
    seq: int
    te: float = field(compare=False)
    group: Hashable = field(compare=False)
    value: object = field(compare=False)
    count: int = field(compare=False)


def _no_ids(arity: int) -> np.ndarray:
    return np.empty((0, arity), dtype=np.int64)


_NONE: dict[int, Emitted] = {}


@dataclass(frozen=True, eq=False)
class Emitted:
    """What one push, batch, tick, steering step or flush gives back, kept apart:

    - ``ids``: the results, row k holding the event ids of result k by stream ((a, b) pairs of
      two-stream joins, m-tuples of m-way joins; extents emit their view instead, arity 0);
    - ``late``: the late records, each as it was pushed;
    - ``bad``: the bad records, each as it was pushed, with the reason.

    >>> out = Emitted(np.array([[1, 7], [1, 9]]), late=(("A", 3, 0, 5.0, 99.0),))
    >>> len(out), out.b_ids.tolist(), out.status
    (2, [7, 9], 'late')
    """

    ids: np.ndarray
    late: tuple[tuple, ...] = ()
    bad: tuple[tuple[tuple, str], ...] = ()

    def __post_init__(self) -> None:
        ids = self.ids
        if not (isinstance(ids, np.ndarray) and ids.dtype == np.int64):  # the per-push path
            ids = np.asarray(ids, dtype=np.int64)
            object.__setattr__(self, "ids", ids)
        if ids.ndim != 2:
            raise ValueError(f"ids has shape {ids.shape}, expected (n, arity)")

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Emitted):
            return NotImplemented
        return (
            np.array_equal(self.ids, other.ids)
            and self.ids.shape == other.ids.shape
            and self.late == other.late
            and self.bad == other.bad
        )

    __hash__ = None  # mutable arrays inside

    @property
    def arity(self) -> int:
        """Event ids per result (2 for pairs)."""
        return int(self.ids.shape[1])

    @property
    def a_ids(self) -> np.ndarray:
        """Ids of stream A (the first stream) in each result."""
        return self.ids[:, 0]

    @property
    def b_ids(self) -> np.ndarray:
        """Ids of stream B (the second stream) in each result."""
        return self.ids[:, 1]

    @property
    def status(self) -> Status:
        """For one pushed event: "bad" or "late" when it was not taken, else "ok"."""
        if self.bad:
            return "bad"
        return "late" if self.late else "ok"

    @classmethod
    def none(cls, arity: int) -> Emitted:
        """Nothing emitted (one shared, read-only emission per arity)."""
        empty = _NONE.get(arity)
        if empty is None:
            ids = _no_ids(arity)
            ids.flags.writeable = False
            empty = _NONE[arity] = cls(ids)
        return empty

    @classmethod
    def late_record(cls, arity: int, record: tuple) -> Emitted:
        """One late record, no results."""
        return cls(_no_ids(arity), late=(tuple(record),))

    @classmethod
    def bad_record(cls, arity: int, record: tuple, reason: str) -> Emitted:
        """One bad record with its reason, no results."""
        return cls(_no_ids(arity), bad=((tuple(record), reason),))

    @classmethod
    def rows(cls, rows: Sequence[Sequence[int]], arity: int) -> Emitted:
        """Results from a list of id tuples."""
        return cls(np.array(rows, dtype=np.int64).reshape(len(rows), arity))

    @classmethod
    def pairs(cls, stream: int, own: int | np.ndarray, partners: np.ndarray) -> Emitted:
        """Pairs of ``own`` (an id, or one id per partner) of ``stream`` (0 = A) with
        ``partners`` of the other stream."""
        ids = np.empty((np.size(partners), 2), dtype=np.int64)
        ids[:, stream] = own
        ids[:, 1 - stream] = partners
        return cls(ids)

    @classmethod
    def concat(cls, parts: Sequence[Emitted], arity: int) -> Emitted:
        """Everything several emissions hold, in order."""
        if not parts:
            return cls.none(arity)
        return cls(
            np.concatenate([p.ids for p in parts]).reshape(sum(map(len, parts)), arity),
            late=tuple(r for p in parts for r in p.late),
            bad=tuple(r for p in parts for r in p.bad),
        )
