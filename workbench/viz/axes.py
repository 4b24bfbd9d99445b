"""Readable time axes: ticks in milliseconds shown as clock times or with their unit."""

from __future__ import annotations

from bokeh.models import CustomJSTickFormatter

__all__ = ["clock", "time_ticks"]

_CODE = """
const scale = %(scale)s;                      // ticks in this many ms
const ms = ticks.map((t) => t * scale);
const top = Math.max(...ms.map(Math.abs));
const step = ms.length > 1 ? Math.abs(ms[1] - ms[0]) : top;
const v = tick * scale;
if (top >= 60000) {                           // clock time h:mm:ss (.s when steps are finer)
  const sign = v < 0 ? "-" : "";
  let rest = Math.abs(v) / 1000;
  const h = Math.floor(rest / 3600); rest -= 3600 * h;
  const m = Math.floor(rest / 60); rest -= 60 * m;
  const digits = step < 1000 ? Math.min(3, Math.ceil(-Math.log10(step / 1000))) : 0;
  let s = rest.toFixed(digits);
  if (parseFloat(s) < 10) s = "0" + s;
  const mm = String(m).padStart(h > 0 ? 2 : 1, "0");
  return sign + (h > 0 ? h + ":" + mm : mm) + ":" + s;
}
if (top >= 2000) return (v / 1000).toLocaleString("en-US", {maximumFractionDigits: 3}) + " s";
return v.toLocaleString("en-US", {maximumFractionDigits: 3}) + " ms";
"""


def time_ticks(unit: str = "ms") -> CustomJSTickFormatter:
    """A tick formatter for a time axis in ``unit`` ("ms" or "s"): ``h:mm:ss`` (or ``m:ss``)
    from a minute up, ``2.5 s`` from two seconds (short labels: narrow charts stay legible),
    else ``850 ms``; one style per axis."""
    scale = {"ms": 1, "s": 1000}.get(unit)
    if scale is None:
        raise ValueError(f"unit = {unit!r} must be 'ms' or 's'")
    return CustomJSTickFormatter(code=_CODE % {"scale": scale})


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
