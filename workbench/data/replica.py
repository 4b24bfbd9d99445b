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

SOURCE_LABEL = "simulated replica of the Intel Berkeley lab deployment"

# The constants below are the model's.  Those marked SOURCE.md come from the deployment's known
# facts (/work/shared/data/intel-lab/SOURCE.md and the files beside it: the sampling period,
# the lab's extent in mote_locs.txt, the quoted readings and the documented failure signature);
# the others are modelling choices that give plausible office-lab values.

# -- the motes' schedules and clocks --
EPOCH_SECONDS = 31.0
"""Sampling period of every mote, s (SOURCE.md: "sampled about every 31 seconds")."""
CLOCK_JITTER_S = 0.3
"""Standard deviation of a reading's timestamp around its mote's schedule, s (model)."""

# -- links --
MIN_DELIVERY = 0.02
"""Delivery probability of a mote the connectivity snapshot cannot route (SOURCE.md: the real
file has readings from every mote, so none may be silent)."""
HOP_LATENCY_S = (0.05, 0.6)
"""Uniform range of one hop's latency to the base station, s (model)."""

# -- the daily temperature cycle --
LAB_WIDTH_M = 40.0
"""Extent of the lab along x, m (mote_locs.txt: x 0.5-40.5); x / width is the window side."""
LAB_MID_Y_M = 16.0
"""Middle of the lab along y, m (mote_locs.txt: y 1-31)."""
BASE_TEMPERATURE_C = 19.5
"""Lab's mean temperature, C (SOURCE.md's quoted night reading: 19.9884 C at 00:59)."""
MOTE_TEMPERATURE_SPREAD_C = 0.7
"""Standard deviation of a mote's own temperature offset, C (model)."""
WARMEST_HOUR = 15.0
"""Hour of day the diurnal sine peaks: mid-afternoon (model)."""
DIURNAL_AMPLITUDE_C = 2.5
"""Amplitude of the daily cycle away from the windows, C (model)."""
WINDOW_AMPLITUDE_C = 2.0
"""Extra amplitude at the window side (x = LAB_WIDTH_M), C (model)."""
Y_GRADIENT_C_PER_M = 0.03
"""Temperature gradient along y, C per m (model)."""

# -- sensor and air noise, AR(1) --
NOISE_START_SD_C = 0.3
"""Standard deviation of each mote's noise at the first epoch, C (model)."""
NOISE_SHOCK_SD_C = 0.08
"""Standard deviation of the noise's innovation per epoch, C (model)."""
NOISE_PERSISTENCE = 0.98
"""AR(1) coefficient of the noise from one epoch to the next (model)."""

# -- humidity --
BASE_HUMIDITY_PCT = 38.0
"""Relative humidity at BASE_TEMPERATURE_C, % (SOURCE.md's quoted reading: 37.0933 %)."""
HUMIDITY_PER_DEGREE_PCT = 1.6
"""Humidity drop per degree above BASE_TEMPERATURE_C, % per C (model)."""
MOTE_HUMIDITY_SPREAD_PCT = 1.0
"""Standard deviation of a mote's own humidity offset, % (model)."""
HUMIDITY_NOISE_GAIN = 0.8
"""Share of the temperature noise humidity follows, % per C (model)."""

# -- light --
OFFICE_HOURS = (7.5, 19.5)
"""Hours of day the lab's lights are on, on weekdays (model)."""
WEEKEND_FROM_DAY = 5
"""First weekend day of week, Monday = 0 (Saturday)."""
OFFICE_LIGHT_LUX = (350.0, 150.0)
"""A mote's lit-office light: base plus up to this much more, lux (model)."""
NIGHT_LIGHT_LUX = 2.0
"""Light with the lights off, lux (model)."""
DAYLIGHT_HOURS = (6.5, 18.5)
"""Sunrise and sunset for the daylight sine, hours (model: late February in Berkeley)."""
WINDOW_LIGHT_LUX = 600.0
"""Noon daylight at the window side, lux; falls with the square of the distance (model)."""
LIGHT_NOISE_SD_LUX = 8.0
"""Standard deviation of a light reading's noise, lux (model)."""

# -- batteries and their failure --
START_VOLTAGE_V = (2.62, 2.78)
"""Uniform range of a fresh battery's voltage, V (SOURCE.md's quoted reading: 2.69964 V)."""
DECAY_V_PER_DAY = (0.002, 0.012)
"""Uniform range of a healthy battery's decay, V per day (model)."""
FAILING_LIFETIME = (0.4, 1.0)
"""A failing battery reaches FAILING_END_VOLTAGE_V after this share of the run, uniform (model)."""
FAILING_END_VOLTAGE_V = 2.33
"""Voltage a failing battery reaches at the end of its lifetime, deep in the signature (model)."""
VOLTAGE_NOISE_SD_V = 0.004
"""Standard deviation of a voltage reading's noise, V (model)."""
DYING_VOLTAGE_V = 2.4
"""Below it a mote reports the failure signature (SOURCE.md: "voltage below about 2.4 V")."""
SILENT_VOLTAGE_V = 2.3
"""Below it a mote falls silent (model; the signature ramps up between the two)."""
FAILURE_TEMPERATURE_C = 122.15
"""Temperature a dying mote climbs towards, C (SOURCE.md: the file's first line, 122.153)."""
FAILURE_HUMIDITY_PCT = -4.0
"""Humidity a dying mote falls towards, % (SOURCE.md: the file's first line, -3.91901)."""


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

    One function per physical piece, drawing from one generator in a fixed order (so a seed
    always gives the same table): the motes' schedules, the calendar, the air noise,
    temperature, humidity, light, the batteries, their failure and the links.

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
    n_epochs = int(days * 86400 / EPOCH_SECONDS)
    deliver, hops = delivery_probabilities(retries)
    start_ts = pd.Timestamp(start)

    seconds = _sample_seconds(rng, len(motes), n_epochs)
    hour, weekend = _calendar(start_ts, seconds)
    noise = _air_noise(rng, seconds.shape)
    temperature = _temperature(rng, x, y, hour, noise)
    humidity = _humidity(rng, temperature, noise)
    light = _light(rng, x, hour, weekend)
    voltage = _voltage(rng, seconds, days, failing_fraction)
    temperature, humidity = _failure_signature(voltage, temperature, humidity)
    delivered, latency = _links(rng, voltage >= SILENT_VOLTAGE_V, deliver, hops)

    measures = {
        "temperature": temperature,
        "humidity": humidity,
        "light": light,
        "voltage": voltage,
    }
    table = _delivered_table(
        start_ts, motes["mote"].to_numpy(), seconds, delivered, latency, measures
    )
    table["qc"] = quality_flags(table)
    table = table[["time", "epoch", "mote", *MEASURES, "qc", "arrival"]]
    table.attrs["source"] = SOURCE_LABEL
    return table


def _delivered_table(
    start_ts: pd.Timestamp,
    mote_ids: np.ndarray,
    seconds: np.ndarray,
    delivered: np.ndarray,
    latency: np.ndarray,
    measures: dict[str, np.ndarray],
) -> pd.DataFrame:
    """The delivered readings, one row each, sorted by time then mote, rounded as the real file
    prints them."""
    m_idx, e_idx = np.nonzero(delivered)
    times = start_ts + pd.to_timedelta(seconds[m_idx, e_idx], unit="s")
    digits = {"temperature": 4, "humidity": 4, "light": 2, "voltage": 5}
    table = pd.DataFrame(
        {
            "time": times,
            "epoch": e_idx.astype(np.int64) + 1,
            "mote": mote_ids[m_idx],
            **{name: np.round(measures[name][m_idx, e_idx], n) for name, n in digits.items()},
            "arrival": times + pd.to_timedelta(latency[m_idx, e_idx], unit="s"),
        }
    )
    return table.sort_values(["time", "mote"], kind="stable").reset_index(drop=True)


def _sample_seconds(rng: np.random.Generator, n_motes: int, n_epochs: int) -> np.ndarray:
    """Seconds since the start of each (mote, epoch) reading: a phase per mote plus jitter."""
    epoch = np.arange(n_epochs)
    phase = rng.uniform(0, EPOCH_SECONDS, n_motes)
    jitter = rng.normal(0, CLOCK_JITTER_S, (n_motes, n_epochs))
    return epoch[None, :] * EPOCH_SECONDS + phase[:, None] + jitter


def _calendar(start_ts: pd.Timestamp, seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hour of day (float) and whether it is a weekend, per reading."""
    hour = (start_ts.hour + start_ts.minute / 60 + seconds / 3600.0) % 24
    day_index = (start_ts.dayofweek + (start_ts.hour * 3600 + seconds) // 86400) % 7
    return hour, day_index >= WEEKEND_FROM_DAY


def _air_noise(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """AR(1) sensor and air noise per (mote, epoch), C."""
    n_motes, n_epochs = shape
    noise = np.empty(shape)
    noise[:, 0] = rng.normal(0, NOISE_START_SD_C, n_motes)
    shocks = rng.normal(0, NOISE_SHOCK_SD_C, shape)
    for k in range(1, n_epochs):
        noise[:, k] = NOISE_PERSISTENCE * noise[:, k - 1] + shocks[:, k]
    return noise


def _temperature(
    rng: np.random.Generator, x: np.ndarray, y: np.ndarray, hour: np.ndarray, noise: np.ndarray
) -> np.ndarray:
    """Diurnal cycle peaking at WARMEST_HOUR, stronger at the window side, plus noise, C."""
    diurnal = np.sin(2 * np.pi * (hour - (WARMEST_HOUR - 6.0)) / 24.0)  # sine peaks 6 h in
    window_side = x / LAB_WIDTH_M
    return (
        BASE_TEMPERATURE_C
        + rng.normal(0, MOTE_TEMPERATURE_SPREAD_C, len(x))[:, None]
        + (DIURNAL_AMPLITUDE_C + WINDOW_AMPLITUDE_C * window_side[:, None]) * diurnal
        + Y_GRADIENT_C_PER_M * (y[:, None] - LAB_MID_Y_M)
        + noise
    )


def _humidity(rng: np.random.Generator, temperature: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Relative humidity moving against temperature, %."""
    return (
        BASE_HUMIDITY_PCT
        - HUMIDITY_PER_DEGREE_PCT * (temperature - BASE_TEMPERATURE_C)
        + rng.normal(0, MOTE_HUMIDITY_SPREAD_PCT, len(temperature))[:, None]
        + HUMIDITY_NOISE_GAIN * noise
    )


def _light(
    rng: np.random.Generator, x: np.ndarray, hour: np.ndarray, weekend: np.ndarray
) -> np.ndarray:
    """Office lights on weekdays plus daylight near the windows, lux (never negative)."""
    opens, closes = OFFICE_HOURS
    office = (hour >= opens) & (hour <= closes) & ~weekend
    sunrise, sunset = DAYLIGHT_HOURS
    daylight = np.clip(np.sin(np.pi * (hour - sunrise) / (sunset - sunrise)), 0, None)
    base, spread = OFFICE_LIGHT_LUX
    window_side = x / LAB_WIDTH_M
    light = (
        np.where(office, base + spread * rng.random((len(x), 1)), NIGHT_LIGHT_LUX)
        + WINDOW_LIGHT_LUX * window_side[:, None] ** 2 * daylight
        + rng.normal(0, LIGHT_NOISE_SD_LUX, hour.shape)
    )
    return np.clip(light, 0.0, None)


def _voltage(
    rng: np.random.Generator, seconds: np.ndarray, days: float, failing_fraction: float
) -> np.ndarray:
    """Battery voltage per reading: linear decay; a failing mote reaches SILENT_VOLTAGE_V early."""
    n_motes = len(seconds)
    v0 = rng.uniform(*START_VOLTAGE_V, n_motes)
    per_day = rng.uniform(*DECAY_V_PER_DAY, n_motes)
    failing = rng.random(n_motes) < failing_fraction
    lifetime = rng.uniform(*FAILING_LIFETIME, int(failing.sum()))
    per_day[failing] = (v0[failing] - FAILING_END_VOLTAGE_V) / lifetime / days
    return (
        v0[:, None]
        - per_day[:, None] * seconds / 86400.0
        + rng.normal(0, VOLTAGE_NOISE_SD_V, seconds.shape)
    )


def _failure_signature(
    voltage: np.ndarray, temperature: np.ndarray, humidity: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Below DYING_VOLTAGE_V, temperature and humidity ramp towards the real failure values."""
    dying = voltage < DYING_VOLTAGE_V
    depth = np.clip((DYING_VOLTAGE_V - voltage) / (DYING_VOLTAGE_V - SILENT_VOLTAGE_V), 0, 1)
    temperature = np.where(
        dying, temperature + depth * (FAILURE_TEMPERATURE_C - temperature), temperature
    )
    humidity = np.where(dying, humidity - depth * (humidity - FAILURE_HUMIDITY_PCT), humidity)
    return temperature, humidity


def _links(
    rng: np.random.Generator, alive: np.ndarray, deliver: np.ndarray, hops: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which readings of live motes reach the base station, and their latency, s."""
    delivered = alive & (rng.random(alive.shape) < deliver[:, None])
    latency = hops[:, None] * rng.uniform(*HOP_LATENCY_S, alive.shape)
    return delivered, latency
