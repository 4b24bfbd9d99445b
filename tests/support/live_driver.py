"""A Spark driver process for the kill and cluster tests: runs a LiveJoin on a pickled case.

``python tests/support/live_driver.py CASE.pkl MASTER SOURCE WORK [--available-now] [--conf K=V]
[--collect]``: CASE holds ``(streams, d, delta)``.  Without ``--available-now`` it runs one file
per 0.2 s micro-batch until killed.  ``--collect`` then tries to collect the run's whole output
into the driver and prints whether Spark refused (``spark.driver.maxResultSize``).
"""

from __future__ import annotations

import pickle
import sys
import time

from workbench.spark import spark_session
from workbench.spark.queries.live import LiveJoin


def main(argv: list[str]) -> None:
    case, master, source, work = argv[:4]
    available_now = "--available-now" in argv
    pairs = zip(argv, argv[1:], strict=False)
    conf = dict(value.split("=", 1) for flag, value in pairs if flag == "--conf")
    with open(case, "rb") as f:
        streams, d, delta = pickle.load(f)
    spark = spark_session(master, app_name="workbench-live-driver", shuffle_partitions=2, conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    live = LiveJoin(
        spark,
        source,
        streams,
        d,
        delta,
        work,
        trigger_seconds=0.2,
        max_files_per_trigger=None if available_now else 1,
        available_now=available_now,
    )
    live.start()
    if available_now:
        live.await_termination()
        print(f"pairs {len(live.pairs())}", flush=True)
        if "--collect" in argv:
            try:
                spark.read.parquet(str(live.run_dir / "pairs")).collect()
                print("collected", flush=True)
            except Exception as exc:  # noqa: BLE001 (reported to the test)
                print(f"collect refused: {'maxResultSize' in str(exc)}", flush=True)
        live.close()
        spark.stop()
        return
    while True:  # until killed
        time.sleep(1.0)


if __name__ == "__main__":
    main(sys.argv[1:])
