// What a user would see as broken, from bounding boxes through every shadow root: plot areas
// of (near) zero size, plots on top of each other, text or table columns wider than their box,
// a select whose chosen text is cut, a visible error message.  One string per problem.
() => {
  const els = [];
  const walk = (root) => {
    for (const n of root.querySelectorAll("*")) { els.push(n); if (n.shadowRoot) walk(n.shadowRoot); }
  };
  walk(document);
  const shown = (n) => {
    const r = n.getBoundingClientRect();
    return n.checkVisibility({visibilityProperty: true}) && r.width > 0 && r.height > 0;
  };
  const text = (n) => (n.textContent || "").trim().slice(0, 40);
  const problems = [];
  const frames = els.filter((n) => n.classList.contains("bk-CartesianFrame") && n.checkVisibility());
  frames.forEach((n, i) => {
    const r = n.getBoundingClientRect();
    if (r.width < 40 || r.height < 40)
      problems.push(`plot area ${i + 1} of ${frames.length} is ${Math.round(r.width)} x ${Math.round(r.height)} px`);
  });
  const boxes = els.filter((n) => n.classList.contains("bk-Figure") && shown(n))
    .map((n) => n.getBoundingClientRect());
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 2 && h > 2) problems.push(`plots ${i + 1} and ${j + 1} overlap by ${Math.round(w)} x ${Math.round(h)} px`);
    }
  const boxed = "label, .bk-slider-title, .bk-input-group, .read-table-box, .markdown, .bk-btn, "
    + ".alert";
  for (const n of els) {
    if (!n.matches(boxed) || !shown(n) || !text(n)) continue;
    if (n.scrollWidth > n.clientWidth + 2)
      problems.push(`"${text(n)}" (${n.className.split(" ")[0] || n.tagName}) overflows its box: ${n.scrollWidth} > ${n.clientWidth} px`);
  }
  const ctx = document.createElement("canvas").getContext("2d");
  for (const n of els) {
    if (n.tagName !== "SELECT" || !shown(n) || n.selectedIndex < 0) continue;
    const style = getComputedStyle(n);
    ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const chosen = n.options[n.selectedIndex].text;
    const room = n.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const need = ctx.measureText(chosen).width;
    if (need > room + 1) problems.push(`select "${chosen}" is cut: needs ${Math.round(need)} of ${Math.round(room)} px`);
  }
  for (const n of els)
    if (n.matches(".alert-danger") && shown(n)) problems.push(`error shown: "${text(n)}"`);
  return problems;
}
