"""The live PTJoin's sink and batch step (PTJoin Section 3 on Spark;
:mod:`workbench.spark.queries.live` runs them).

:class:`BatchWriter` is the query's ``foreachBatch`` step: it writes a micro-batch (the pairs
its tasks decided under the run's current parameters, ``params.json`` in the run folder,
:mod:`workbench.spark.queries.live_params`, and the rejects) with Spark's distributed writer
into the folder ``batch=<id>`` of the run's sink, then a small record per batch
(``batches/<id>.json``).  :func:`read_live_pairs` and :func:`read_live_rejects` read the sink
with Arrow.

**One plain write per batch**: the step first removes the batch's folder (what an
earlier attempt of that batch id wrote), then appends the batch to it with the file committer
that moves each task's file into place at the task's commit (:data:`WRITE_OPTIONS`).  A batch
is committed by the query's commit log, not by the write, so the write needs no job-level
atomicity of its own: a re-run of a batch id replaces exactly that batch, as a dynamic
partition overwrite did, without its staging folder, its marker row and its renames at the
job's commit (``bench live --levers`` weighs both).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from workbench.operators.base import StreamSpec
from workbench.probability import band_prob_many
from workbench.spark.queries.live_params import read_params
from workbench.spark.queries.source import sink_partitions

__all__ = [
    "PAIR_COLUMNS",
    "REJECT_COLUMNS",
    "WRITE_OPTIONS",
    "BatchWriter",
    "latest_pairs",
    "read_kind",
    "read_live_pairs",
    "read_live_rejects",
]

PAIR_COLUMNS = ["a_id", "a_template", "a_t", "b_id", "b_template", "b_t", "d", "delta"]
"""A pair as the sink keeps it: its events' ids, templates and times, and the ``(d, delta)``
it was decided under."""
REJECT_COLUMNS = ["reason", "stream", "id", "record"]
WRITE_OPTIONS = {
    "mapreduce.fileoutputcommitter.algorithm.version": "2",
    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
}
"""The batch write's Hadoop options: a task's file moves into the batch folder at the task's
commit (no second move at the job's commit), and no ``_SUCCESS`` file (module docstring)."""


def read_kind(folders: list[Path], kind: str, columns: list[str]) -> pd.DataFrame:
    """The ``kind`` rows of some batch partitions (Arrow; hidden staging folders are not
    read), with ``columns``."""
    files = [f for folder in folders for f in folder.glob("*.parquet")]
    if not files:
        return pd.DataFrame(columns=columns)
    table = ds.dataset(files, format="parquet").to_table(
        columns=columns, filter=ds.field("kind") == kind
    )
    return table.to_pandas()


def read_live_pairs(
    run_dir: str | os.PathLike[str], batches: list[int] | None = None
) -> pd.DataFrame:
    """The pairs a live run committed (all batches, or those of ``batches``), whether or not it
    still runs; read with Arrow from the sink's partitions."""
    parts = sink_partitions(Path(run_dir) / "pairs")
    if batches is not None:
        wanted = set(batches)
        parts = [(b, p) for b, p in parts if b in wanted]
    return read_kind([p for _, p in parts], "pair", PAIR_COLUMNS)


def latest_pairs(
    run_dir: str | os.PathLike[str],
    records: list[dict[str, object]],
    streams: tuple[StreamSpec, StreamSpec],
    n: int = 20,
) -> pd.DataFrame:
    """The last ``n`` pairs a live run wrote (of its last micro-batches with pairs, by their
    batch ``records``; the latest detected), with their exact probability P(|Xa - Xb| <= d);
    reads only those batches."""
    wanted: list[int] = []
    count = 0
    for record in reversed(records):
        if count >= n:
            break
        if record["pairs"]:
            wanted.append(int(record["batch"]))  # type: ignore[call-overload]
            count += int(record["pairs"])  # type: ignore[call-overload]
    frame = read_live_pairs(run_dir, wanted) if wanted else None
    if frame is None or frame.empty:
        return pd.DataFrame(columns=[*PAIR_COLUMNS, "probability"])
    order = np.argsort(np.maximum(frame["a_t"], frame["b_t"]).to_numpy(), kind="stable")
    frame = frame.iloc[order[-n:]].reset_index(drop=True)
    a, b = (s.templates for s in streams)
    his = [a.event(int(u), t) for u, t in zip(frame["a_template"], frame["a_t"], strict=True)]
    hjs = [b.event(int(v), t) for v, t in zip(frame["b_template"], frame["b_t"], strict=True)]
    frame["probability"] = band_prob_many(his, hjs, frame["d"].to_numpy())
    return frame


class BatchWriter:
    """The live query's ``foreachBatch`` step (module docstring): write micro-batch ``batch_id``
    (pairs decided in the tasks, rejects) with Spark's distributed writer into the folder
    ``batch=<id>``, replacing any earlier attempt of that id; then record the batch's counts
    and the run's parameters.  Picklable (Spark Connect runs it in the server's Python)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = str(run_dir)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (see the class docstring)."""
        run_dir = Path(self.run_dir)
        params = read_params(run_dir)
        folder = run_dir / "pairs" / f"batch={batch_id}"
        # an earlier attempt of this batch id; a folder that cannot be written fails the write
        shutil.rmtree(folder, ignore_errors=True)
        kind = F.col("kind")
        counts = Observation(f"live-{uuid.uuid4().hex}")
        out = batch.observe(
            counts,
            F.sum((kind == "pair").cast("long")).alias("pairs"),
            F.sum((kind == "reject").cast("long")).alias("rejects"),
        )
        out.write.mode("append").options(**WRITE_OPTIONS).parquet(str(folder))
        got = {k: int(v or 0) for k, v in counts.get.items()}
        record = {
            "batch": batch_id,
            "time": time.time(),
            "pairs": got["pairs"],
            "rejects": got["rejects"],
            **asdict(params),
        }
        records = run_dir / "batches"
        records.mkdir(exist_ok=True)
        tmp = records / f".{batch_id:06d}.json.tmp"
        tmp.write_text(json.dumps(record))
        os.replace(tmp, records / f"{batch_id:06d}.json")


def read_live_rejects(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The rejected records a live run committed (reason, stream, id, record), read with
    Arrow from the sink's partitions."""
    folders = [p for _, p in sink_partitions(Path(run_dir) / "pairs")]
    return read_kind(folders, "reject", REJECT_COLUMNS)
