"""Replay scenarios shared by the Spark tests (the in-process oracle they must equal is
:func:`harness.live_cases.in_process_pairs`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from workbench.data.replay import Replayer
from workbench.data.synthetic import synthetic_events
from workbench.events import Events, sort_pairs
from workbench.operators import StreamSpec, on_time
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp


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


def sorted_pairs(frame) -> np.ndarray:  # noqa: ANN001 (a pandas frame with a_id, b_id)
    """``(a_id, b_id)`` of a frame, sorted ``(n, 2)``."""
    return sort_pairs(frame[["a_id", "b_id"]].to_numpy(dtype=np.int64).reshape(-1, 2))


def replay_files(records, folder: Path, batch_ms: float, extra: str = "") -> None:  # noqa: ANN001
    """Replay ``records`` (events or a record frame) into ``folder``, with an ``extra`` file
    (e.g. garbage lines) read first: modification times one second apart in name order, so a
    file source with one file per batch reads them in that order."""
    Replayer(records, folder, batch_ms=batch_ms).run()
    if extra:
        (folder / "batch-000000-extra.json").write_text(extra)
    for k, path in enumerate(sorted(folder.glob("*.json"))):
        os.utime(path, (1_700_000_000 + k, 1_700_000_000 + k))


def adversarial_scenario(
    seed: int, n: int = 60, offset: float = 1e9, uniform: bool = False
) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
    """Templates whose bucket widths differ by up to 1e6 (zero-probability buckets too), at
    times near ``offset``, with pairs placed so that many land close to the join's boundary."""
    from workbench.templates import TemplateSet
    from workbench.timestamps import HistogramTimestamp

    rng = np.random.default_rng(seed)

    def template() -> HistogramTimestamp:
        k = 1 if uniform else int(rng.integers(1, 5))
        widths = 10.0 ** rng.uniform(-3, 3, k)
        probs = rng.choice([0.0, 0.2, 0.5, 1.0], k)
        if probs.sum() == 0:
            probs[0] = 1.0
        return HistogramTimestamp(np.concatenate(([0.0], np.cumsum(widths))), probs / probs.sum())

    a = TemplateSet("A", tuple(template() for _ in range(3)))
    b = TemplateSet("B", tuple(template() for _ in range(3)))
    pi = max(a.pi, b.pi)
    t_a = offset + np.sort(rng.uniform(0, 40 * pi, n))
    # each B event sits near an A event, at a distance around d = pi: the band's edge
    t_b = rng.choice(t_a, n) + rng.choice([-1, 1], n) * pi * rng.uniform(0.5, 1.5, n)
    stream = np.repeat([0, 1], n)
    t_det = np.concatenate((t_a, t_b))
    arrival = t_det + rng.uniform(0, 50, 2 * n)
    order = np.argsort(arrival, kind="stable")
    events = Events(
        stream[order],
        np.arange(2 * n)[order],
        rng.integers(0, 3, 2 * n)[order],
        t_det[order],
        arrival[order],
    )
    return (StreamSpec(a, 60.0), StreamSpec(b, 60.0)), events


def accepted(events: Events, streams: tuple[StreamSpec, StreamSpec]) -> np.ndarray:
    """Which events a join accepts: on time and representable (the rational oracle's input)."""
    ok = on_time(events, [s.max_delay for s in streams])
    for k in range(len(events)):
        ts = streams[int(events.stream[k])].templates
        ok[k] &= ts.faithful_error(int(events.template[k]), float(events.t_det[k])) is None
    return ok


def tie_scenario(length: float) -> tuple[tuple[StreamSpec, StreamSpec], Events]:
    """One uniform template of ``length`` ms; at offsets 0, 1e9 and 1e12 an A event, a B event
    4 ms later (P(|Xa - Xb| <= 4) = 1/2 exactly when ``length`` is 4 or 8) and one 2**-10 ms
    later still (just under 1/2)."""
    spec = StreamSpec(TemplateSet("S", (HistogramTimestamp.uniform(0, length),)), 10.0)
    t0 = np.array([0.0, 1e9, 1e12])
    rows = [(0, k, 0, t, t) for k, t in enumerate(t0)]
    rows += [(1, 10 + k, 0, t + 4, t + 4) for k, t in enumerate(t0)]
    rows += [(1, 20 + k, 0, t + 4 + 2**-10, t + 5) for k, t in enumerate(t0)]
    rows.sort(key=lambda r: r[4])
    return (spec, spec), Events(*(np.array(c) for c in zip(*rows, strict=True)))
