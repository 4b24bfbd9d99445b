"""Parameters several tabs share, without Panel (their data models declare them)."""

from __future__ import annotations

import param

__all__ = ["confidence_delta"]


def confidence_delta() -> param.Number:
    """The confidence threshold control shared by the tabs that decide pairs (PTJoin
    jc(d, delta), Lemma 1)."""
    return param.Number(
        0.8,
        bounds=(0.01, 0.99),
        step=0.01,
        label="confidence delta",
        doc="Confidence threshold: a pair joins when P(|Xa - Xb| <= d) >= delta.",
    )
