"""Replay scenarios shared by the Spark tests, and the in-process oracle they must equal."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from workbench.data.replay import Replayer
from workbench.data.synthetic import synthetic_events
from workbench.events import Events
from workbench.operators import PTJoin, StreamSpec, replay
from workbench.timestamps import random_templates


def scenario(seed: int, n: int = 400) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
    """Two streams (templates <= 500 ms, D 300/200 ms), out of order, 5 % late events."""
    rng = np.random.default_rng(seed)
    a = random_templates(rng, 8, 6, 400, "A")
    b = random_templates(rng, 6, 8, 500, "B")
    streams = (StreamSpec(a, 300.0), StreamSpec(b, 200.0))
    events = synthetic_events(
        rng, n, (8, 6), mean_interarrival=20, max_delay=(300, 200), late_fraction=0.05
    )
    return streams, events


def in_process_pairs(
    streams: tuple[StreamSpec, StreamSpec], events: Events, d: float, delta: float
) -> np.ndarray:
    """The in-process PTJoin's pairs, sorted ``(n, 2)``."""
    matches, _ = replay(PTJoin(streams=streams, d=d, threshold=delta, mode="loose"), events)
    pairs = np.stack((matches.a_ids, matches.b_ids), axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def sorted_pairs(frame) -> np.ndarray:  # noqa: ANN001 (a pandas frame with a_id, b_id)
    """``(a_id, b_id)`` of a frame, sorted ``(n, 2)``."""
    pairs = frame[["a_id", "b_id"]].to_numpy(dtype=np.int64).reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def replay_files(records, folder: Path, batch_ms: float, extra: str = "") -> None:  # noqa: ANN001
    """Replay ``records`` (events or a record frame) into ``folder``, with an ``extra`` file
    (e.g. garbage lines) read first: modification times one second apart in name order, so a
    file source with one file per batch reads them in that order."""
    Replayer(records, folder, batch_ms=batch_ms).run()
    if extra:
        (folder / "batch-000000-extra.json").write_text(extra)
    for k, path in enumerate(sorted(folder.glob("*.json"))):
        os.utime(path, (1_700_000_000 + k, 1_700_000_000 + k))
