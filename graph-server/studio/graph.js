// Draws the JSON of GET /assistants/{id}/graph as SVG: a layered layout (rows
// by longest path from __start__, back edges of loops drawn on the side),
// conditional edges dashed, the nodes of an expanded subgraph (ids `parent:child`,
// from `?xray=true`) boxed together.

const SVG = "http://www.w3.org/2000/svg";
const ROW = 84;
const GAP = 36;
const NODE_H = 34;

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

export function nodeLabel(node) {
  const id = String(node.id);
  if (id === "__start__" || id === "__end__") return id.replaceAll("_", "");
  const name = node.data && typeof node.data === "object" && node.data.name ? String(node.data.name) : id;
  const last = name.split(":").pop();
  return last;
}

/** Node positions: `{ pos: Map(id -> {x, y, w}), back: Set(edge index), width, height }`. */
export function layout(graph) {
  const nodes = graph.nodes || [];
  const edges = graph.edges || [];
  const ids = nodes.map((n) => String(n.id));
  const out = new Map(ids.map((id) => [id, []]));
  edges.forEach((e, i) => {
    if (!out.has(String(e.source))) out.set(String(e.source), []);
    out.get(String(e.source)).push([String(e.target), i]);
  });

  // Back edges: those closing a cycle in a depth-first walk from __start__.
  const back = new Set();
  const state = new Map();
  const roots = ids.includes("__start__") ? ["__start__", ...ids] : ids;
  for (const root of roots) {
    if (state.has(root)) continue;
    const stack = [[root, 0]];
    state.set(root, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const succ = out.get(top[0]) || [];
      if (top[1] >= succ.length) {
        state.set(top[0], 2);
        stack.pop();
        continue;
      }
      const [next, idx] = succ[top[1]++];
      const s = state.get(next);
      if (s === 1) back.add(idx);
      else if (s === undefined) {
        state.set(next, 1);
        stack.push([next, 0]);
      }
    }
  }

  // Layers: longest path over the forward edges; __end__ last.
  const layer = new Map(ids.map((id) => [id, 0]));
  for (let pass = 0; pass < ids.length; pass++) {
    let changed = false;
    edges.forEach((e, i) => {
      if (back.has(i)) return;
      const s = String(e.source);
      const t = String(e.target);
      const want = (layer.get(s) ?? 0) + 1;
      if ((layer.get(t) ?? 0) < want) {
        layer.set(t, want);
        changed = true;
      }
    });
    if (!changed) break;
  }
  let maxLayer = 0;
  for (const v of layer.values()) maxLayer = Math.max(maxLayer, v);
  if (layer.has("__end__")) {
    const others = ids.filter((id) => id !== "__end__").map((id) => layer.get(id));
    layer.set("__end__", Math.max(layer.get("__end__"), Math.max(0, ...others) + 1));
    maxLayer = Math.max(maxLayer, layer.get("__end__"));
  }

  const rows = [];
  for (let l = 0; l <= maxLayer; l++) rows.push([]);
  ids.forEach((id) => rows[layer.get(id)].push(id));

  // Order within a row by the mean position of the nodes above (a few sweeps).
  const order = new Map();
  rows.forEach((r) => r.forEach((id, i) => order.set(id, i)));
  const preds = new Map(ids.map((id) => [id, []]));
  edges.forEach((e, i) => {
    if (!back.has(i) && preds.has(String(e.target))) preds.get(String(e.target)).push(String(e.source));
  });
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let l = 1; l < rows.length; l++) {
      const bary = (id) => {
        const p = preds.get(id);
        return p.length ? p.reduce((a, s) => a + order.get(s), 0) / p.length : order.get(id);
      };
      rows[l].sort((a, b) => bary(a) - bary(b) || a.localeCompare(b));
      rows[l].forEach((id, i) => order.set(id, i));
    }
  }

  const byId = new Map(nodes.map((n) => [String(n.id), n]));
  const width = (id) => Math.max(70, nodeLabel(byId.get(id)).length * 8 + 30);
  const rowWidths = rows.map((r) => r.reduce((a, id) => a + width(id), 0) + GAP * Math.max(0, r.length - 1));
  const total = Math.max(220, ...rowWidths);
  const pos = new Map();
  rows.forEach((r, l) => {
    let x = (total - rowWidths[l]) / 2;
    for (const id of r) {
      const w = width(id);
      pos.set(id, { x, y: l * ROW, w });
      x += w + GAP;
    }
  });
  return { pos, back, width: total, height: maxLayer * ROW + NODE_H };
}

/**
 * Renders `graph` into the <svg> `svg`. Returns a map node id -> <g>, so that
 * the caller can set the `running` / `next` / `done` classes.
 */
export function render(svg, graph) {
  svg.replaceChildren();
  const { pos, back, width, height } = layout(graph);
  const pad = 60;
  svg.setAttribute("viewBox", `${-pad} ${-20} ${width + pad * 2} ${height + 40}`);
  const defs = el("defs", {}, svg);
  const marker = el(
    "marker",
    { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" },
    defs,
  );
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }, marker);

  // Subgraph boxes: every prefix `a:b` of a node id `a:b:c`.
  const groups = new Map();
  for (const [id, p] of pos) {
    const parts = id.split(":");
    for (let k = 1; k < parts.length; k++) {
      const g = parts.slice(0, k).join(":");
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(p);
    }
  }
  const boxes = el("g", { class: "subgraphs" }, svg);
  for (const [name, ps] of [...groups].sort((a, b) => a[0].split(":").length - b[0].split(":").length)) {
    const depth = name.split(":").length;
    const m = 14 - depth * 3;
    const x0 = Math.min(...ps.map((p) => p.x)) - m;
    const y0 = Math.min(...ps.map((p) => p.y)) - m - 14;
    const x1 = Math.max(...ps.map((p) => p.x + p.w)) + m;
    const y1 = Math.max(...ps.map((p) => p.y + NODE_H)) + m;
    el("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 10, class: "subgraph", "data-subgraph": name }, boxes);
    const t = el("text", { x: x0 + 8, y: y0 + 12, class: "subgraph-label" }, boxes);
    t.textContent = name.split(":").pop();
  }

  const edgeLayer = el("g", { class: "edges" }, svg);
  (graph.edges || []).forEach((e, i) => {
    const s = pos.get(String(e.source));
    const t = pos.get(String(e.target));
    if (!s || !t) return;
    let d;
    if (back.has(i) || t.y <= s.y) {
      // Out of the source's right side and into the target's, around the row.
      const x = Math.max(s.x + s.w, t.x + t.w);
      const bulge = x + 40 + (i % 3) * 10;
      d = `M ${s.x + s.w} ${s.y + NODE_H / 2} C ${bulge} ${s.y + NODE_H / 2}, ${bulge} ${t.y + NODE_H / 2}, ${t.x + t.w} ${t.y + NODE_H / 2}`;
    } else if (t.y - s.y > ROW && crosses(pos, s, t)) {
      // Skips a row with a node in its way: around the left side.
      const x = Math.min(s.x, t.x, ...between(pos, s, t).map((p) => p.x)) - 30 - (i % 3) * 8;
      d = `M ${s.x} ${s.y + NODE_H / 2} C ${x} ${s.y + NODE_H / 2}, ${x} ${t.y + NODE_H / 2}, ${t.x} ${t.y + NODE_H / 2}`;
    } else {
      const sx = s.x + s.w / 2;
      const sy = s.y + NODE_H;
      const tx = t.x + t.w / 2;
      const ty = t.y;
      const my = (sy + ty) / 2;
      d = `M ${sx} ${sy} C ${sx} ${my}, ${tx} ${my}, ${tx} ${ty}`;
    }
    const path = el("path", { d, class: e.conditional ? "edge conditional" : "edge", "marker-end": "url(#arrow)" }, edgeLayer);
    path.dataset.source = String(e.source);
    path.dataset.target = String(e.target);
    if (e.data !== undefined && e.data !== null && e.data !== "") {
      const [x, y] = midpoint(s, t, back.has(i));
      const label = el("text", { x, y, class: "edge-label" }, edgeLayer);
      label.textContent = typeof e.data === "string" ? e.data : JSON.stringify(e.data);
    }
  });

  const nodeLayer = el("g", { class: "nodes" }, svg);
  const byId = new Map((graph.nodes || []).map((n) => [String(n.id), n]));
  const handles = new Map();
  for (const [id, p] of pos) {
    const special = id === "__start__" || id.endsWith(":__start__") || id === "__end__" || id.endsWith(":__end__");
    const g = el("g", { class: special ? "node terminal" : "node", transform: `translate(${p.x},${p.y})` }, nodeLayer);
    g.dataset.node = id;
    const title = el("title", {}, g);
    title.textContent = id;
    el("rect", { width: p.w, height: NODE_H, rx: special ? NODE_H / 2 : 8 }, g);
    const t = el("text", { x: p.w / 2, y: NODE_H / 2 + 5, "text-anchor": "middle" }, g);
    t.textContent = nodeLabel(byId.get(id));
    handles.set(id, g);
  }
  return handles;
}

function between(pos, s, t) {
  return [...pos.values()].filter((p) => p.y > s.y && p.y < t.y);
}

/** Whether the straight line from `s` down to `t` runs through a node between them. */
function crosses(pos, s, t) {
  const x0 = s.x + s.w / 2;
  const x1 = t.x + t.w / 2;
  return between(pos, s, t).some((p) => {
    const x = x0 + ((x1 - x0) * (p.y + NODE_H / 2 - s.y - NODE_H)) / (t.y - s.y - NODE_H);
    return x > p.x - 6 && x < p.x + p.w + 6;
  });
}

function midpoint(s, t, isBack) {
  if (isBack) return [Math.max(s.x + s.w, t.x + t.w) + 44, (s.y + t.y) / 2 + NODE_H / 2];
  return [(s.x + s.w / 2 + t.x + t.w / 2) / 2 + 4, (s.y + NODE_H + t.y) / 2];
}
