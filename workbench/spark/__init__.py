"""The Spark pipeline: the only part of the workbench that imports PySpark.

What runs in Spark, the queries and jobs, is :mod:`workbench.spark.queries`; beside it here,
the plumbing: a configured session (:mod:`~workbench.spark.session`), a standalone cluster or
Spark Connect on loopback (:mod:`~workbench.spark.cluster`), a query's progress
(:mod:`~workbench.spark.metrics`), the ``workbench spark`` jobs (:mod:`~workbench.spark.submit`)
and the dashboard server's warm session (:mod:`~workbench.spark.warm`).
"""

from __future__ import annotations

from workbench.spark.metrics import ProgressLog, attach_progress
from workbench.spark.queries.source import read_rejects, read_stream, rejects_query, with_reason
from workbench.spark.queries.wjoin import read_results, wjoin_query, wjoin_results
from workbench.spark.session import spark_session

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
