"""Plots of histogram templates, satisfaction-probability curves and partition regions
(PTJoin paper, Figure 2 and Figure 3; interval timing paper, Figure 1)."""

from __future__ import annotations

from collections.abc import Mapping

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.partitions import Partitions, Region
from workbench.probability import adjusted_histograms, ge_batch
from workbench.timestamps import HistogramTimestamp, TemplateSet

__all__ = [
    "MARKERS",
    "REGION_COLORS",
    "adjusted_bars",
    "histogram_element",
    "marker_lines",
    "partition_spans",
    "partner_points",
    "satisfaction_curves",
    "satisfaction_grid",
    "satisfaction_plot",
    "template_bars",
]

REGION_COLORS = {"VR": "#d62728", "PR": "#ff7f0e", "SR": "#2ca02c"}
"""Colours of the violation, probing and satisfaction ranges."""

MARKERS = ("LH", "LL", "RL", "RH")
"""The crossing points of the envelopes with delta (interval timing paper, Figure 1(b))."""


def histogram_element(h: HistogramTimestamp, label: str = "") -> hv.Histogram:
    """A histogram timestamp as a density plot (Definition 1: uniform inside each bucket)."""
    return hv.Histogram((h.edges, h.density), kdims="time", vdims="density", label=label)


def template_bars(templates: TemplateSet, picked: int | None, title: str) -> hv.Overlay:
    """A stream's templates as bars over the offset from detection, ``phi - max(phi)``.

    Every template is drawn faintly; the picked one (if any) is drawn on top (Definition 4).
    Two elements whatever the number of templates, so a live plot keeps its structure.
    """

    def bars(ts: list[HistogramTimestamp]) -> pd.DataFrame:
        return pd.DataFrame(
            [
                (lo - t.max, 0.0, hi - t.max, dens)
                for t in ts
                for lo, hi, dens in zip(t.edges[:-1], t.edges[1:], t.density, strict=True)
            ],
            columns=["offset", "y0", "offset_end", "density"],
        )

    kdims = ["offset", "y0", "offset_end", "density"]
    others = [t for k, t in enumerate(templates) if k != picked]
    chosen = [templates[picked]] if picked is not None else []
    return (
        hv.Rectangles(bars(others), kdims=kdims).opts(color="gray", alpha=0.12, line_alpha=0.3)
        * hv.Rectangles(bars(chosen), kdims=kdims).opts(color="#1f77b4", alpha=0.7, tools=["hover"])
    ).opts(
        hv.opts.Overlay(
            title=title,
            xlabel="time offset from detection, phi - max(phi) (ms)",
            ylabel="density (1/ms)",
        )
    )


def adjusted_bars(hi: HistogramTimestamp, hj: HistogramTimestamp) -> hv.Overlay:
    """The adjusted histograms of a pair on their merged time points (Definition 3)."""
    points, p_i, p_j = adjusted_histograms(hi, hj)
    widths = np.diff(points)
    return hv.Overlay(
        [
            hv.Histogram((points, p_i / widths), kdims="time", vdims="density", label="H_i~").opts(
                alpha=0.5, color="#1f77b4"
            ),
            hv.Histogram((points, p_j / widths), kdims="time", vdims="density", label="H_j~").opts(
                alpha=0.5, color="#ff7f0e"
            ),
        ]
    )


def satisfaction_grid(
    hi: HistogramTimestamp, partners: TemplateSet, d: float, max_times: np.ndarray
) -> np.ndarray:
    """P(|Xi - Xj| <= d) for every partner template (rows) at every max(H_j) (columns).

    One vectorised call of the Lemma 1 formulas (``ge_batch``), as ``band_prob_many`` does
    pair by pair: the partner's edges are shifted to each max time by broadcasting.

    >>> u = HistogramTimestamp.uniform
    >>> satisfaction_grid(u(0, 10), TemplateSet("B", (u(0, 10),)), 5.0, np.array([10.0, 30.0]))
    array([[0.75, 0.  ]])
    """
    if not d >= 0:
        raise ValueError(f"d = {d!r} must be a non-negative number")
    xs = np.asarray(max_times, dtype=np.float64)
    edges_b, probs_b = partners.packed()  # (V, m+1), (V, m)
    shift = xs[None, :] - partners.max_times[:, None]  # (V, X)
    ej = edges_b[:, None, :] + shift[:, :, None]  # (V, X, m+1)
    pj = np.broadcast_to(probs_b[:, None, :], (*shift.shape, probs_b.shape[1]))
    ei = np.broadcast_to(hi.edges, (*shift.shape, hi.edges.size))
    pi = np.broadcast_to(hi.probs, (*shift.shape, hi.probs.size))
    both = ge_batch(ej + d, pj, ei, pi) + ge_batch(ei + d, pi, ej, pj)
    return np.clip(both - 1.0, 0.0, 1.0)


def satisfaction_curves(
    hi: HistogramTimestamp, partners: TemplateSet, d: float, max_times: np.ndarray
) -> hv.Overlay:
    """P(|Xi - Xj| <= d) against max(H_j), per partner template, with envelopes (Figure 3)."""
    return satisfaction_plot(max_times, satisfaction_grid(hi, partners, d, max_times))


def satisfaction_plot(max_times: np.ndarray, probs: np.ndarray, shown: int = 12) -> hv.Overlay:
    """Per-template satisfaction curves (the first ``shown``) and their envelopes (Figure 3).

    The upper envelope (max over templates) is solid, the lower (min) dotted, as in the
    interval timing paper's Figure 1.
    """
    paths = hv.Path(
        [(max_times, row) for row in probs[:shown]], kdims=["max(H_j)", "probability"]
    ).opts(color="gray", alpha=0.35, line_width=1)
    upper = hv.Curve(
        (max_times, probs.max(axis=0)), "max(H_j)", "probability", label="upper envelope"
    ).opts(color="black", line_width=2)
    lower = hv.Curve(
        (max_times, probs.min(axis=0)), "max(H_j)", "probability", label="lower envelope"
    ).opts(color="black", line_width=2, line_dash="dotted")
    return paths * upper * lower


def marker_lines(
    markers: Mapping[str, float], column: str, color: str, y: float, dash: str = "solid"
) -> hv.Overlay:
    """Vertical lines at named time points, with their names as labels at height ``y``.

    The labels' source carries the names in ``column`` (the browser tests read it there).
    """
    frame = pd.DataFrame({"x": list(markers.values()), "y": y, column: list(markers.keys())})
    lines = hv.VLines(frame, kdims=["x"]).opts(color=color, line_width=1.5, line_dash=dash)
    labels = hv.Labels(frame, kdims=["x", "y"], vdims=[column]).opts(
        text_color=color, text_font_size="9pt", text_baseline="bottom"
    )
    return lines * labels


def partition_spans(p: Partitions, lo: float, hi: float) -> hv.VSpans:
    """Shaded VR / PR / SR bands of a partition between ``lo`` and ``hi`` on the time axis.

    One element whatever the bands (empty ones are zero wide), so a live plot keeps its shape.
    """
    bands = [
        ("VR", lo, p.lpr_lo),
        ("PR", p.lpr_lo, p.lpr_hi),
        ("SR", p.lpr_hi, p.rpr_lo),
        ("PR", p.rpr_lo, p.rpr_hi),
        ("VR", p.rpr_hi, hi),
    ]
    frame = pd.DataFrame(
        {
            "x0": [a for _, a, _ in bands],
            "x1": [max(a, b) for _, a, b in bands],
            "region": [name for name, _, _ in bands],
            "color": [REGION_COLORS[name] for name, _, _ in bands],
        }
    )
    return hv.VSpans(frame, kdims=["x0", "x1"], vdims=["region", "color"]).opts(
        color="color", alpha=0.15, line_alpha=0
    )


def partner_points(max_times: np.ndarray, probs: np.ndarray, regions: np.ndarray) -> hv.Points:
    """Partner events at (max(H_j), exact probability), coloured by their region."""
    frame = pd.DataFrame(
        {
            "max(H_j)": max_times,
            "probability": probs,
            "region": [Region(r).name for r in regions],
        }
    )
    return hv.Points(frame, kdims=["max(H_j)", "probability"], vdims=["region"]).opts(
        color="region",
        cmap=REGION_COLORS,
        size=6,
        tools=["hover"],
        show_legend=True,
    )
