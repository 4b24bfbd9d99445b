"""Plots of histogram templates, satisfaction-probability curves and partition regions
(PTJoin paper, Figure 2 and Figure 3)."""

from __future__ import annotations

import holoviews as hv
import numpy as np

from workbench.partitions import Partitions
from workbench.probability import band_prob_many
from workbench.timestamps import HistogramTimestamp, TemplateSet

__all__ = ["REGION_COLORS", "histogram_element", "partition_spans", "satisfaction_curves"]

REGION_COLORS = {"VR": "#d62728", "PR": "#ff7f0e", "SR": "#2ca02c"}
"""Colours of the violation, probing and satisfaction ranges."""


def histogram_element(h: HistogramTimestamp, label: str = "") -> hv.Histogram:
    """A histogram timestamp as a density plot (Definition 1: uniform inside each bucket)."""
    return hv.Histogram((h.edges, h.density), kdims="time", vdims="density", label=label)


def satisfaction_curves(
    hi: HistogramTimestamp,
    partners: TemplateSet,
    d: float,
    max_times: np.ndarray,
) -> hv.Overlay:
    """P(|Xi - Xj| <= d) against max(H_j), one curve per partner template (Figure 3)."""
    curves = []
    for k, phi in enumerate(partners):
        hjs = [phi.detected_at(m) for m in max_times]
        probs = band_prob_many([hi] * len(hjs), hjs, d)
        curves.append(
            hv.Curve((max_times, probs), kdims="max(H_j)", vdims="probability", label=f"phi_{k}")
        )
    return hv.Overlay(curves)


def partition_spans(p: Partitions, lo: float, hi: float) -> hv.Overlay:
    """Shaded VR / PR / SR bands of a partition between ``lo`` and ``hi`` on the time axis."""
    bands = [
        ("VR", lo, p.lpr_lo),
        ("PR", p.lpr_lo, p.lpr_hi),
        ("SR", p.lpr_hi, p.rpr_lo),
        ("PR", p.rpr_lo, p.rpr_hi),
        ("VR", p.rpr_hi, hi),
    ]
    spans = [
        hv.VSpan(a, b).opts(color=REGION_COLORS[name], alpha=0.15) for name, a, b in bands if b > a
    ]
    return hv.Overlay(spans)
