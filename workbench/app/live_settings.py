"""The live join tab's choices: the data to replay (a CSV is read when chosen, and reported on),
the join's window d, threshold delta, max delays, watermark and trigger, the replay's pace.
d's default and range follow the data's timing templates: PTJoin Theorem 2's fast path needs
d >= max(pi).  :class:`~workbench.app.live_run.LiveRun` runs them on Spark.

What the page accepts is checked here: an uploaded CSV above the upload limit, empty, binary
or unreadable gets a message saying why (nothing raised); the readings file's path must lie
inside the data folder (:func:`workbench.config.page_path`), or nothing is opened.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import panel as pn
import param

from workbench.app.panes import plain_help
from workbench.config import ENV, page_path
from workbench.config import settings as configured
from workbench.data.streams import (
    MAX_DELAY_MS,
    SOURCES,
    WINDOW_MAX_MS,
    WINDOW_MS,
    ReplayedStreams,
    WindowRange,
    csv_streams,
    window_range,
)

if TYPE_CHECKING:
    from workbench.app.runs.live import RunSettings

__all__ = ["LiveJoinSettings"]

D_MAX_FACTOR = 2.0
"""The join state covers windows up to this multiple of the starting d (changes within: live)."""
DELAY_BOUNDS_MS = (0.0, 600_000.0)
"""The range of the delays a user can give: each stream's max delay D, the extra watermark."""
CSV_UNIT_LABEL = "CSV time unit"
READINGS_SOURCE = "Intel Lab readings file"
log = logging.getLogger(__name__)


def _read_csv(data: bytes, time: str, sensor: str, unit: str) -> ReplayedStreams | str:
    """An uploaded CSV's streams, or the message saying why it cannot be used."""
    try:
        return csv_streams(data, time, sensor, unit)
    except ValueError as exc:  # what the CSV is, and why it cannot be used
        return _sentence(str(exc))
    except Exception as exc:  # anything unforeseen: said, and the page goes on
        log.exception("reading an uploaded CSV failed")
        return f"The CSV cannot be read ({type(exc).__name__}: {str(exc)[:300]})."


class LiveJoinSettings(param.Parameterized):
    """What the live join runs with (:meth:`settings`), what the chosen data says about d, and
    the widgets to choose it."""

    source = param.Selector(
        objects=list(SOURCES),
        default=SOURCES[0],
        label="data",
        doc="What is replayed: the simulated deployment, the real readings file, a CSV of "
        "your own readings, or synthetic events. Changing it while running restarts.",
    )
    readings_path = param.String(
        "",
        label="readings file",
        doc="The Intel Lab data.txt(.gz); by default the download's place in the data folder "
        "(WORKBENCH_DATA_DIR). It must lie inside that folder; a relative path is taken from it.",
    )
    readings_report = param.String(
        "", doc="Why the readings file's path is refused (empty: it is inside the data folder)."
    )
    csv_file = param.Bytes(
        default=None,
        allow_None=True,
        label="CSV file",
        doc="Your readings: one row per reading, with a time column and a sensor column.",
    )
    csv_time = param.String("time", label="CSV time column", doc="The CSV's timestamp column.")
    csv_sensor = param.String("sensor", label="CSV sensor column", doc="The CSV's sensor id.")
    csv_time_unit = param.Selector(
        objects={
            "none: dates": "",
            "s since 1970": "s",
            "ms since 1970": "ms",
            "us since 1970": "us",
            "ns since 1970": "ns",
        },
        default="",
        label=CSV_UNIT_LABEL,
        doc="none when the time column holds dates (2024-03-01 08:00:30); for numbers "
        "counted from 1970-01-01 (Unix time), their unit: s, ms, us or ns.",
    )
    speed = param.Number(
        300.0,
        bounds=(1.0, 20_000.0),
        step=10.0,
        label="speed (x real time)",
        doc="Seconds of arrival time replayed per second; applies at once.",
    )
    delta = param.Number(
        0.8,
        bounds=(0.01, 0.99),
        step=0.01,
        label="confidence delta",
        doc="How sure the join must be: a pair joins when the probability that its two events "
        "occurred at most d apart is at least delta. Applies from the next micro-batch, no "
        "restart.",
    )
    d = param.Number(
        WINDOW_MS,
        bounds=(0.0, WINDOW_MAX_MS),
        step=100.0,
        label="window d (ms)",
        doc="How far apart (ms) two events may have occurred and still join. Its default and "
        "range follow the data's timing templates (see the note below). Changes up to "
        f"{D_MAX_FACTOR:g}x the starting d apply live; beyond, the query restarts on a new "
        "checkpoint.",
    )
    max_delay_a = param.Number(
        MAX_DELAY_MS,
        bounds=DELAY_BOUNDS_MS,
        step=100.0,
        label="D_A (ms): max delay",
        doc="Stream A's longest network delay: an event arriving more than D after its "
        "detection is late, counted and not joined. Restarts the query on a new checkpoint.",
    )
    max_delay_b = param.Number(
        MAX_DELAY_MS,
        bounds=DELAY_BOUNDS_MS,
        step=100.0,
        label="D_B (ms): max delay",
        doc="Stream B's longest network delay (as D_A).",
    )
    watermark = param.Number(
        0.0,
        bounds=DELAY_BOUNDS_MS,
        step=500.0,
        label="watermark: extra delay (ms)",
        doc="The watermark is the join's clock for forgetting: events older than it can find no "
        "more partners and leave the join state. It trails the newest event by max(D_A, D_B) "
        "plus the window, so no on-time event is dropped; this delays it further (keeps state "
        "longer). Restarts the query on a new checkpoint.",
    )
    trigger_seconds = param.Number(
        0.2,
        bounds=(0.1, 60.0),
        step=0.1,
        label="trigger (s)",
        doc="How often Spark runs a micro-batch; restarts the query from its checkpoint "
        "(nothing lost).",
    )
    paused = param.Boolean(False, label="Pause", doc="Hold the replay; the query keeps running.")
    fast_from = param.Number(
        None,
        allow_None=True,
        doc="max(pi_A, pi_B), the widest timing template of the data (ms): the fast path needs "
        "d >= it. None until the data is read (a CSV: when chosen; else at Start).",
    )
    csv_report = param.String("", doc="What the chosen CSV gave, or why it cannot be used.")
    csv_alert = param.Selector(
        objects=["success", "warning", "danger"], default="success", doc="How csv_report reads."
    )
    live_factory = param.Callable(
        None,
        allow_None=True,
        doc="Makes the LiveJoin (keywords: source_dir, streams, d, delta, work_dir, d_max, "
        "trigger_seconds, name, extra_watermark_ms); None: on this process's local Spark "
        "session (workbench.app.runs.live.spark_live_join); tests inject a fake.",
    )
    work_root = param.String(
        None, allow_None=True, doc="Where each run's temporary folder goes (system default)."
    )

    def __init__(self, **params: object) -> None:
        params.setdefault("readings_path", str(configured().readings_file))
        super().__init__(**params)
        self._auto_d = WINDOW_MS  # d's derived default: d follows the data while it is this
        self.run_d = self.d
        """The window the run has, or will have once queued work ran: a change of d away from
        it is the user's and steers the run."""
        self.check_csv()
        self.check_readings_path()

    def page_readings_path(self) -> Path:
        """The readings file the page names, resolved inside the data folder (a relative path
        from it); ValueError (the page's message) when it lies outside."""
        return page_path(
            self.readings_path, configured().cache_dir, "readings file", ENV["data_dir"]
        )

    @param.depends("readings_path", watch=True)
    def check_readings_path(self) -> None:
        """Say under the readings file's box whether its path is refused (nothing is opened:
        the path is only resolved)."""
        try:
            self.page_readings_path()
        except ValueError as exc:
            self.readings_report = str(exc)
        else:
            self.readings_report = ""

    def settings(self) -> RunSettings:
        """The page's current choices (imports the session's module: pyspark)."""
        from workbench.app.runs.live import RunSettings

        try:
            readings_path, refusal = str(self.page_readings_path()), ""
        except ValueError as exc:  # outside the data folder: never handed to a loader
            readings_path, refusal = str(configured().readings_file), str(exc)
        return RunSettings(
            source=self.source,
            readings_path=readings_path,
            csv_file=self.csv_file,
            csv_time=self.csv_time,
            csv_sensor=self.csv_sensor,
            csv_time_unit=self.csv_time_unit,
            d=self.d,
            delta=self.delta,
            max_delay=(self.max_delay_a, self.max_delay_b),
            trigger_seconds=self.trigger_seconds,
            extra_watermark_ms=self.watermark,
            speed=self.speed,
            paused=self.paused,
            d_max_factor=D_MAX_FACTOR,
            auto_d=self.d == self._auto_d,
            work_root=self.work_root,
            live_factory=self.live_factory,
            refusal=refusal if self.source == READINGS_SOURCE else "",
        )

    # -- the data and its window (server thread) -------------------------------------------

    def check_csv(self) -> None:
        """Read the chosen CSV now: what it gave goes under the CSV inputs, and d's default and
        range follow its templates (:meth:`csv_read`, then :meth:`show_csv`)."""
        read = self.csv_read()
        self.show_csv(read() if read is not None else None)

    def csv_read(self) -> Callable[[], ReplayedStreams | str] | None:
        """The read of the chosen CSV, bound to the page's current choices (None: no CSV is
        chosen): safe to run on any thread (a large upload is parsed off the server's event
        loop).  It gives the streams, or the message saying why the CSV cannot be used."""
        if self.source != "CSV file" or self.csv_file is None:
            return None
        return partial(_read_csv, self.csv_file, self.csv_time, self.csv_sensor, self.csv_time_unit)

    def show_csv(self, read: ReplayedStreams | str | None) -> None:
        """What a :meth:`csv_read` gave, into the page (server thread)."""
        if read is None:
            self.csv_report = ""
            self._forget_window()
            return
        if isinstance(read, str):
            self.param.update(csv_report=read, csv_alert="danger")
            return
        window = window_range(read.templates)
        self.use_window(window, self.d, window.default if self.d == self._auto_d else self.d)
        report, paragraph = read.report, "\n\n"
        self.param.update(
            csv_report=paragraph.join(
                [f"**{read.source}**", report.describe(CSV_UNIT_LABEL, paragraph)]
            ),
            csv_alert="warning"
            if report["bad_time_or_sensor"] or report.hint() or report.notes
            else "success",
        )

    def _forget_window(self) -> None:
        """Data whose templates are not read yet (they are at Start): d's range and default
        as before any data."""
        self.param.d.bounds = (0.0, WINDOW_MAX_MS)
        self.fast_from = None
        if self.d == self._auto_d != WINDOW_MS:
            self._follow(WINDOW_MS)
        self._auto_d = WINDOW_MS

    def _follow(self, d: float) -> None:
        """Set d for new data without steering the run: a run already uses it, or a queued
        start or restart reads it."""
        self.run_d = d
        self.d = d

    def use_window(self, window: WindowRange, requested: float, d: float) -> None:
        """d's range from the data's templates, and ``d`` for it unless the user changed d
        since ``requested`` was read; d follows the data while it is the derived default."""
        self.param.d.bounds = (0.0, window.upper)
        self.param.d.step = window.step
        self.fast_from = window.fast_from
        if requested == self._auto_d:
            self._auto_d = window.default
        if self.d == requested and d != requested:
            self._follow(d)

    @param.depends("d", "fast_from")
    def window_note(self) -> str:
        """Whether d allows the fast path (PTJoin Theorem 2), in plain words (Markdown)."""
        if self.fast_from is None:
            text = (
                "The fast path (PTJoin Theorem 2) needs d >= max(pi), the widest *timing "
                "template* of the data (how uncertain one event's time is). The templates are "
                "learned from the data when it is read (a CSV: when chosen, else at Start); "
                "d's default follows them."
            )
        elif self.d >= self.fast_from:
            text = (
                f"d >= max(pi) = {math.ceil(self.fast_from):,} ms, the widest timing template "
                "of this data: the fast path applies (each pair is compared with precomputed "
                "bounds; a pair too close to call is *pending* and gets the exact check)."
            )
        else:
            text = (
                f"d < max(pi) = {math.ceil(self.fast_from):,} ms, the widest timing template "
                "of this data: each pair gets the exact probability, slower than the fast "
                f"path (d >= {math.ceil(self.fast_from):,} ms)."
            )
        return text

    def csv_view(self) -> pn.pane.Alert:
        """What the chosen CSV gave: accepted and rejected rows, or why it cannot be used
        (hidden before a CSV is chosen)."""
        return pn.pane.Alert(
            self.param.csv_report,
            alert_type=self.param.csv_alert,
            visible=self.param.csv_report.rx.bool(),
            css_classes=["live-csv-report"],
        )

    def readings_view(self) -> pn.pane.Alert:
        """Why the readings file's path is refused (hidden when it is inside the data folder)."""
        return pn.pane.Alert(
            self.param.readings_report,
            alert_type="danger",
            visible=self.param.readings_report.rx.bool(),
            css_classes=["live-readings-report"],
        )

    def shown_for(self, source: str, build: Callable[[], list[pn.viewable.Viewable]]) -> pn.Column:
        """A column shown while the data is ``source``, its content ``build()`` made when it
        is first shown: inputs for data a user may never choose cost every opening of the tab
        their Bokeh models (built, walked, sent by the server, laid out by the browser)."""
        column = pn.Column(visible=False, sizing_mode="stretch_width")

        def show(*_: object) -> None:
            shown = self.source == source
            if shown and not column.objects:
                column.objects = list(build())
            column.visible = shown

        self.param.watch(show, "source")
        show()
        return column

    def widgets(self) -> list[pn.viewable.Viewable]:
        """The choices' widgets, the CSV inputs and the data's report where they apply (made
        when that data is first chosen), and the note on d (for a 300 px column)."""
        w = pn.widgets
        text, choice, number = (plain_help(c) for c in (w.TextInput, w.Select, w.FloatInput))
        wide = {"sizing_mode": "stretch_width"}
        csv = [
            plain_help(w.FileInput).from_param(self.param.csv_file, accept=".csv", **wide),
            text.from_param(self.param.csv_time, **wide),
            text.from_param(self.param.csv_sensor, **wide),
            choice.from_param(self.param.csv_time_unit, **wide),
            self.csv_view(),
        ]
        readings = [text.from_param(self.param.readings_path, **wide), self.readings_view()]
        return [
            choice.from_param(self.param.source, **wide),
            self.shown_for(READINGS_SOURCE, lambda: readings),
            self.shown_for("CSV file", lambda: csv),
            number.from_param(self.param.speed, **wide),
            w.FloatSlider.from_param(self.param.delta, **wide),
            number.from_param(self.param.d, **wide),
            pn.pane.Markdown(self.window_note, css_classes=["live-window-note"], margin=(0, 10)),
            number.from_param(self.param.max_delay_a, **wide),
            number.from_param(self.param.max_delay_b, **wide),
            number.from_param(self.param.watermark, **wide),
            number.from_param(self.param.trigger_seconds, **wide),
        ]


def _sentence(text: str) -> str:
    """A message as a sentence: "the ..." capitalised, ending with a full stop."""
    text = text.strip()
    if text.startswith("the "):
        text = "The " + text[4:]
    return text if not text or text.endswith((".", "!", "?")) else text + "."
