// A time axis's tick label (Bokeh CustomJSTickFormatter: `tick`, `ticks`, and `scale`, the
// ticks' unit in ms, given as an argument): workbench.viz.axes.time_ticks.
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
