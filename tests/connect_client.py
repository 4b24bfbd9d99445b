"""A Spark Connect client process for the Connect test: the PTJoin on a replay, pairs saved.

``python tests/connect_client.py CASE.pkl URL SOURCE OUT``: CASE holds ``(streams, d, delta)``;
the committed pairs go to ``OUT/pairs.npy``.
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
        streams, d, delta = pickle.load(f)
    spark = spark_session(url)  # the only change from a local run: the URL
    ptjoin_query(spark, source, streams, d, delta, f"{out}/pairs", f"{out}/chk").awaitTermination()
    np.save(Path(out) / "pairs.npy", read_pairs(spark, f"{out}/pairs"))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
