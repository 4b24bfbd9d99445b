"""Event sources: synthetic streams (and, later, the Intel Lab deployment and users' CSVs)."""

from __future__ import annotations

from workbench.data.synthetic import synthetic_events

__all__ = ["synthetic_events"]
