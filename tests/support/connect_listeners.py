"""A Spark Connect client for the listener test: detach a busy progress listener right after
its query stops, again and again, and count the detaches that hang.

``python tests/support/connect_listeners.py URL ROUNDS``: each round opens a session of its
own, adds a :class:`~workbench.spark.metrics.ProgressLog` that takes 0.1 s per progress event (so
events queue behind it), runs a query of a micro-batch every 20 ms for 2 s, stops it and
detaches the listener (:func:`~workbench.spark.metrics.detach_progress`) on a thread given
:data:`HANG_S` seconds.  It prints ``hung H of ROUNDS``.  Removing the listener straight
away instead hangs in about 4 rounds of 10 on pyspark 4.3.0 (SPARK-59623).  A hung removal
keeps a thread waiting for good, so the client leaves with ``os._exit``.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from workbench.spark import spark_session
from workbench.spark.metrics import ProgressLog, detach_progress

HANG_S = 15.0
"""Seconds after which a detach counts as hung (one takes milliseconds)."""


class SlowLog(ProgressLog):
    """A progress log that takes 0.1 s per progress event."""

    def onQueryProgress(self, event: object) -> None:  # noqa: N802 (Spark's API)
        time.sleep(0.1)
        super().onQueryProgress(event)


def main(url: str, rounds: int) -> int:
    base, hung = spark_session(url), 0
    for _ in range(rounds):
        spark = base.newSession()  # a hung round's listener bus stays locked: not reused
        log = SlowLog()
        spark.streams.addListener(log)
        query = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 10)
            .load()
            .writeStream.format("noop")
            .trigger(processingTime="20 milliseconds")
            .start()
        )
        log.watch(query.id)
        time.sleep(2.0)
        query.stop()
        detach = threading.Thread(target=detach_progress, args=(spark, log), daemon=True)
        detach.start()
        detach.join(HANG_S)
        hung += detach.is_alive()
    return hung


if __name__ == "__main__":
    rounds = int(sys.argv[2])
    print(f"hung {main(sys.argv[1], rounds)} of {rounds}", flush=True)
    os._exit(0)
