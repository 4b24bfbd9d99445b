"""A Spark Connect client process for the Connect test: the steerable LiveJoin on a replay,
pairs saved.

``python tests/support/connect_client.py CASE.pkl URL SOURCE OUT``: CASE holds
``(streams, settings)`` with ``settings`` a list of ``(d, delta)``; the committed pairs of
setting k go to ``OUT/k/live.npy`` (a LiveJoin started on another delta, then steered to this
one before its first batch).  A client still running after
:data:`STALL_S` seconds prints every thread's stack and exits: a stall shows where it is.
"""

from __future__ import annotations

import faulthandler
import pickle
import sys
from pathlib import Path

import numpy as np

from workbench.events import sort_pairs
from workbench.spark import spark_session
from workbench.spark.queries.live import LiveJoin

STALL_S = 300
"""Seconds after which the client reports its threads' stacks and exits (a passing run takes
under a minute)."""


def main(argv: list[str]) -> None:
    faulthandler.dump_traceback_later(STALL_S, exit=True)
    case, url, source, out = argv[:4]
    with open(case, "rb") as f:
        streams, settings = pickle.load(f)
    spark = spark_session(url)  # the only change from a local run: the URL
    for k, (d, delta) in enumerate(settings):
        folder = Path(out) / str(k)
        live = LiveJoin(
            spark, source, streams, d, 0.5, folder / "live", d_max=2 * d, available_now=True
        )
        live.set_delta(delta)  # steered through the run folder: the step runs on the server
        live.start()
        live.await_termination()
        pairs = live.pairs()[["a_id", "b_id"]].to_numpy(dtype=np.int64).reshape(-1, 2)
        np.save(folder / "live.npy", sort_pairs(pairs))
        live.close()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
