"""The live PTJoin's sink and batch step (PTJoin Section 3 on Spark; :mod:`workbench.spark.live`
runs them).

:class:`BatchWriter` is the query's ``foreachBatch`` step: it decides a micro-batch under the
run's current parameters (``params.json`` in the run folder, :func:`write_params`) and writes
it with Spark's distributed writer into the partition ``batch=<id>`` of the run's sink by
dynamic partition overwrite (a marker row per batch, so a re-run replaces exactly that batch),
then a small record per batch (``batches/<id>.json``).  :func:`read_live_pairs` and
:func:`read_live_rejects` read the sink with Arrow.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from workbench.decision import BandDecider
from workbench.operators.base import StreamSpec
from workbench.spark.ptjoin import (
    CANDIDATE_COLUMNS,
    PAIR_INPUTS,
    Decider,
    decide_pending,
    pair_inputs,
)
from workbench.spark.source import sink_partitions

__all__ = [
    "PAIR_COLUMNS",
    "REJECT_COLUMNS",
    "BatchWriter",
    "LiveParams",
    "read_kind",
    "read_live_pairs",
    "read_live_rejects",
    "read_params",
    "write_params",
]

PAIR_COLUMNS = [*CANDIDATE_COLUMNS, "d", "delta"]
REJECT_COLUMNS = ["reason", "stream", "id", "record"]


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


def _resolve(frame: pd.DataFrame, band: BandDecider | None, where: str) -> pd.DataFrame:
    """Keep a pair frame's decided rows and those of its pending rows that join in exact
    arithmetic (per ``(d, delta)``); drop the ``pending`` column."""
    pending = frame["pending"].to_numpy(dtype=bool)
    if pending.any():
        if band is None:
            raise ValueError(
                f"{int(pending.sum())} pairs in {where} await their exact decision: pass the "
                "query's streams"
            )
        keep = ~pending
        keep[np.flatnonzero(pending)[decide_pending(band, frame[pending])]] = True
        frame = frame[keep]
    return frame[PAIR_COLUMNS].reset_index(drop=True)


def read_live_pairs(
    run_dir: str | os.PathLike[str],
    streams: tuple[StreamSpec, StreamSpec] | None = None,
    batches: list[int] | None = None,
) -> pd.DataFrame:
    """The pairs a live run committed (all batches, or those of ``batches``), whether or not it
    still runs; read with Arrow from the sink's partitions.  Pending pairs are decided
    exactly, which needs the run's ``streams``."""
    parts = sink_partitions(Path(run_dir) / "pairs")
    if batches is not None:
        wanted = set(batches)
        parts = [(b, p) for b, p in parts if b in wanted]
    frame = read_kind([p for _, p in parts], "pair", [*PAIR_COLUMNS, "pending"])
    band = BandDecider(*(s.templates for s in streams)) if streams is not None else None
    return _resolve(frame, band, str(run_dir))


@dataclass(frozen=True)
class LiveParams:
    """What a :class:`LiveJoin` runs with (times in milliseconds)."""

    d: float
    delta: float
    d_max: float
    max_delay: tuple[float, float]
    trigger_seconds: float = 1.0
    extra_watermark_ms: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.delta < 1:
            raise ValueError(f"delta = {self.delta!r} must lie strictly between 0 and 1")
        if not self.d >= 0:
            raise ValueError(f"d = {self.d!r} must be a non-negative window")
        if not self.d_max >= self.d:
            raise ValueError(f"d_max = {self.d_max!r} must be at least d = {self.d!r}")
        if not (np.isfinite(self.extra_watermark_ms) and self.extra_watermark_ms >= 0):
            raise ValueError(
                f"extra_watermark_ms = {self.extra_watermark_ms!r} must be finite and >= 0"
            )
        if not self.trigger_seconds > 0:
            raise ValueError(f"trigger_seconds = {self.trigger_seconds!r} must be positive")


def write_params(run_dir: Path, params: LiveParams) -> None:
    """Write the run's current parameters (atomically: the batch step reads them)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / f".params-{uuid.uuid4().hex}.json"
    tmp.write_text(json.dumps(asdict(params)))
    os.replace(tmp, run_dir / "params.json")


def read_params(run_dir: Path) -> LiveParams:
    """The run's current parameters (:func:`write_params`)."""
    raw = json.loads((run_dir / "params.json").read_text())
    return LiveParams(**{**raw, "max_delay": tuple(raw["max_delay"])})


class BatchWriter:
    """The live query's ``foreachBatch`` step (module docstring): decide one micro-batch under
    the run's current parameters and write it with Spark's distributed writer into the
    partition ``batch=<id>``, replacing any earlier attempt of that id; then record the
    batch's counts.  Picklable (Spark Connect runs it in the server's Python)."""

    def __init__(
        self, run_dir: str | os.PathLike[str], streams: tuple[StreamSpec, StreamSpec]
    ) -> None:
        self.run_dir = str(run_dir)
        self.streams = streams
        self._decider: Decider | None = None

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_decider": None}  # its tables belong to one session

    def _decider_for(self, spark: SparkSession) -> Decider:
        if self._decider is None or self._decider.spark is not spark:
            self._decider = Decider(spark, self.streams)
        return self._decider

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (see the class docstring)."""
        run_dir = Path(self.run_dir)
        params = read_params(run_dir)
        spark = batch.sparkSession
        decider = self._decider_for(spark)
        kind = F.col("kind")
        decided = decider.decide(
            batch.withColumn("through", kind == "reject"), params.d, params.delta, "through"
        ).drop("through")
        marker = spark.range(1).select(F.lit("batch").alias("kind"))
        out = (
            decided.unionByName(marker, allowMissingColumns=True)
            .withColumns({"d": F.lit(params.d), "delta": F.lit(params.delta)})
            .withColumn("batch", F.lit(batch_id))
        )
        counts = Observation(f"live-{uuid.uuid4().hex}")
        is_pair = (kind == "pair").cast("long")
        out = out.observe(
            counts,
            F.sum(is_pair).alias("pairs"),
            F.sum(is_pair * F.col("pending").cast("long")).alias("pending"),
            F.sum((kind == "reject").cast("long")).alias("rejects"),
        )
        sink = run_dir / "pairs"
        (
            out.write.mode("overwrite")
            .option("partitionOverwriteMode", "dynamic")
            .partitionBy("batch")
            .parquet(str(sink))
        )
        got = {k: int(v or 0) for k, v in counts.get.items()}
        pairs = got["pairs"]
        if got["pending"]:  # rare: decide the few pending pairs exactly for the count
            rows = (
                spark.read.parquet(str(sink / f"batch={batch_id}"))
                .filter("kind = 'pair' AND pending")
                .select(*PAIR_INPUTS)
                .toPandas()
            )
            joins = decider.band.decide_exact(*pair_inputs(rows), params.d, params.delta)
            pairs -= len(rows) - int(np.count_nonzero(joins))
        record = {
            "batch": batch_id,
            "time": time.time(),
            "pairs": pairs,
            "rejects": got["rejects"],
            **asdict(params),
        }
        folder = run_dir / "batches"
        folder.mkdir(exist_ok=True)
        tmp = folder / f".{batch_id:06d}.json.tmp"
        tmp.write_text(json.dumps(record))
        os.replace(tmp, folder / f"{batch_id:06d}.json")


def read_live_rejects(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The rejected records a live run committed (reason, stream, id, record), read with
    Arrow from the sink's partitions."""
    folders = [p for _, p in sink_partitions(Path(run_dir) / "pairs")]
    return read_kind(folders, "reject", REJECT_COLUMNS)
