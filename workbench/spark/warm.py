"""The dashboard server's Spark: its shared session started in the background at server
start, and warmed up by a small live join (PTJoin Section 3 on Spark) before a user's first
Start."""

from __future__ import annotations

import logging
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
from pyspark.sql import SparkSession

from workbench.data.replay import Replayer
from workbench.data.synthetic import synthetic_events
from workbench.operators.base import StreamSpec
from workbench.spark.queries.live import LiveJoin
from workbench.spark.session import SPARK_WARM, shared_session
from workbench.templates import random_templates

__all__ = ["start_shared_session", "warm_up"]

WARM_FILE_MS = 250.0
"""Event time per warm-up file: its events fill 16 files, read one per micro-batch."""


def warm_up(spark: SparkSession) -> int:
    """Run a small live join to its end on ``spark`` (a few hundred synthetic events, both
    decision paths), so the JVM has loaded and compiled what a live join runs (the file
    source, the join and its state store, the decision, the Parquet writer) before a user's
    first Start; returns the pairs it found.  It reads one file per micro-batch, so each run
    is many batches: what runs once per batch (planning, the state store's load and commit,
    the logs) is compiled by the JVM only after it has run a few dozen times.  The dashboard
    server calls it in the background after starting its session."""
    rng = np.random.default_rng(0)
    streams = (
        StreamSpec(random_templates(rng, 3, 4, 400.0, "A"), 300.0),
        StreamSpec(random_templates(rng, 3, 4, 400.0, "B"), 300.0),
    )
    events = synthetic_events(rng, 200, (3, 3), mean_interarrival=20.0, max_delay=(300, 300))
    pairs = 0
    with tempfile.TemporaryDirectory(prefix="workbench-warm-up-") as tmp:
        Replayer(events, Path(tmp) / "in", batch_ms=WARM_FILE_MS).run()
        for k, d in enumerate((800.0, 100.0)):  # the fast path, then the probability step
            live = LiveJoin(
                spark,
                Path(tmp) / "in",
                streams,
                d,
                0.5,
                Path(tmp) / f"work-{k}",
                max_files_per_trigger=1,
                available_now=True,
                name=f"warm-up-{uuid.uuid4().hex[:8]}",
            )
            live.start()
            live.await_termination()
            pairs += sum(int(b["pairs"]) for b in live.batches)  # type: ignore[call-overload]
            live.close()
    return pairs


def start_shared_session() -> threading.Thread:
    """Make :func:`shared_session` and warm it up (:func:`warm_up`) in a
    background thread (the dashboard server calls it at start, so the first Start finds Java
    running and a live join's code loaded).  A failure (no Java) is only logged here: the
    first Start calls :func:`shared_session` again and shows the error in the page."""

    def start() -> None:
        log, start = logging.getLogger("workbench"), time.monotonic()
        try:
            warm_up(shared_session())
        except Exception as exc:  # noqa: BLE001 (reported again, in the page, at Start)
            log.warning("Spark did not start: %s", exc)
        else:
            log.info("%s after %.0f s", SPARK_WARM, time.monotonic() - start)

    thread = threading.Thread(target=start, name="spark-session-start", daemon=True)
    thread.start()
    return thread
