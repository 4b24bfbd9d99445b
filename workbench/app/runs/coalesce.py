"""The Coalescing tab's run on Spark: the tab's readings, replayed in arrival order, stream
through the existing eager or lazy coalescing query (:mod:`workbench.spark.queries.coalesce`,
coalescing paper Sections 2-5: Algorithm 2 on a per-group stateful operator, Algorithm 1 as a
raw-tuple sink scanned with window functions), and each snapshot sets the Spark view beside
the in-process eager extent's view of the same tuples (:func:`in_process_view`, the oracle).

**Changes while running** follow :func:`~workbench.spark.queries.coalesce_base.restart_kind`:
``"same"`` restarts the query from its checkpoint (the state is kept), ``"new"`` starts it on a
new checkpoint, re-reading the replay from its start; :meth:`CoalesceJob.reconfigure` says
which and why.  The retention policy (:func:`next_settings`) keeps a retention of
:data:`RETAIN` times the window, and keeps it while a new window fits in it, so shrinking or
moderately growing the window keeps the checkpoint.  The eager operator runs with its window
at the retention (it emits every retained timestamp) and the view cuts the emitted extents to
the chosen window (:func:`~workbench.spark.queries.coalesce_eager.extents_view`): a window change
within the retention is then exact at once, even for a group that has been idle since.

Times are milliseconds, as in every replay; records are ``group, id, value, t, arrival``
(:data:`~workbench.spark.queries.coalesce_base.TUPLE_FIELDS`) in arrival order.  The max delay is
the records' largest, so the replay has no late tuple and the in-process view is fed them all.

>>> old = next_settings(None, Window("time", 60_000.0), Equivalence(), "eager")
>>> old.retained
120000.0
>>> new = next_settings(old, Window("time", 90_000.0), Equivalence(), "eager")
>>> new.retained, restart_kind(old, new)[0]
(120000.0, 'same')
>>> restart_kind(old, next_settings(old, old.window, Equivalence("increasing"), "eager"))[0]
'new'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from workbench.app.runs.replay import ReplayJob, Snapshot
from workbench.coalesce import Equivalence, Window
from workbench.spark.queries.coalesce import (
    EXTENT_COLUMNS,
    RECORD_COLUMNS,
    CoalesceSettings,
    eager_coalesce_query,
    in_process_view,
    lazy_coalesce,
    raw_tuples_query,
    read_extents,
    restart_kind,
)
from workbench.spark.queries.coalesce_base import tidy_extents
from workbench.spark.session import SessionFactory

__all__ = [
    "RETAIN",
    "CoalesceJob",
    "CoalesceSnapshot",
    "Reconfigured",
    "next_settings",
]

RETAIN = 2.0
"""The eager state retains this multiple of the window it started with (Section 2.1)."""


def next_settings(
    previous: CoalesceSettings | None,
    window: Window,
    equivalence: Equivalence,
    scheme: Literal["eager", "lazy"],
) -> CoalesceSettings:
    """The settings of a run after a change to ``window``, ``equivalence`` or ``scheme``: the
    previous retention while the new window (of the same kind) fits in it, else :data:`RETAIN`
    times the new window; the equivalence keeps only its own parameter (another's change
    restarts nothing)."""
    equivalence = Equivalence(
        equivalence.kind,
        tolerance=equivalence.tolerance if equivalence.kind in ("absolute", "relative") else 0.0,
        quantum=equivalence.quantum if equivalence.kind == "quantized" else 1.0,
    )
    if (
        previous is not None
        and previous.window.kind == window.kind
        and window.size <= previous.retained
    ):
        retention = previous.retained
    elif window.kind == "tuples":
        retention = float(int(RETAIN * window.size))
    else:
        retention = RETAIN * window.size
    return CoalesceSettings(window, equivalence, scheme, retention)


def _empty_view() -> pd.DataFrame:
    return tidy_extents(pd.DataFrame(columns=EXTENT_COLUMNS))


@dataclass(frozen=True)
class Reconfigured:
    """What a change did: ``kind`` is restart_kind's ``"same"`` or ``"new"``."""

    kind: str
    why: str
    checkpoint: int
    message: str


@dataclass(frozen=True)
class CoalesceSnapshot(Snapshot):
    """The Spark view of a coalescing run and the in-process view of the same tuples (its
    :attr:`metrics`: :data:`~workbench.app.runs.replay.METRICS`)."""

    checkpoint: int
    settings: CoalesceSettings
    view: pd.DataFrame
    """Spark's coalesced view (``EXTENT_COLUMNS``, ms) after the last reported micro-batch."""
    expected: pd.DataFrame
    """The in-process eager extent's view of the tuples the query had read by then."""
    read: int
    """Records the current checkpoint's query has read (a prefix of the replay)."""
    caught_up: bool
    """Whether the replay has ended and the query has read all of it."""

    @property
    def agrees(self) -> bool:
        """Whether the Spark view equals the in-process one."""
        return self.view.equals(self.expected)


class CoalesceJob(ReplayJob):
    """The Coalescing tab's Spark run (module docstring): :meth:`start`, :meth:`reconfigure`,
    :meth:`snapshot`, and the base class's pace, teardown and worker."""

    def __init__(
        self,
        on_failure: Callable[[Exception], None],
        session: SessionFactory | None = None,
        work_root: str | None = None,
    ) -> None:
        super().__init__(on_failure, session, work_root, name="coalesce")
        self.settings: CoalesceSettings | None = None
        self.max_delay = 0.0
        self._last: tuple[tuple, pd.DataFrame, pd.DataFrame] | None = None  # the last views

    def start(
        self,
        records: pd.DataFrame,
        settings: CoalesceSettings,
        rate: float | None = None,
        paused: bool = False,
    ) -> str:
        """Replay ``records`` (:data:`~workbench.spark.queries.coalesce.RECORD_COLUMNS`, arrival
        order, ms) at ``rate`` records a second (None: as fast as possible) into the query of
        ``settings``; say so."""
        missing = [c for c in RECORD_COLUMNS if c not in records.columns]
        if missing:
            raise ValueError(f"records lack the columns {missing!r}")
        if not len(records):
            raise ValueError("records: no reading to replay (choose motes with values)")
        self._open(records[RECORD_COLUMNS])
        self._listen()
        self.max_delay = float((self.records["arrival"] - self.records["t"]).max()) + 1.0
        self.settings = settings
        self._launch()
        self._replay(rate, paused)
        return (
            f"Running on Spark: {len(records):,} readings replayed in arrival order into the "
            f"{settings.scheme} coalescing query (checkpoint 1). The first micro-batch takes a "
            "few seconds: Spark plans and compiles the query."
        )

    def _launch(self) -> None:
        """Start the query of :attr:`settings` on the current checkpoint."""
        s = self.settings
        out, chk = self.folder("out"), self.folder("chk")
        if s.scheme == "eager":  # emits every retained timestamp: the view cuts the window
            whole = CoalesceSettings(
                Window(s.window.kind, s.retained), s.equivalence, "eager", s.retained
            )
            query = eager_coalesce_query(
                self.spark,
                str(self.replay_dir),
                whole,
                self.max_delay,
                out,
                chk,
                available_now=False,
                query_name=self.query_name,
            )
        else:
            query = raw_tuples_query(
                self.spark,
                str(self.replay_dir),
                self.max_delay,
                out,
                chk,
                available_now=False,
                query_name=self.query_name,
            )
        self._started(query)

    def reconfigure(self, settings: CoalesceSettings) -> Reconfigured:
        """Apply new settings as :func:`restart_kind` says: restart from the checkpoint
        (``"same"``) or on a new one (``"new"``); say which and why."""
        if self.settings is None or self.work is None:
            raise RuntimeError("no coalescing run is on: start one first")
        kind, why = restart_kind(self.settings, settings)
        self._stop_query()
        if kind == "new":
            self.checkpoint += 1
        self.settings = settings
        self.generation += 1
        self._launch()
        if kind == "same":
            message = (
                f"Kept the checkpoint: the query restarted from checkpoint {self.checkpoint} "
                f"with its state ({why})."
            )
        else:
            message = (
                f"New checkpoint {self.checkpoint}: {why}. The query re-reads the replay from "
                "its start."
            )
        return Reconfigured(kind, why, self.checkpoint, message)

    def snapshot(self) -> CoalesceSnapshot:
        """The Spark view after the query's last reported micro-batch and the in-process view
        of the records it had read by then (a prefix: module docstring of
        :mod:`workbench.app.runs.replay`)."""
        rows, batch = self.read()
        s = self.settings
        key = (self.generation, self.checkpoint, rows, batch)
        if self._last is not None and self._last[0] == key:  # no new micro-batch: no new read
            view, expected = self._last[1:]
        else:
            view, expected = self._views(rows, batch)
            self._last = (key, view, expected)
        return CoalesceSnapshot(
            generation=self.generation,
            replayed=self.replayed,
            total=self.total,
            metrics=self.metrics(),
            checkpoint=self.checkpoint,
            settings=s,
            view=view,
            expected=expected,
            read=rows,
            caught_up=self.caught_up(rows),
        )

    def _views(self, rows: int, batch: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Spark's view after micro-batch ``batch`` and the in-process view of the first
        ``rows`` records."""
        s = self.settings
        view = expected = _empty_view()
        if rows and batch is not None:
            if s.scheme == "eager":
                view = read_extents(self.spark, self.folder("out"), s.window, batch)
            else:
                arrived_by = float(self.records["arrival"].iloc[rows - 1])
                scan = lazy_coalesce(
                    self.spark, self.folder("out"), s.window, s.equivalence, arrived_by
                )
                view = tidy_extents(scan.toPandas()[EXTENT_COLUMNS])
            expected = in_process_view(self.records.iloc[:rows], s.window, s.equivalence)
        return view, expected
