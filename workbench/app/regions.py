"""Partition regions over a replayed partner stream: for one base event, the max-time sorted
partner events shaded into VR, LPR, SR, RPR (Theorem 3, or Eq. 4-6 below the fast path), with
counts from the binary-searched index ranges and Theorem 4's obsolete bound."""

from __future__ import annotations

import numpy as np
import panel as pn
import param

from workbench.app.panes import confidence_delta, controls_page, following_view, plot_key
from workbench.data.streams import ReplayedStreams, default_streams
from workbench.partitions import (
    Partitions,
    loose_partitions,
    obsolete_before,
    tight_partitions,
)
from workbench.probability import satisfaction_grid
from workbench.stime import StimeTable
from workbench.viz.axes import clock
from workbench.viz.figures import Layer, View, share_parts
from workbench.viz.ptjoin import (
    DELTA_COLOR,
    MARKERS,
    delta_layer,
    fill_swatch,
    line_swatch,
    marker_layer,
    point_layer,
    region_entries,
    region_layer,
)

__all__ = ["PartitionRegions"]

INTRO = (
    "A replayed partner stream B, sorted by detection time, around one base event "
    "a_i of stream A: every dot is a partner event at its exact probability of "
    "joining a_i, and the shading shows which range it falls in. The join computes "
    "probabilities only in the orange probing ranges and finds every range by "
    "binary search. Move the base event, delta or d and compare the counts."
)


class PartitionRegions(pn.viewable.Viewer):
    """Pick a base event of stream A; see where stream B's real events fall."""

    base = param.Integer(
        0, bounds=(0, None), label="base event a_i", doc="Index of a_i in stream A (by time)."
    )
    delta = confidence_delta()
    d = param.Number(
        3000.0,
        bounds=(0.0, 60_000.0),
        step=10.0,
        label="window d (ms)",
        doc="Join window d: a pair matches when the events occurred within d ms of each other.",
    )
    max_delay = param.Number(
        2000.0,
        bounds=(0.0, 60_000.0),
        step=10.0,
        label="D_A (ms)",
        doc="Longest delay of stream A's events in the network: partners too old for any "
        "later a_i are obsolete (Theorem 4).",
    )
    streams = param.ClassSelector(class_=ReplayedStreams, doc="The replayed event streams.")
    table = param.ClassSelector(class_=StimeTable, doc="stime tables for the current delta.")

    def __init__(self, **params: object) -> None:
        if "streams" not in params:
            params["streams"] = default_streams()
        super().__init__(**params)
        ev = self.streams.events
        a, b = ev.stream == 0, ev.stream == 1
        order_a = np.argsort(ev.t_det[a], kind="stable")
        self.a_template = ev.template[a][order_a]
        self.a_time = ev.t_det[a][order_a]
        order_b = np.argsort(ev.t_det[b], kind="stable")
        self.b_template = ev.template[b][order_b]
        self.b_max = ev.t_det[b][order_b]  # max(H_j) = t_det: the max-time sorted buffer
        self.param.base.bounds = (0, len(self.a_time) - 1)
        if "base" not in params:
            self.base = len(self.a_time) // 2
        if "max_delay" not in params:
            self.max_delay = self.streams.max_delay_ms
        self._rebuild_table()

    @param.depends("delta", watch=True)
    def _rebuild_table(self) -> None:
        a, b = self.streams.templates
        self.table = StimeTable.build(a, b, self.delta)

    @property
    def fast_path(self) -> bool:
        """Whether d >= max(pi_A, pi_B), so Theorem 3 and Theorem 4 apply."""
        return self.d >= self.table.min_d

    def base_event(self) -> tuple[int, float]:
        """(template u, detection time) of the chosen base event a_i."""
        return int(self.a_template[self.base]), float(self.a_time[self.base])

    def partitions(self) -> Partitions:
        """Theorem 3's partitions on the fast path, else Eq. 4-6."""
        u, t = self.base_event()
        if self.fast_path:
            return tight_partitions(self.table, u, t, self.d)
        hi = self.streams.templates[0].event(u, t)
        return loose_partitions(hi, self.d, self.streams.templates[1].pi)

    def obsolete_bound(self) -> float | None:
        """Theorem 4: partners with max time below this are obsolete (fast path only)."""
        if not self.fast_path:
            return None
        return obsolete_before(self.table, self.base_event()[1], self.d, self.max_delay)

    def counts(self) -> dict[str, int]:
        """Partner events per region (binary-searched index ranges) and obsolete ones."""
        ranges = self.partitions().index_ranges(self.b_max)
        out = {name: hi - lo for name, (lo, hi) in ranges.items()}
        out["VR"] = len(self.b_max) - sum(out.values())
        bound = self.obsolete_bound()
        out["obsolete"] = 0 if bound is None else int(np.searchsorted(self.b_max, bound))
        return out

    def nearby(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """Partner max times and exact probabilities of the events around a_i, and the range."""
        u, t = self.base_event()
        a, b = self.streams.templates
        hi = a.event(u, t)
        loose = loose_partitions(hi, self.d, b.pi)
        bound = self.obsolete_bound()
        lo = loose.lpr_lo if bound is None else min(loose.lpr_lo, bound)
        margin = 0.05 * (loose.rpr_hi - lo) + 1.0
        lo, hi_t = lo - margin, loose.rpr_hi + margin
        i, j = np.searchsorted(self.b_max, [lo, hi_t])
        xs, templates = self.b_max[i:j], self.b_template[i:j]
        grid = satisfaction_grid(hi, b, self.d, xs)  # (templates, events): pick each own row
        probs = grid[templates, np.arange(len(xs))] if len(xs) else np.zeros(0)
        return xs, probs, lo, hi_t

    def regions_view(self) -> View:
        """The partner events around a_i, shaded by region, with the obsolete bound."""
        p = self.partitions()
        xs, probs, lo, hi = self.nearby()
        marks = dict(zip(MARKERS, (p.lpr_lo, p.lpr_hi, p.rpr_lo, p.rpr_hi), strict=True))
        bound = self.obsolete_bound()
        if bound is not None:
            marks = {"obsolete <": bound, **marks}
        t = self.base_event()[1]
        kind = "Theorem 3" if self.fast_path else "Eq. 4-6 (d < max pi)"
        named = marker_layer(marks, "bound", "black", 1.03, span=hi - lo)
        return View(
            f"Partition regions of stream B around a_{self.base} (detected at {clock(t)}): {kind}",
            (lo, hi),
            (-0.03, max(1.12, float(np.max(named.columns["y"])) + 0.09)),
            {
                "regions": region_layer(p, lo, hi),
                "partners": point_layer(xs, probs, p.classify(xs)),
                "delta": delta_layer(self.delta),
                "base": Layer("vspan", {"x": [t]}, {"line_color": DELTA_COLOR, "line_width": 2}),
                "bound": named,
            },
        )

    @staticmethod
    def legend() -> pn.pane.Markdown:
        """What every mark of the plot means, in plain words."""
        return plot_key(
            [
                *region_entries(),
                (fill_swatch("gray", 0.8), "a partner event, coloured by its range"),
                (line_swatch(DELTA_COLOR), "the base event a_i"),
                (line_swatch(DELTA_COLOR, "dashed"), "delta, the probability a pair needs"),
                (
                    line_swatch("black", width=1),
                    "LH, LL, RL, RH: the ranges' bounds; obsolete <: older partners are "
                    "dropped from the buffer (Theorem 4)",
                ),
            ]
        )

    @param.depends("base", "d", "max_delay", "table")  # delta: via the table it rebuilds
    def summary(self) -> str:
        """Region counts over the whole partner stream and what the ranges guarantee
        (Markdown)."""
        c = self.counts()
        u, t = self.base_event()
        mote = self.streams.motes[0][u]
        bound = self.obsolete_bound()
        obsolete = (
            f"{c['obsolete']:,} (before {clock(bound)}, Theorem 4)"
            if bound is not None
            else "n/a (d below max pi)"
        )
        return (
            f"**{self.streams.source}**, replayed: a_i from mote {mote} detected at {clock(t)}; "
            f"{len(self.b_max):,} partner events\n\n"
            f"| range | partner events |\n|---|---|\n| SR (all join) | {c['SR']:,} |\n"
            f"| LPR (probe) | {c['LPR']:,} |\n| RPR (probe) | {c['RPR']:,} |\n"
            f"| VR (none join) | {c['VR']:,} |\n"
            f"| &nbsp;&nbsp;of which obsolete | {obsolete} |"
        )

    def __panel__(self) -> pn.viewable.Viewable:
        w = pn.widgets
        controls = [
            w.IntSlider.from_param(self.param.base),
            w.FloatSlider.from_param(self.param.delta),
            w.FloatSlider.from_param(self.param.d),
            w.FloatSlider.from_param(self.param.max_delay),
            pn.pane.Markdown(self.summary),
        ]
        shown = following_view(
            self,
            self.regions_view,
            ["base", "d", "max_delay", "table"],  # delta: via the table it rebuilds
            "detection time max(H_j) of the partner b_j (since the replay's start)",
            "exact P(|Xi - Xj| <= d)",
        )
        share_parts(shown.object)
        return controls_page(INTRO, "Partition regions", controls, shown, self.legend())
