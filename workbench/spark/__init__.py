"""The Spark pipeline: the only part of the workbench that imports PySpark."""

from __future__ import annotations

from workbench.spark.metrics import ProgressLog, attach_progress
from workbench.spark.session import spark_session
from workbench.spark.source import read_rejects, read_stream, rejects_query, with_reason
from workbench.spark.wjoin import read_results, wjoin_query, wjoin_results

__all__ = [
    "ProgressLog",
    "attach_progress",
    "read_rejects",
    "read_results",
    "read_stream",
    "rejects_query",
    "spark_session",
    "wjoin_query",
    "wjoin_results",
    "with_reason",
]
