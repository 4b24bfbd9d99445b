"""Readable time axes: ticks in milliseconds shown as clock times or with their unit."""

from __future__ import annotations

from importlib.resources import files

from bokeh.models import CustomJSTickFormatter

__all__ = ["clock", "time_ticks"]

_CODE = (files("workbench.viz") / "time_ticks.js").read_text(encoding="utf-8")
"""The formatter's script (``scale``: the ticks' unit in ms, an argument)."""


def time_ticks(unit: str = "ms") -> CustomJSTickFormatter:
    """A tick formatter for a time axis in ``unit`` ("ms" or "s"): ``h:mm:ss`` (or ``m:ss``)
    from a minute up, ``2.5 s`` from two seconds (short labels: narrow charts stay legible),
    else ``850 ms``; one style per axis."""
    scale = {"ms": 1, "s": 1000}.get(unit)
    if scale is None:
        raise ValueError(f"unit = {unit!r} must be 'ms' or 's'")
    return CustomJSTickFormatter(args={"scale": scale}, code=_CODE)


def clock(ms: float) -> str:
    """A time in ms as ``h:mm:ss.s`` (or ``m:ss.s``), as the time axes show it.

    >>> clock(10_722_102.6), clock(61_500), clock(-2_000)
    ('2:58:42.1', '1:01.5', '-0:02.0')
    """
    sign, rest = ("-" if ms < 0 else ""), round(abs(ms) / 1000.0, 1)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    head = f"{int(h)}:{int(m):02d}" if h else f"{int(m)}"
    return f"{sign}{head}:{s:04.1f}"
