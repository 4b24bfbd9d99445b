"""Detaching a progress listener only once its queries' ends have reached it: pyspark's Connect
client hangs when an event arrives while its last listener is removed (SPARK-59623), and a
classic session's lagging event may reach a Python process that is gone.  Over a real Connect
server, in ``test_spark_live_drivers.py``:
``test_a_busy_listener_detaches_over_spark_connect_without_hanging`` and the LiveJoin's close
in ``test_the_live_join_runs_over_spark_connect``."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

from workbench.spark.metrics import ProgressLog, detach_progress


class _Streams:
    """A session's listener manager that notes what its listener had been told at removal."""

    def __init__(self) -> None:
        self.removed: list[tuple[ProgressLog, bool]] = []

    def removeListener(self, log: ProgressLog) -> None:  # noqa: N802 (Spark's API)
        self.removed.append((log, log.wait_ended(0.0)))


def _session(module: str) -> object:
    """A session whose class lives in ``module`` (Connect's or the classic one)."""
    cls = type("SparkSession", (), {"__module__": module})
    session = cls()
    session.streams = _Streams()
    return session


def _watching(query_id: str) -> ProgressLog:
    log = ProgressLog()
    log.watch(query_id)
    return log


def _end(log: ProgressLog, query_id: str, after: float) -> threading.Thread:
    """Deliver the query's end to ``log`` after ``after`` s, from another thread."""

    def deliver() -> None:
        time.sleep(after)
        log.onQueryTerminated(SimpleNamespace(id=query_id))

    thread = threading.Thread(target=deliver)
    thread.start()
    return thread


def test_over_connect_the_listener_goes_once_its_query_end_has_arrived():
    spark, log = _session("pyspark.sql.connect.session"), _watching("q-1")
    start = time.monotonic()  # before the delivery's clock starts: it cannot end sooner
    delivery = _end(log, "q-1", after=0.2)
    detach_progress(spark, log, timeout=10.0)
    delivery.join()
    assert spark.streams.removed == [(log, True)]
    assert time.monotonic() - start >= 0.2


def test_over_connect_an_end_that_never_arrives_is_logged_and_the_listener_still_goes(caplog):
    spark, log = _session("pyspark.sql.connect.session"), _watching("q-2")
    log.onQueryTerminated(SimpleNamespace(id="another query"))  # not the one watched
    with caplog.at_level(logging.WARNING, logger="workbench"):
        detach_progress(spark, log, timeout=0.2)
    assert spark.streams.removed == [(log, False)]
    assert "did not reach its listener within 0.2 s" in caplog.text


def test_a_classic_session_also_waits_for_the_query_end_then_removes_the_listener():
    """A classic session's events lag in a JVM queue: one still on its way when the listener
    goes would reach a Python process that may be gone (a Py4J trace in the JVM's log)."""
    spark, log = _session("pyspark.sql.session"), _watching("q-3")
    start = time.monotonic()
    delivery = _end(log, "q-3", after=0.2)
    detach_progress(spark, log, timeout=10.0)
    delivery.join()
    assert spark.streams.removed == [(log, True)]
    assert time.monotonic() - start >= 0.2


def test_a_listener_that_watches_nothing_goes_at_once_over_connect():
    spark, log = _session("pyspark.sql.connect.session"), ProgressLog()
    detach_progress(spark, log, timeout=10.0)
    assert spark.streams.removed == [(log, True)]
