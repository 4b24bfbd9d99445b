"""What eager and lazy coalescing on Spark share (:mod:`workbench.spark.queries.coalesce`): the
replay's tuple schema and its classified input, the extent view's columns, and a query's settings
with what a change of them costs on restart.

**Restarts** (:func:`restart_kind`): the eager state keeps the tuples of a *retention*
``R >=`` the window size, so a new window size up to R restarts from the same checkpoint (the
operator applies the size when it emits); a larger size, another window kind, another
retention or another equivalence needs a new checkpoint (the state holds runs coalesced under
the old equivalence and nothing older than R), and the operator refuses a checkpoint written
with other state settings.  Lazy coalescing keeps raw tuples, so its sink query is unaffected
by any window or equivalence change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from workbench.coalesce import Equivalence, Window
from workbench.spark.queries.source import read_classified

__all__ = [
    "EXTENT_COLUMNS",
    "TUPLE_FIELDS",
    "CoalesceSettings",
    "coalesce_input",
    "restart_kind",
    "tidy_extents",
]

TUPLE_FIELDS = "group INT, id LONG, value DOUBLE, t DOUBLE, arrival DOUBLE"
EXTENT_COLUMNS = ["group", "value", "start", "end", "count"]


@dataclass(frozen=True)
class CoalesceSettings:
    """A coalescing query's window, equivalence, scheme and (eager) retention.

    ``retention`` (default: the window size) is how much the eager state keeps: time units for
    time windows, tuples per group for tuple windows; it must be at least the window size.

    >>> CoalesceSettings(Window("time", 5000.0)).retained
    5000.0
    """

    window: Window
    equivalence: Equivalence = Equivalence()
    scheme: Literal["eager", "lazy"] = "eager"
    retention: float | None = None

    def __post_init__(self) -> None:
        if self.scheme not in ("eager", "lazy"):
            raise ValueError(f"scheme = {self.scheme!r} must be 'eager' or 'lazy'")
        if self.retention is not None:
            Window(self.window.kind, self.retention)  # same validation as a window size
            if self.retention < self.window.size:
                raise ValueError(
                    f"retention = {self.retention!r} must be at least the window size "
                    f"{self.window.size!r}"
                )

    @property
    def retained(self) -> float:
        """The retention in effect."""
        return self.window.size if self.retention is None else float(self.retention)

    @property
    def state_key(self) -> str:
        """What the eager state depends on (not the window size): kind, retention, equivalence."""
        eq = self.equivalence
        return f"{self.window.kind}/{self.retained!r}/{eq.kind}/{eq.tolerance!r}/{eq.quantum!r}"


def restart_kind(old: CoalesceSettings, new: CoalesceSettings) -> tuple[str, str]:
    """How a query with settings ``old`` restarts under ``new``: ``("same", why)`` from its
    checkpoint, or ``("new", why)`` on a new checkpoint (re-reading the replay from its start).

    >>> old = CoalesceSettings(Window("time", 60_000.0), retention=120_000.0)
    >>> restart_kind(old, CoalesceSettings(Window("time", 90_000.0), retention=120_000.0))[0]
    'same'
    >>> restart_kind(old, CoalesceSettings(Window("time", 180_000.0)))[0]
    'new'
    """
    if old == new:
        return "same", "settings unchanged"
    if old.scheme != new.scheme:
        return "new", (
            f"the scheme changes from {old.scheme} to {new.scheme}: eager keeps coalesced state, "
            "lazy a sink of raw tuples; they are different queries"
        )
    if new.scheme == "lazy":
        return "same", (
            "lazy coalescing stores raw tuples: the raw-tuple query is unchanged and the next "
            "scan applies the new window and equivalence"
        )
    if old.window.kind != new.window.kind:
        return "new", (
            f"the window kind changes from {old.window.kind} to {new.window.kind}: the state, "
            "the watermark and the timeouts differ"
        )
    if old.equivalence != new.equivalence:
        return "new", (
            "the equivalence changes: the state holds runs coalesced under the old one "
            "(one value per run for equality and quantisation)"
        )
    if new.window.size > old.retained:
        return "new", (
            f"the window size {new.window.size:g} exceeds what the state retains "
            f"({old.retained:g}): older tuples are gone, so the replay is re-read"
        )
    if old.retained != new.retained:
        return "new", (
            f"the retention changes from {old.retained:g} to {new.retained:g}: the watermark "
            "delay and what the state keeps differ"
        )
    return "same", (
        f"the window size {old.window.size:g} -> {new.window.size:g} fits in the retained "
        f"{old.retained:g}: the state has every tuple the new window needs"
    )


def coalesce_input(
    spark: SparkSession,
    source_dir: str,
    max_delay: float,
    max_files_per_trigger: int | None = None,
) -> tuple[DataFrame, DataFrame]:
    """The accepted tuples of the replay under ``source_dir`` (with ``ts``, ``t`` as a
    timestamp) and the classified stream (for
    :func:`~workbench.spark.queries.source.rejects_query`).

    A tuple is late (rejected) when ``arrival > t + max_delay``.
    """
    if not (math.isfinite(max_delay) and max_delay >= 0):
        raise ValueError(f"max_delay = {max_delay!r} must be a finite number >= 0")
    on_time = F.col("arrival") <= F.col("t") + max_delay
    return read_classified(
        spark, source_dir, TUPLE_FIELDS, [("late", on_time)], "t", max_files_per_trigger
    )


def tidy_extents(frame: pd.DataFrame) -> pd.DataFrame:
    """An extent view (``EXTENT_COLUMNS``) with its column types, sorted by group and start."""
    frame = frame.astype(
        {
            "group": np.int64,
            "value": np.float64,
            "start": np.float64,
            "end": np.float64,
            "count": np.int64,
        }
    )
    return frame.sort_values(["group", "start"], kind="stable").reset_index(drop=True)
