"""What a live join runs with: :class:`LiveParams` (PTJoin Section 3's ``d`` and ``delta``, the
envelope ``d_max`` its state covers, the streams' max delays, the trigger, the watermark's
slack and the timing join the tasks run), and the run folder's ``params.json`` that carries
them to the executors (:func:`write_params`, :func:`read_params`): the driver steers a running
query by rewriting it, and the batch step (:mod:`workbench.spark.queries.live_ranges`) reads it
again when it changes.

>>> import tempfile
>>> params = LiveParams(d=200.0, delta=0.8, d_max=400.0, max_delay=(50.0, 50.0))
>>> with tempfile.TemporaryDirectory() as run:
...     write_params(Path(run), params)
...     read_params(Path(run)) == params
True
>>> LiveParams(d=200.0, delta=1.0, d_max=400.0, max_delay=(50.0, 50.0))
Traceback (most recent call last):
ValueError: delta = 1.0 must lie strictly between 0 and 1
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from workbench.operators import TIMING_JOINS
from workbench.operators.base import StreamSpec

__all__ = ["LiveParams", "read_params", "write_params"]


@dataclass(frozen=True)
class LiveParams:
    """What a :class:`LiveJoin` runs with (times in milliseconds); ``algorithm`` names the
    operator the tasks run (:data:`~workbench.operators.TIMING_JOINS`), ``delta`` is its
    threshold (an interval correlation's ct)."""

    d: float
    delta: float
    d_max: float
    max_delay: tuple[float, float]
    trigger_seconds: float = 1.0
    extra_watermark_ms: float = 0.0
    algorithm: str = "ptjoin"

    def __post_init__(self) -> None:
        if self.algorithm not in TIMING_JOINS:
            raise ValueError(
                f"algorithm = {self.algorithm!r} is not a timing join; choose one of "
                f"{', '.join(TIMING_JOINS)}"
            )
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

    def check(self, streams: tuple[StreamSpec, StreamSpec]) -> None:
        """Refuse, on the driver, streams the algorithm does not take (an interval correlation
        over histogram templates: ValueError naming the template), before any task would."""
        TIMING_JOINS[self.algorithm].config_type(streams=streams, d=self.d, threshold=self.delta)


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
