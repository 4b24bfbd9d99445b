"""The dashboard's default data: the simulated Intel Lab deployment, made once per process.

Every tab reads these tables and never mutates them, so one copy serves every session.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pandas as pd

from workbench.data.intel_lab import clean
from workbench.data.replay import learn_templates, readings_to_events
from workbench.data.replica import simulate_deployment
from workbench.events import Events
from workbench.timestamps import TemplateSet

__all__ = ["ReplayedStreams", "default_readings", "default_streams"]

DEFAULT_DAYS = 1.0
"""Days of simulated readings behind the dashboard."""
REPLAY_DAYS = 0.25
"""Days of readings replayed as two event streams (the first hours of the day)."""
MAX_DELAY_MS = 2000.0
"""Network delay bound D of both replayed streams (ms)."""


@cache
def default_readings() -> pd.DataFrame:
    """One simulated day of the Intel Lab deployment (labelled simulated in ``attrs``)."""
    return clean(simulate_deployment(days=DEFAULT_DAYS, seed=0))


@dataclass(frozen=True)
class ReplayedStreams:
    """The readings replayed as two event streams (alternate motes), with learned templates."""

    events: Events
    templates: tuple[TemplateSet, TemplateSet]
    motes: tuple[tuple[int, ...], tuple[int, ...]]
    max_delay_ms: float
    source: str


@cache
def default_streams() -> ReplayedStreams:
    """Per-mote templates learned from the replica, and its first hours as two streams."""
    readings = default_readings()
    head = readings[readings["time"] < readings["time"].min() + pd.Timedelta(days=REPLAY_DAYS)]
    templates = learn_templates(head)
    motes = sorted(templates)
    split = (tuple(motes[0::2]), tuple(motes[1::2]))
    events, sets, _ = readings_to_events(head, split, templates, [MAX_DELAY_MS] * 2, seed=0)
    named = tuple(
        TemplateSet(f"{name} (motes {m[0]}, {m[1]}, ...)", s.templates)
        for name, m, s in zip("AB", split, sets, strict=True)
    )
    source = str(readings.attrs.get("source", "readings"))
    return ReplayedStreams(events, named, split, MAX_DELAY_MS, source)
