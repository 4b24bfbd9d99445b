"""The Multi-way join tab's run on Spark: the chosen motes' tuples, replayed in arrival order,
stream through the W-join query (:func:`~workbench.spark.queries.wjoin.wjoin_query`: the BEW-join
per time range in Spark's state; W-join paper Sections 2-3), and each snapshot sets the results
committed to its sink beside the in-process BEW-join's on the same tuples (Section 3.1: Spark,
like BEW, finds a result when its last tuple arrives, so once caught up the two result sets
are equal).

Tuples are ``stream, id, key, t, arrival`` (:data:`~workbench.spark.queries.wjoin.WJOIN_FIELDS`),
times in milliseconds, in arrival order; the windows and max delays are in milliseconds too.
Each result's stream time is the arrival of its last tuple: when BEW emits it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.app.runs.replay import ReplayJob, Snapshot
from workbench.events import sort_pairs
from workbench.experiments import profile_wjoin
from workbench.operators import BEWJoin
from workbench.operators.windows import WindowConstraints
from workbench.spark.queries.wjoin import result_schema, wjoin_query
from workbench.spark.session import SessionFactory

__all__ = ["WJoinJob", "WJoinSnapshot", "bew_results"]

TUPLE_COLUMNS = ["stream", "id", "key", "t", "arrival"]


def bew_results(
    tuples: pd.DataFrame, constraints: WindowConstraints, max_delay: Sequence[float]
) -> np.ndarray:
    """The in-process BEW-join's results on ``tuples`` (:data:`TUPLE_COLUMNS`, arrival order),
    sorted ``(n, m)`` tuple ids: the uniform strategy for a uniform clique, else the modified
    one (Section 5.2), as the tab runs it.

    >>> t = pd.DataFrame({"stream": [0, 1, 1], "id": [0, 1, 2], "key": [5, 5, 6],
    ...                   "t": [0.0, 1.0, 2.0], "arrival": [0.0, 1.0, 2.0]})
    >>> bew_results(t, WindowConstraints.uniform(2, 10.0), [0.0, 0.0]).tolist()
    [[0, 1]]
    """
    strategy = "uniform" if constraints.form == "uniform clique" else "modified"
    op = BEWJoin(constraints=constraints, max_delay=list(max_delay), strategy=strategy)
    rows = tuples.rename(columns={"key": "value", "t": "ts"})
    return profile_wjoin(op, rows[["stream", "id", "value", "ts", "arrival"]]).pairs()


@dataclass(frozen=True)
class WJoinSnapshot(Snapshot):
    """The results a W-join run on Spark has committed, and BEW's on the same tuples (its
    :attr:`metrics`: :data:`~workbench.app.runs.replay.METRICS`)."""

    results: np.ndarray
    """Committed results, sorted ``(n, m)`` tuple ids."""
    emitted_at: np.ndarray
    """Each committed result's stream time (ms): the arrival of its last tuple, sorted."""
    expected: np.ndarray
    """The in-process BEW-join's results on the whole replay (sorted)."""
    read: int
    """Tuples the query has read (a prefix of the replay)."""
    caught_up: bool

    @property
    def agrees(self) -> bool:
        """Whether Spark's results equal BEW's (expected once caught up)."""
        return np.array_equal(self.results, self.expected)


class WJoinJob(ReplayJob):
    """The Multi-way join tab's Spark run (module docstring): :meth:`start`, :meth:`snapshot`,
    and the base class's pace, teardown and worker."""

    def __init__(
        self,
        on_failure: Callable[[Exception], None],
        session: SessionFactory | None = None,
        work_root: str | None = None,
    ) -> None:
        super().__init__(on_failure, session, work_root, name="wjoin")
        self.constraints: WindowConstraints | None = None
        self.expected = np.zeros((0, 2), dtype=np.int64)
        self._arrival: pd.Series | None = None
        self._last: tuple[tuple, np.ndarray] | None = None  # the last results read

    def start(
        self,
        tuples: pd.DataFrame,
        constraints: WindowConstraints,
        max_delay: Sequence[float],
        rate: float | None = None,
    ) -> str:
        """Replay ``tuples`` at ``rate`` tuples a second (None: as fast as possible) into the
        W-join query of ``constraints`` and ``max_delay`` (ms); compute BEW's results; say so."""
        missing = [c for c in TUPLE_COLUMNS if c not in tuples.columns]
        if missing:
            raise ValueError(f"tuples lack the columns {missing!r}")
        if len(max_delay) != constraints.m:
            raise ValueError(f"max_delay = {max_delay!r} needs {constraints.m} delays")
        self.expected = bew_results(tuples, constraints, max_delay)
        self._open(tuples[TUPLE_COLUMNS])
        self._listen()
        self.constraints = constraints
        self._arrival = self.records.set_index("id")["arrival"]
        query = wjoin_query(
            self.spark,
            str(self.replay_dir),
            constraints,
            list(max_delay),
            self.folder("out"),
            self.folder("chk"),
            available_now=False,
            query_name=self.query_name,
        )
        self._started(query)
        self._replay(rate, paused=False)
        return (
            f"Running on Spark: {len(tuples):,} tuples of {constraints.m} streams replayed in "
            f"arrival order into the streaming W-join ({constraints.form}). The first "
            "micro-batch takes a few seconds: Spark plans the query and its Python workers start."
        )

    def results(self) -> np.ndarray:
        """The results committed to the sink so far (sorted ``(n, m)`` ids)."""
        m = self.constraints.m
        frame = self.spark.read.schema(result_schema(m)).parquet(self.folder("out")).toPandas()
        ids = frame[[f"id_{s}" for s in range(m)]].to_numpy(dtype=np.int64).reshape(-1, m)
        return sort_pairs(ids)

    def snapshot(self) -> WJoinSnapshot:
        """The committed results (read after the progress, so they include every reported
        micro-batch's) and their stream times."""
        rows, batch = self.read()
        m = self.constraints.m
        if self._last is not None and self._last[0] == (self.generation, batch):
            results = self._last[1]  # no new micro-batch: no new read
        else:
            results = self.results() if batch is not None else np.zeros((0, m), dtype=np.int64)
            self._last = ((self.generation, batch), results)
        last = self._arrival.reindex(results.ravel()).to_numpy().reshape(-1, m)
        emitted_at = np.sort(last.max(axis=1)) if len(results) else np.zeros(0)
        return WJoinSnapshot(
            generation=self.generation,
            replayed=self.replayed,
            total=self.total,
            metrics=self.metrics(),
            results=results,
            emitted_at=emitted_at,
            expected=self.expected,
            read=rows,
            caught_up=self.caught_up(rows),
        )
