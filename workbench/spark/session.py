"""A SparkSession configured for the workbench: the master is configuration only."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping

from pyspark.sql import SparkSession

from workbench.config import Settings, settings

__all__ = [
    "LIVE_CONF",
    "LIVE_SHUFFLE_PARTITIONS",
    "SPARK_WARM",
    "STATE_STORES",
    "SessionFactory",
    "WORKER_WARNINGS",
    "shared_session",
    "spark_session",
    "ui_url",
]

STATE_STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
"""Spark's state store providers by short name."""
LIVE_SHUFFLE_PARTITIONS = Settings.shuffle_partitions
"""Shuffle partitions of the dashboard's session: its micro-batches are small, and each
partition of a stream-stream join commits four state stores per batch (``bench live``)."""
LIVE_CONF = {
    "spark.sql.streaming.stateStore.providerClass": STATE_STORES["rocksdb"],
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
"""State in RocksDB with changelog checkpointing: a batch's commit writes the changes only
(the dashboard's session; ``bench live --levers`` weighs it)."""
WORKER_WARNINGS = "ignore::FutureWarning:pyspark.worker"
"""The Python workers' warning filter (``spark.executorEnv.PYTHONWARNINGS``; a session's
``conf`` may set another): pyspark's own worker pads ``applyInPandasWithState`` output with a
pandas concatenation that pandas 2 deprecates, a warning per micro-batch and partition that
no user of ours can act on (it filled the dashboard server's log)."""
SPARK_WARM = "Spark is up and warm"
"""What the server's log says once the background start and warm-up have ended (a room of
users opening the page during the warm-up shares the cores with it: about a minute of CPU)."""
SessionFactory = Callable[[], SparkSession]
"""Makes (or returns) the SparkSession of a run (a dashboard run calls it in its worker thread;
None there: :func:`shared_session`)."""

_SHARED_LOCK = threading.Lock()


def spark_session(
    master: str = "local[*]",
    app_name: str = "workbench",
    shuffle_partitions: int = 4,
    ui: bool = False,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Get or create a session for ``master``: ``local[*]``, ``spark://host:port`` (a standalone
    cluster) or ``sc://host:port`` (Spark Connect).

    Python workers run the current interpreter (``PYSPARK_PYTHON``), so they see the project's
    packages; sockets stay on loopback unless ``SPARK_LOCAL_IP`` says otherwise, and so does
    the Spark UI when ``ui`` turns it on (its address: ``sparkContext.uiWebUrl``).  ``conf``
    adds Spark settings (e.g. ``spark.driver.maxResultSize``).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    if master.startswith("sc://"):
        spark = builder.remote(master).getOrCreate()
        for key, value in {
            "spark.sql.shuffle.partitions": str(shuffle_partitions),
            **(conf or {}),
        }.items():
            spark.conf.set(key, value)  # session settings: the server's defaults stay
        return spark
    for key, value in {"spark.executorEnv.PYTHONWARNINGS": WORKER_WARNINGS, **(conf or {})}.items():
        builder = builder.config(key, value)
    return (
        builder.master(master)
        .config("spark.ui.enabled", str(ui).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
        .getOrCreate()
    )


def shared_session() -> SparkSession:
    """The process's one session for the dashboard's Spark runs, on the configured master and
    shuffle partitions (:func:`workbench.config.settings`: ``WORKBENCH_SPARK_MASTER``,
    default ``local[2]``), the Spark UI on loopback: made at the first call (Java starts:
    about half a minute), then reused by every browser session, each with queries of its own
    names."""
    config = settings()
    with _SHARED_LOCK:
        spark = spark_session(
            config.spark_master,
            app_name="workbench-dashboard",
            shuffle_partitions=config.shuffle_partitions,
            ui=True,
            conf=LIVE_CONF,
        )
        if not config.spark_master.startswith("sc://"):  # a Connect session has no context
            spark.sparkContext.setLogLevel("ERROR")
        return spark


def ui_url(spark: SparkSession) -> str | None:
    """The address of a session's Spark UI (None over Spark Connect or with the UI off)."""
    try:
        if spark.conf.get("spark.ui.enabled", "true") != "true":
            return None
        url = spark.sparkContext.uiWebUrl
    except Exception:  # noqa: BLE001 (a Connect session has no SparkContext)
        return None
    if url is None:
        return None
    # the UI binds the driver's address; Spark names it "localhost", which a browser may try
    # on IPv6 first, where nothing listens
    host = spark.conf.get("spark.driver.bindAddress", None)
    port = url.rsplit(":", 1)[-1]
    return f"http://{host}:{port}" if host else url
