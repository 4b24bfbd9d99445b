"""The papers' sizes behind one switch: ``WORKBENCH_SCALE=paper`` (the default ``ci`` keeps
the small sizes the suite and the docs build run).

Every notebook's parameters cell and every experiment that has a paper-sized setting reads
it through :func:`sized`, so one variable (or ``workbench reports --paper``) moves all of
them at once.

>>> import os
>>> os.environ.pop(SCALE_ENV, None) and None
>>> sized(ci=400, paper=200_000)
400
>>> os.environ[SCALE_ENV] = "paper"
>>> sized(ci=400, paper=200_000)
200000
>>> del os.environ[SCALE_ENV]
"""

from __future__ import annotations

import os
from typing import Literal, TypeVar

__all__ = ["SCALE_ENV", "SCALES", "Scale", "scale", "sized"]

Scale = Literal["ci", "paper"]
SCALES: tuple[Scale, ...] = ("ci", "paper")
SCALE_ENV = "WORKBENCH_SCALE"
"""The environment variable that picks the experiments' sizes."""

T = TypeVar("T")


def scale() -> Scale:
    """The sizes in force: ``ci`` (small, the default) or ``paper`` (the papers' own)."""
    value = os.environ.get(SCALE_ENV, "ci").strip().lower() or "ci"
    if value not in SCALES:
        raise ValueError(f"{SCALE_ENV} = {value!r} is not one of {', '.join(SCALES)}")
    return value  # type: ignore[return-value]


def sized(ci: T, paper: T) -> T:
    """``paper`` when ``WORKBENCH_SCALE=paper``, otherwise ``ci``."""
    return paper if scale() == "paper" else ci
