"""Stand-ins for the live join tests: a LiveJoin without Spark (a newcomer's CSV is
:func:`harness.live_cases.newcomer_csv`)."""

from __future__ import annotations

import pandas as pd


class FakeLive:
    """Stands in for :class:`workbench.spark.queries.live.LiveJoin`: :meth:`step` commits a
    micro-batch of ``per_batch`` pairs; restarts on a new checkpoint start run 2, 3, ...;
    :meth:`caught_up` says what ``idle`` says (the test decides when Spark has caught up)."""

    instances: list[FakeLive] = []
    per_batch = 5

    def __init__(
        self,
        source_dir,
        streams,
        d,
        delta,
        work_dir,
        d_max,
        trigger_seconds,
        name,
        extra_watermark_ms,
    ):
        self.source_dir, self.streams, self.work_dir = source_dir, streams, work_dir
        self.name, self.watermark = name, extra_watermark_ms
        self.d, self.delta, self.d_max, self.trigger = d, delta, d_max, trigger_seconds
        self.run, self.batches, self.rows = 1, [], []
        self.active, self.closed, self.error, self.idle = False, False, None, False
        self.steered: list[str] = []
        self.progress = self
        self.ui_url = "http://127.0.0.1:4040"
        FakeLive.instances.append(self)

    @property
    def query_name(self) -> str:
        return f"{self.name}-run{self.run}"

    def start(self) -> None:
        self.active = True

    def close(self) -> None:
        self.active, self.closed = False, True

    def caught_up(self) -> bool:
        return self.idle

    def step(self) -> None:
        k = len(self.batches)
        self.batches.append({"batch": k, "pairs": self.per_batch, "d": self.d, "delta": self.delta})
        self.rows.append(
            {
                "query": self.query_name,
                "batch": k,
                "timestamp": pd.Timestamp.now(tz="UTC"),
                "input_rows_per_s": 100.0 + 10 * k,
                "processed_rows_per_s": 90.0 + 5 * k,
                "batch_ms": 300 + 50 * k,
                "state_rows": 40 + k,
                "dropped_by_watermark": 1,
            }
        )

    def frame(self):
        columns = ["query", "batch", "timestamp", "input_rows_per_s", "processed_rows_per_s"]
        return pd.DataFrame(
            self.rows, columns=[*columns, "batch_ms", "state_rows", "dropped_by_watermark"]
        )

    def set_delta(self, delta: float) -> str:
        self.delta = delta
        return f"delta = {delta:g} applies from the next micro-batch; no restart"

    def set_d(self, d: float) -> str:
        self.steered.append(f"d={d:g}")
        if d <= self.d_max:
            self.d = d
            return f"d = {d:g} ms is within the envelope: no restart"
        self.d = self.d_max = d
        self.run, self.batches, self.rows = self.run + 1, [], []
        return f"d = {d:g} ms: restarted on a new checkpoint (run {self.run})"

    def set_watermark(self, extra_ms: float) -> str:
        self.watermark = extra_ms
        self.run, self.batches, self.rows = self.run + 1, [], []
        return f"watermark +{extra_ms:g} ms: restarted on a new checkpoint (run {self.run})"

    def latest(self, n: int):
        k = sum(b["pairs"] for b in self.batches)
        return pd.DataFrame(
            {
                "a_id": range(k),
                "a_template": 0,
                "a_t": 61_500.0,
                "b_id": range(k),
                "b_template": 0,
                "b_t": 62_000.0,
                "d": self.d,
                "delta": self.delta,
                "probability": 0.91234,
            }
        ).tail(n)

    def rejects(self):
        return pd.Series({"late": 3}, name="records")
