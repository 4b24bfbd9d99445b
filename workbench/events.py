"""Events of two streams: a replayable batch as NumPy columns in arrival order (:class:`Events`)
and one validated event (:class:`Event`, the record a two-stream join's hooks pass on)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from workbench.records import Columns

__all__ = ["COLUMNS", "Event", "Events", "result_checksum", "sort_pairs"]

COLUMNS = ("stream", "id", "template", "t_det", "arrival")


class Event(NamedTuple):
    """One event of stream A (0) or B (1) as a join's validation leaves it: its id, template
    index, detection time ``t_det = max(H)`` (PTJoin Definition 4) and arrival time.

    >>> Event(1, 7, 0, 110.0, 112.0).time
    110.0
    """

    stream: int
    id: int
    template: int
    t_det: float
    arrival: float

    @property
    def time(self) -> float:
        """The event's own time, its delay's origin: ``t_det``."""
        return self.t_det


@dataclass(frozen=True, eq=False)
class Events(Columns):
    """Events of streams A (0) and B (1): ids, template indices, detection and arrival times.

    Rows are in arrival order; ids are unique within a stream.  ``t_det`` is ``max(H)`` of
    the event (PTJoin Definition 4).

    >>> ev = Events(np.array([0, 1]), np.array([0, 0]), np.array([2, 0]),
    ...             np.array([10.0, 12.0]), np.array([11.0, 15.0]))
    >>> len(ev), ev.delays().tolist()
    (2, [1.0, 3.0])
    """

    stream: np.ndarray
    id: np.ndarray
    template: np.ndarray
    t_det: np.ndarray
    arrival: np.ndarray

    def __post_init__(self) -> None:
        i8, f8 = np.int64, np.float64
        self._coerce(stream=i8, id=i8, template=i8, t_det=f8, arrival=f8)
        bad = np.flatnonzero(np.diff(self.arrival) < 0)
        if bad.size:
            k = int(bad[0]) + 1
            raise ValueError(f"arrival[{k}] = {self.arrival[k]!r} is out of arrival order")

    def delays(self) -> np.ndarray:
        """Network delay of every event: arrival - t_det."""
        return self.arrival - self.t_det

    def head(self, n: int) -> Events:
        """The first n events in arrival order."""
        return self[:n]

    def to_frame(self) -> pd.DataFrame:
        """The events as a pandas frame, one column per field, in arrival order."""
        return pd.DataFrame(dict(zip(COLUMNS, self.columns(), strict=True)))


def sort_pairs(ids: np.ndarray) -> np.ndarray:
    """Join results ``(n, m)`` of event ids ((a_id, b_id) pairs or m-tuples) in lexicographic
    order: the one result order that every operator, oracle and Spark sink is compared in.

    >>> sort_pairs(np.array([[2, 1], [1, 5], [1, 3]])).tolist()
    [[1, 3], [1, 5], [2, 1]]
    >>> sort_pairs(np.zeros((0, 3), np.int64)).shape
    (0, 3)
    """
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.shape[1] == 0:
        raise ValueError(f"ids has shape {ids.shape}, expected (n, m) with m >= 1")
    return ids[np.lexsort(ids.T[::-1])]


def result_checksum(ids: np.ndarray) -> int:
    """An order-free checksum of join results ``(n, m)`` of event ids: a sum of mixed 64-bit
    hashes, so two result sets (without repeats) compare in one pass, and a set's checksum
    grows by adding the checksum of what joins it.

    >>> ids = np.array([[1, 3], [1, 5], [2, 1]])
    >>> c = result_checksum
    >>> c(ids) == c(ids[::-1]), c(ids[:, ::-1]) == c(ids)
    (True, False)
    >>> (c(ids[:1]) + c(ids[1:])) % 2**64 == c(ids)
    True
    """
    ids = np.asarray(ids)
    if not ids.size:
        return 0
    ids = ids.reshape(len(ids), -1).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = np.full(len(ids), 0x632BE59BD9B4E019, dtype=np.uint64)
        for col in ids.T:
            h = (h ^ col) * np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(31)
        return int(np.sum(h * np.uint64(0xBF58476D1CE4E5B9), dtype=np.uint64))
