"""A SparkSession configured for the workbench: the master is configuration only."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["spark_session"]


def spark_session(
    master: str = "local[*]", app_name: str = "workbench", shuffle_partitions: int = 4
) -> SparkSession:
    """Get or create a session for ``master``: ``local[*]``, ``spark://host:port`` (a standalone
    cluster) or ``sc://host:port`` (Spark Connect).

    Python workers run the current interpreter (``PYSPARK_PYTHON``), so they see the project's
    packages; sockets stay on loopback unless ``SPARK_LOCAL_IP`` says otherwise.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master.startswith("sc://"):
        return builder.remote(master).getOrCreate()
    return (
        builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
        .getOrCreate()
    )
