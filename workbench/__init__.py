"""Join and coalesce event streams whose timestamps are uncertain.

The core (this package's top level) is NumPy only: histogram timestamps, exact probabilities,
satisfaction times and partitions.  ``workbench.spark`` imports PySpark and ``workbench.app`` /
``workbench.viz`` import Panel and HoloViews; ``import workbench`` loads none of them.
"""

from __future__ import annotations

from workbench.interval_bounds import IntervalBounds, interval_bounds, invalidation_bound
from workbench.partitions import (
    Partitions,
    Region,
    loose_partitions,
    obsolete_before,
    tight_partitions,
)
from workbench.probability import (
    adjusted_histograms,
    band_prob,
    band_prob_many,
    ge,
    ge_batch,
    ge_lemma1,
    ge_theorem1,
    prob_ge,
    prob_ge_many,
)
from workbench.stime import StimeTable, stime, stime_table
from workbench.templates import TemplateSet, random_templates
from workbench.timestamps import HistogramTimestamp, pack_histograms

__version__ = "0.1.0"

__all__ = [
    "HistogramTimestamp",
    "IntervalBounds",
    "Partitions",
    "Region",
    "StimeTable",
    "TemplateSet",
    "adjusted_histograms",
    "band_prob",
    "band_prob_many",
    "ge",
    "ge_batch",
    "ge_lemma1",
    "ge_theorem1",
    "interval_bounds",
    "invalidation_bound",
    "loose_partitions",
    "obsolete_before",
    "pack_histograms",
    "prob_ge",
    "prob_ge_many",
    "random_templates",
    "stime",
    "stime_table",
    "tight_partitions",
]
