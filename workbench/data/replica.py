"""A simulated replica of the Intel Berkeley lab deployment (the offline default data).

Built from the deployment's real geometry (``mote_locs.txt``) and link qualities
(``connectivity.txt``); everything else is a model, and every table it makes says so in
``table.attrs["source"]``:

- 54 motes at their real positions sample every 31 s (one epoch), each with a small clock
  offset.
- A reading reaches the base station along the most reliable multi-hop route of the
  connectivity graph, with up to ``retries`` link-level attempts per hop: the per-mote delivery
  probability follows from the real link qualities.  Lost readings leave epoch gaps; delivered
  ones arrive after a per-hop latency (``arrival`` column), so they reach the base station out
  of order across motes.
- Temperature follows a diurnal cycle (warmest mid-afternoon) with a position effect (motes
  nearer the lab's window side, larger x, warm more) and AR(1) noise; humidity moves against
  temperature; light follows office hours, darker at night and on weekends, brighter near the
  windows by day.
- Batteries decay; below 2.4 V a mote reports the real file's failure signature (temperature
  climbing towards 122 C, negative humidity) and below 2.3 V it falls silent.

Seeded and deterministic; columns match :func:`workbench.data.intel_lab.load_readings` plus
``arrival``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.data.intel_lab import (
    MEASURES,
    load_connectivity,
    load_mote_locations,
    quality_flags,
)

__all__ = [
    "EPOCH_SECONDS",
    "MIN_DELIVERY",
    "SOURCE_LABEL",
    "delivery_probabilities",
    "simulate_deployment",
]

EPOCH_SECONDS = 31.0
MIN_DELIVERY = 0.02
SOURCE_LABEL = "simulated replica of the Intel Berkeley lab deployment"


def delivery_probabilities(retries: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per mote (1-54): probability a reading reaches the base station, and its hop count.

    Each hop succeeds with ``1 - (1 - p)^retries`` for link quality p; the route maximises
    the product over hops (Floyd-Warshall on ``-log``).  A mote the connectivity snapshot
    cannot route at all still gets ``MIN_DELIVERY`` of its readings through (the real file
    has readings from every mote).
    """
    p = load_connectivity()
    hop = 1.0 - (1.0 - p) ** retries
    with np.errstate(divide="ignore"):
        cost = -np.log(hop)
    np.fill_diagonal(cost, 0.0)
    hops = np.where(np.isfinite(cost), 1, 0)
    np.fill_diagonal(hops, 0)
    n = cost.shape[0]
    for k in range(n):
        through = cost[:, k : k + 1] + cost[k : k + 1, :]
        better = through < cost
        cost = np.where(better, through, cost)
        hops = np.where(better, hops[:, k : k + 1] + hops[k : k + 1, :], hops)
    return np.maximum(np.exp(-cost[1:, 0]), MIN_DELIVERY), np.maximum(hops[1:, 0], 1)


def simulate_deployment(
    days: float = 3.0,
    seed: int = 0,
    start: str = "2004-02-28 00:00:00",
    retries: int = 1,
    failing_fraction: float = 0.1,
) -> pd.DataFrame:
    """Readings of the simulated deployment, sorted by time (see the module docstring).

    >>> table = simulate_deployment(days=0.05, seed=1)
    >>> table.attrs["source"], table["mote"].nunique(), bool(len(table) > 1000)
    ('simulated replica of the Intel Berkeley lab deployment', 54, True)
    """
    if not days > 0:
        raise ValueError(f"days = {days!r} must be positive")
    if not 0 <= failing_fraction <= 1:
        raise ValueError(f"failing_fraction = {failing_fraction!r} must lie in [0, 1]")
    rng = np.random.default_rng(seed)
    motes = load_mote_locations()
    x, y = motes["x"].to_numpy(), motes["y"].to_numpy()
    n_motes = len(motes)
    n_epochs = int(days * 86400 / EPOCH_SECONDS)
    deliver, hops = delivery_probabilities(retries)

    epoch = np.arange(n_epochs)
    offset = rng.uniform(0, EPOCH_SECONDS, n_motes)  # each mote's sampling phase
    seconds = (
        epoch[None, :] * EPOCH_SECONDS + offset[:, None] + rng.normal(0, 0.3, (n_motes, n_epochs))
    )
    start_ts = pd.Timestamp(start)
    hour = (start_ts.hour + start_ts.minute / 60 + seconds / 3600.0) % 24
    day_index = (start_ts.dayofweek + (start_ts.hour * 3600 + seconds) // 86400) % 7
    weekend = day_index >= 5

    diurnal = np.sin(2 * np.pi * (hour - 9.0) / 24.0)  # peaks at 15:00
    window_side = x / 40.0
    noise = np.empty((n_motes, n_epochs))
    noise[:, 0] = rng.normal(0, 0.3, n_motes)
    shocks = rng.normal(0, 0.08, (n_motes, n_epochs))
    for k in range(1, n_epochs):  # AR(1) sensor and air noise
        noise[:, k] = 0.98 * noise[:, k - 1] + shocks[:, k]
    temperature = (
        19.5
        + rng.normal(0, 0.7, n_motes)[:, None]
        + (2.5 + 2.0 * window_side[:, None]) * diurnal
        + 0.03 * (y[:, None] - 16)
        + noise
    )
    humidity = (
        38.0 - 1.6 * (temperature - 19.5) + rng.normal(0, 1.0, n_motes)[:, None] + 0.8 * noise
    )
    office = (hour >= 7.5) & (hour <= 19.5) & ~weekend
    daylight = np.clip(np.sin(np.pi * (hour - 6.5) / 12.0), 0, None)
    light = (
        np.where(office, 350.0 + 150.0 * rng.random((n_motes, 1)), 2.0)
        + 600.0 * window_side[:, None] ** 2 * daylight
        + rng.normal(0, 8.0, (n_motes, n_epochs))
    )
    light = np.clip(light, 0.0, None)

    v0 = rng.uniform(2.62, 2.78, n_motes)
    per_day = rng.uniform(0.002, 0.012, n_motes)
    failing = rng.random(n_motes) < failing_fraction
    per_day[failing] = (v0[failing] - 2.33) / rng.uniform(0.4, 1.0, int(failing.sum())) / days
    voltage = (
        v0[:, None]
        - per_day[:, None] * seconds / 86400.0
        + rng.normal(0, 0.004, (n_motes, n_epochs))
    )
    dying = voltage < 2.4
    depth = np.clip((2.4 - voltage) / 0.1, 0, 1)  # 0 at 2.4 V, 1 at 2.3 V
    temperature = np.where(dying, temperature + depth * (122.15 - temperature), temperature)
    humidity = np.where(dying, humidity - depth * (humidity + 4.0), humidity)
    alive = voltage >= 2.3

    delivered = alive & (rng.random((n_motes, n_epochs)) < deliver[:, None])
    latency = hops[:, None] * rng.uniform(0.05, 0.6, (n_motes, n_epochs))
    m_idx, e_idx = np.nonzero(delivered)
    times = start_ts + pd.to_timedelta(seconds[m_idx, e_idx], unit="s")
    table = pd.DataFrame(
        {
            "time": times,
            "epoch": e_idx.astype(np.int64) + 1,
            "mote": motes["mote"].to_numpy()[m_idx],
            "temperature": np.round(temperature[m_idx, e_idx], 4),
            "humidity": np.round(humidity[m_idx, e_idx], 4),
            "light": np.round(light[m_idx, e_idx], 2),
            "voltage": np.round(voltage[m_idx, e_idx], 5),
            "arrival": times + pd.to_timedelta(latency[m_idx, e_idx], unit="s"),
        }
    )
    table = table.sort_values(["time", "mote"], kind="stable").reset_index(drop=True)
    table["qc"] = quality_flags(table)
    table = table[["time", "epoch", "mote", *MEASURES, "qc", "arrival"]]
    table.attrs["source"] = SOURCE_LABEL
    return table
