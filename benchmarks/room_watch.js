// Each session's clock inside its page (see WATCH in room.py).
(() => {
  const want = new Set(FIRST);   // labels awaited
  const candidates = new Map();  // text node holding a wanted label -> the label
  const room = window.__room = {shown: {}, clicked: NaN, pressed: NaN, changed: NaN};
  const hold = (text) => {
    for (const label of want) if (text.data.includes(label)) candidates.set(text, label);
  };
  const scan = (node) => {
    if (node.nodeType === 3) return hold(node);
    if (node.nodeType !== 1 && node.nodeType !== 11) return;
    const walk = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walk.nextNode(); text; text = walk.nextNode()) hold(text);
  };
  // a kept tab's hidden content keeps its boxes (hidden by visibility, not display): only
  // checkVisibility tells it is not shown
  const shown = (el) => el.checkVisibility({visibilityProperty: true});
  let framing = false, later = 0;
  const look = () => {
    framing = false;
    for (const [text, label] of candidates) {
      const el = text.parentElement;
      if (!want.has(label)) candidates.delete(text);
      else if (text.isConnected && el && shown(el)) {
        room.shown[label] = performance.now();
        want.delete(label);
        candidates.delete(text);
      }
    }
    clearTimeout(later);  // shown by a change no mutation tells (a style sheet loading)
    if (candidates.size) later = setTimeout(look, 100);
  };
  const changed = (records) => {
    if (!want.size) return;
    for (const r of records) {
      if (r.type === "characterData") hold(r.target);
      else if (r.type === "childList") r.addedNodes.forEach(scan);
    }
    if (candidates.size && !framing) { framing = true; requestAnimationFrame(look); }
  };
  const observe = (root) => new MutationObserver(changed).observe(
    root, {subtree: true, childList: true, characterData: true, attributes: true});
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    observe(root);
    return root;
  };
  observe(document);
  room.want = (label) => {
    delete room.shown[label];  // a label seen before (a return, another tab's) is waited anew
    want.add(label);
    const roots = [document];
    while (roots.length) for (const el of roots.pop().querySelectorAll("*")) {
      if (el.shadowRoot) roots.push(el.shadowRoot);
      for (const node of el.childNodes) if (node.nodeType === 3) hold(node);
    }
    look();
  };
  room.follow = () => {
    let framed = false;
    for (const doc of Bokeh.documents) doc.on_change((e) => {
      if (e.model == null || e.model.data === undefined) return;
      if (e.attr !== "data" && !String(e.kind).startsWith("Column")) return;
      if (framed || room.changed > room.pressed) return;
      framed = true;
      requestAnimationFrame(() => { framed = false; room.changed = performance.now(); });
    });
  };
  addEventListener("pointerdown", () => { room.clicked = performance.now(); }, true);
  addEventListener("keydown", () => { room.pressed = performance.now(); }, true);
})();
