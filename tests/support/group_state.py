"""A stand-in for the ``GroupState`` Spark hands an ``applyInPandasWithState`` step, for
driving a state step micro-batch by micro-batch without Spark."""

from __future__ import annotations

from pyspark.sql import Row
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout


def stand_in_state(
    value: tuple | None,
    watermark: int,
    timed: bool,
    timed_out: bool = False,
    timeout: int = GroupState.NO_TIMESTAMP,
) -> GroupState:
    """A group's state as Spark passes it: its ``value`` (None: no state yet), the event-time
    ``watermark`` (ms), an event-time timeout or none (``timed``), whether the call is the
    timeout's (``timed_out``) and the timeout set before."""
    return GroupState(
        Row(*value) if value is not None else None,
        0,
        watermark,
        GroupStateTimeout.EventTimeTimeout if timed else GroupStateTimeout.NoTimeout,
        timed_out,
        timed,
        value is not None,
        False,
        False,
        timeout,
        b"",
        None,
    )
