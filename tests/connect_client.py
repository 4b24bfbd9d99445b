"""A Spark Connect client process for the Connect test: the PTJoin on a replay, pairs saved.

``python tests/connect_client.py CASE.pkl URL SOURCE OUT``: CASE holds ``(streams, settings)``
with ``settings`` a list of ``(d, delta)``; the committed pairs of setting k go to
``OUT/k/pairs.npy``.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np

from workbench.spark import ptjoin_query, read_pairs, spark_session


def main(argv: list[str]) -> None:
    case, url, source, out = argv[:4]
    with open(case, "rb") as f:
        streams, settings = pickle.load(f)
    spark = spark_session(url)  # the only change from a local run: the URL
    for k, (d, delta) in enumerate(settings):
        folder = Path(out) / str(k)
        ptjoin_query(
            spark, source, streams, d, delta, str(folder / "pairs"), str(folder / "chk")
        ).awaitTermination()
        np.save(folder / "pairs.npy", read_pairs(spark, str(folder / "pairs")))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
