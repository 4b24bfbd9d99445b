"""The Spark pipeline: the only part of the workbench that imports PySpark."""

from __future__ import annotations

from workbench.spark.metrics import ProgressLog, attach_progress
from workbench.spark.ptjoin import EVENT_SCHEMA, ptjoin_query, read_pairs
from workbench.spark.session import spark_session

__all__ = [
    "EVENT_SCHEMA",
    "ProgressLog",
    "attach_progress",
    "ptjoin_query",
    "read_pairs",
    "spark_session",
]
