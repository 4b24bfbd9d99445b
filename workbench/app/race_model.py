"""The Timing joins tab's state and computation, no Panel: the simulated deployment's replay
(templates widened to intervals, :func:`~workbench.data.streams.interval_streams`) raced through
the five interval correlations and PTJoin's three modes
(:class:`~workbench.experiments.race.TimingRace`), advanced a tick at a time by the page's
periodic callback (:meth:`TimingRaceModel.step`) and steered while it runs.
"""

from __future__ import annotations

import pandas as pd
import param

from workbench.data.streams import ReplayedStreams, default_streams, interval_streams, window_range
from workbench.experiments.race import RACERS, TimingRace

__all__ = ["PERIOD_MS", "TimingRaceModel", "race_streams"]

PERIOD_MS = 400
"""Period of the race's periodic callback (the page's tick)."""
D_MAX_FACTOR = 2.0
"""The racers' envelope: d may be steered up to this multiple of its starting value."""
DELTA_MIN = 0.05
"""The racers' envelope: the lowest threshold delta may be steered to."""


def race_streams() -> ReplayedStreams:
    """The simulated deployment's replay with interval templates (one per process)."""
    return interval_streams(default_streams())


class TimingRaceModel(param.Parameterized):
    """The race's parameters (steerable while it runs), its progress and its measures."""

    d = param.Number(
        3000.0,
        bounds=(0.0, 6000.0),
        step=100.0,
        label="window d (ms)",
        doc="How far apart two events may have occurred and still join. Applies from the next "
        "event, to every algorithm.",
    )
    delta = param.Number(
        0.8,
        bounds=(DELTA_MIN, 0.99),
        step=0.01,
        label="confidence delta (ct)",
        doc="How sure a pair must be: P(|Xa - Xb| <= d) >= delta. Applies from the next event.",
    )
    max_pending = param.Integer(
        500,
        bounds=(1, 5000),
        label="lazy: max_pending",
        doc="Lazy and LazyWithLookup correlate their block when this many events wait.",
    )
    max_wait_s = param.Number(
        0.0,
        bounds=(0.0, 3600.0),
        step=10.0,
        label="lazy: max_wait (s, 0: off)",
        doc="...or when this much arrival time has passed since their last block (0: only "
        "max_pending triggers).",
    )
    speed = param.Number(
        2000.0,
        bounds=(10.0, 20_000.0),
        step=10.0,
        label="speed (x real time)",
        doc="Seconds of arrival time replayed per second; response times are at this speed.",
    )
    racers = param.ListSelector(
        default=list(RACERS), objects=list(RACERS), doc="The algorithms in the race."
    )
    running = param.Boolean(False, doc="Whether the race advances on each tick.")
    table = param.DataFrame(doc="One row per racer: the race's measures so far.")
    history = param.DataFrame(doc="The racers' results at each tick, by the replay's clock.")
    message = param.String("", doc="What the race did last, in a sentence.")

    def __init__(self, **params: object) -> None:
        streams = race_streams()
        d = window_range(streams.templates).default
        params.setdefault("d", d)
        super().__init__(**params)
        self.param.d.bounds = (0.0, D_MAX_FACTOR * self.d)
        self._streams = streams
        self._d_max = D_MAX_FACTOR * self.d
        self.race: TimingRace | None = None
        self.reset()

    def reset(self) -> None:
        """A new race at the current parameters, not yet started."""
        self.running = False
        self._new_race()

    def _new_race(self) -> None:
        self.race = TimingRace(
            self._streams.specs(),
            self._streams.events,
            self.d,
            self.delta,
            max_pending=self.max_pending,
            max_wait=self._max_wait_ms(),
            speed=self.speed,
            names=tuple(self.racers),
            d_max=self._d_max,
            threshold_min=DELTA_MIN,
        )
        self.history = pd.DataFrame({"clock_s": [0.0], **{n: [0] for n in self.racers}})
        self.table = self.race.table()
        self.message = (
            f"{len(self._streams.events):,} events of the simulated deployment, templates as "
            "intervals: press **Start**."
        )

    def _max_wait_ms(self) -> float | None:
        return 1000.0 * self.max_wait_s if self.max_wait_s > 0 else None

    def step(self) -> None:
        """One tick: the events of the next ``speed x`` :data:`PERIOD_MS` of arrival time
        through every racer; the measures and history updated; at the end, a flush."""
        race = self.race
        if race is None or not self.running:
            return
        race.advance(self.speed * PERIOD_MS)
        if race.done:
            race.finish()
            self.running = False
        start = float(race.events.arrival[0]) if len(race.events) else 0.0
        row = {"clock_s": (race.clock_ms - start) / 1000.0}
        row.update({n: lane.results for n, lane in race.lanes.items()})
        self.history = pd.concat([self.history, pd.DataFrame([row])], ignore_index=True)
        self.table = race.table()
        self.message = self._summary()

    def _summary(self) -> str:
        race, table = self.race, self.table
        assert race is not None
        agree = bool(table["same_pairs"].all())
        eager = table[table["waiting"] == 0]
        what = (
            "all algorithms found the same pairs"
            if agree
            else "the eager algorithms agree; the lazy ones hold pairs in their blocks"
            if bool(eager["same_pairs"].all())
            else "the algorithms DISAGREE"
        )
        state = "finished" if race.done else "running" if self.running else "paused"
        return f"{race.pushed:,} of {len(race.events):,} events ({state}): {what}."

    @param.depends("running", watch=True)
    def _say_state(self) -> None:
        """Say paused or running; a start after the end runs a new race."""
        if self.running and (self.race is None or self.race.done):
            self._new_race()
        elif self.race is not None and self.race.pushed:
            self.message = self._summary()

    @param.depends("d", "delta", "max_pending", "max_wait_s", watch=True)
    def _steer(self) -> None:
        """Apply the changed value to the running race (every racer that takes it)."""
        if self.race is None or self.race.done:
            return
        self.race.steer(
            d=self.d,
            threshold=self.delta,
            max_pending=self.max_pending,
            max_wait=self._max_wait_ms(),
        )
        self.table = self.race.table()
        self.message = self._summary()

    @param.depends("racers", "speed", watch=True)
    def _restart(self) -> None:
        """A new race for other racers or another speed (response times are at one speed)."""
        self.reset()
