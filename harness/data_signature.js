() => {
  const out = [];
  const add = (sum, x) => sum + (typeof x === "number" && Number.isFinite(x) ? x : 0);
  for (const doc of Bokeh.documents)
    for (const m of doc.all_models)
      if (m.data) for (const [k, v] of Object.entries(m.data))
        out.push(k + ":" + v.length + ":" + String(Array.prototype.slice.call(v, 0, 3))
          + ":" + Array.prototype.reduce.call(v, add, 0));
  return out.sort().join("|");
}
