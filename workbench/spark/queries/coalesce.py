"""Temporal coalescing of window extents on Spark Structured Streaming (coalescing paper,
Sections 2-5; the in-process extents of :mod:`workbench.coalesce` are the oracle,
:func:`in_process_view`).  One module per algorithm family, all names importable from here:

- :mod:`workbench.spark.queries.coalesce_base`: the tuple schema, the classified input
  (:func:`coalesce_input`), the view's columns, :class:`CoalesceSettings` and
  :func:`restart_kind`;
- :mod:`workbench.spark.queries.coalesce_eager`: eager coalescing, a per-group stateful operator
  (:func:`eager_coalesce_query`, :func:`eager_update`, :func:`read_extents`,
  :func:`extents_view`);
- :mod:`workbench.spark.queries.coalesce_lazy`: lazy coalescing, raw tuples in a sink and a
  window-function scan when asked (:func:`raw_tuples_query`, :func:`lazy_coalesce`).

**Tuples.**  A replay record ``(group, id, value, t, arrival)`` is a raw stream tuple of
Section 2.3: timestamp ``t`` (ms), a time-invariant grouping attribute ``group`` and one
time-varying coalescing attribute ``value``; ``id`` numbers the tuples in arrival order and
breaks ties in ``t`` (the in-process extents order ties by arrival).  As in
:mod:`workbench.coalesce.extent`, a tuple is valid over ``[t, t_next)`` (``t_next`` the
group's next timestamp, or ``t`` for the latest), so consecutive tuples of a group always meet
and a run breaks only where the value-equivalence changes.  :func:`coalesce_input` classifies
every line (:mod:`workbench.spark.queries.source`): malformed, or ``"late"`` when ``arrival > t +
D``, else accepted; only accepted tuples are coalesced.

**Windows.**  A time-based window of size T holds the accepted tuples with
``t >= t_max - T`` (``t_max`` the largest timestamp of *all* groups, as one in-process extent
fed every group).  A tuple-based window of size w holds each group's w tuples with the largest
``(t, id)`` (a partitioned window: one in-process extent per group), because a per-group
operator sees its own group's tuples only, and the watermark carries a time bound across
groups, never a rank.  Both views depend only on the set of tuples arrived so far, not on
their order (a tuple too late on arrival would lie outside every later window), which is what
makes a micro-batch engine able to reproduce them exactly.

**Equivalences supported on Spark**: all five of :class:`~workbench.coalesce.Equivalence`
(equal, absolute and relative bounded difference, increasing, quantised) on one DOUBLE
coalescing attribute, with exactly the in-process arithmetic: the one table of rules
(:data:`~workbench.coalesce.equivalence.KINDS`) evaluated over NumPy arrays
(:data:`~workbench.coalesce.equivalence.NUMPY`, the eager state) and over columns
(:data:`~workbench.spark.queries.coalesce_lazy.SPARK`, the lazy scan), IEEE doubles throughout
(``floor`` of the quotient for quantised values, the representative ``floor(v / q) * q``); an
unknown kind is a ``ValueError``.  Several coalescing attributes (tuple values) are not
supported: the replay schema has one value column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.coalesce import EagerExtent, Equivalence, Readings, Window
from workbench.spark.queries.coalesce_base import (
    EXTENT_COLUMNS,
    TUPLE_FIELDS,
    CoalesceSettings,
    coalesce_input,
    restart_kind,
    tidy_extents,
)
from workbench.spark.queries.coalesce_eager import (
    OUTPUT_SCHEMA,
    STATE_SCHEMA,
    eager_coalesce_query,
    eager_update,
    extents_view,
    read_emitted,
    read_extents,
)
from workbench.spark.queries.coalesce_lazy import SPARK, lazy_coalesce, raw_tuples_query

RECORD_COLUMNS = ["group", "id", "value", "t", "arrival"]
"""A replay record's columns, in the order of :data:`TUPLE_FIELDS`."""

__all__ = [
    "EXTENT_COLUMNS",
    "OUTPUT_SCHEMA",
    "SPARK",
    "STATE_SCHEMA",
    "RECORD_COLUMNS",
    "TUPLE_FIELDS",
    "CoalesceSettings",
    "coalesce_input",
    "coalesce_records",
    "eager_coalesce_query",
    "eager_update",
    "extents_view",
    "in_process_view",
    "lazy_coalesce",
    "raw_tuples_query",
    "read_emitted",
    "read_extents",
    "readings_records",
    "restart_kind",
]


def in_process_view(
    tuples: pd.DataFrame, window: Window, equivalence: Equivalence | None = None
) -> pd.DataFrame:
    """The in-process eager extent's view of accepted ``tuples`` pushed in arrival order: one
    extent over all groups for a time window, one per group for a tuple window (the Spark
    semantics above).  Columns ``EXTENT_COLUMNS``."""
    ordered = tuples.sort_values(["arrival", "id"], kind="stable")
    slots = [ordered] if window.kind == "time" else [g for _, g in ordered.groupby("group")]
    extents = []
    for rows in slots:
        extent = EagerExtent(window, equivalence)
        extent.push_batch(Readings(rows["t"], rows["value"], rows["group"]))
        extents.append(extent)
    view = [(c.group, c.value, c.ts, c.te, c.count) for e in extents for c in e.view()]
    return tidy_extents(pd.DataFrame(view, columns=EXTENT_COLUMNS))


def readings_records(readings: pd.DataFrame, motes: list[int], measure: str) -> pd.DataFrame:
    """The ``motes``' ``measure`` readings (``time``, ``mote``, ``arrival`` and the measure) as
    replay records (:func:`coalesce_records`; ms since the first reading of all motes).

    >>> t = pd.Timestamp("2004-02-28")
    >>> r = pd.DataFrame({"time": [t, t + pd.Timedelta(seconds=2)], "mote": [1, 2],
    ...                   "temperature": [19.5, 20.0], "arrival": [t, t + pd.Timedelta(seconds=3)]})
    >>> readings_records(r, [2], "temperature").to_dict("records")
    [{'group': 2, 'id': 0, 'value': 20.0, 't': 2000.0, 'arrival': 3000.0}]
    """
    table = readings[readings["mote"].isin(motes)]
    start = readings["time"].min()
    ms = {c: (table[c] - start).dt.total_seconds().to_numpy() * 1000.0 for c in ("time", "arrival")}
    return coalesce_records(
        ms["time"], table["mote"].to_numpy(), table[measure].to_numpy(), ms["arrival"]
    )


def coalesce_records(
    t_ms: np.ndarray, group: np.ndarray, value: np.ndarray, arrival_ms: np.ndarray
) -> pd.DataFrame:
    """Replay records from columns in arrival order: rows without a value are left out (Spark
    rejects them as malformed), ids number the rest in arrival order.

    >>> coalesce_records(np.array([5.0, 1.0]), np.array([3, 3]), np.array([np.nan, 2.5]),
    ...                  np.array([6.0, 2.0])).to_dict("records")
    [{'group': 3, 'id': 0, 'value': 2.5, 't': 1.0, 'arrival': 2.0}]
    """
    frame = pd.DataFrame(
        {"group": group.astype(np.int64), "value": value, "t": t_ms, "arrival": arrival_ms}
    )
    frame = frame.dropna(subset=["value"]).sort_values("arrival", kind="stable")
    frame.insert(1, "id", np.arange(len(frame), dtype=np.int64))
    return frame[RECORD_COLUMNS].reset_index(drop=True)
