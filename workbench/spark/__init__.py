"""The Spark pipeline: the only part of the workbench that imports PySpark."""

from __future__ import annotations

from workbench.spark.metrics import ProgressLog, attach_progress
from workbench.spark.ptjoin import Decider, ptjoin_candidates, ptjoin_query, read_pairs
from workbench.spark.session import spark_session
from workbench.spark.source import read_rejects, read_stream, rejects_query, with_reason

__all__ = [
    "Decider",
    "ProgressLog",
    "attach_progress",
    "ptjoin_candidates",
    "ptjoin_query",
    "read_pairs",
    "read_rejects",
    "read_stream",
    "rejects_query",
    "spark_session",
    "with_reason",
]
