// JSON values as a collapsible tree (<details>, so keyboard-operable as is),
// and the differences between two values, path by path.

function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function scalar(value) {
  const s = h("span", `json-${value === null ? "null" : typeof value}`);
  s.textContent = typeof value === "string" ? JSON.stringify(value) : String(value);
  return s;
}

function summary(value) {
  if (Array.isArray(value)) return `[${value.length}]`;
  return `{${Object.keys(value).length}}`;
}

/** The tree of `value`; objects and arrays open to `openDepth` levels. */
export function tree(value, openDepth = 2, key = null, depth = 0) {
  const isComposite = value !== null && typeof value === "object";
  if (!isComposite) {
    const row = h("div", "json-row");
    if (key !== null) row.append(h("span", "json-key", `${key}: `));
    row.append(scalar(value));
    return row;
  }
  const det = h("details", "json-node");
  det.open = depth < openDepth;
  const sum = h("summary");
  if (key !== null) sum.append(h("span", "json-key", `${key}: `));
  sum.append(h("span", "json-count", summary(value)));
  det.append(sum);
  const body = h("div", "json-children");
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [k, v] of entries) body.append(tree(v, openDepth, k, depth + 1));
  det.append(body);
  return det;
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** `[{ path, kind: "added" | "removed" | "changed", before, after }]` from `a` to `b`. */
export function diff(a, b, path = "", out = []) {
  if (same(a, b)) return out;
  const objA = a !== null && typeof a === "object";
  const objB = b !== null && typeof b === "object";
  if (objA && objB && Array.isArray(a) === Array.isArray(b)) {
    const keys = Array.isArray(a)
      ? [...Array(Math.max(a.length, b.length)).keys()]
      : [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const k of keys) {
      const p = Array.isArray(a) ? `${path}[${k}]` : path ? `${path}.${k}` : String(k);
      const inA = Array.isArray(a) ? k < a.length : Object.hasOwn(a, k);
      const inB = Array.isArray(b) ? k < b.length : Object.hasOwn(b, k);
      if (inA && !inB) out.push({ path: p, kind: "removed", before: a[k] });
      else if (!inA && inB) out.push({ path: p, kind: "added", after: b[k] });
      else diff(a[k], b[k], p, out);
    }
    return out;
  }
  if (a === undefined) out.push({ path: path || "(root)", kind: "added", after: b });
  else if (b === undefined) out.push({ path: path || "(root)", kind: "removed", before: a });
  else out.push({ path: path || "(root)", kind: "changed", before: a, after: b });
  return out;
}

/** A list element showing `diff(a, b)`. */
export function diffView(a, b) {
  const changes = diff(a, b);
  const list = h("ul", "diff");
  if (!changes.length) {
    list.append(h("li", "diff-none", "no change"));
    return list;
  }
  for (const c of changes) {
    const li = h("li", `diff-${c.kind}`);
    const sign = { added: "+", removed: "−", changed: "~" }[c.kind];
    li.append(h("span", "diff-sign", sign), h("code", "diff-path", c.path), " ");
    if (c.kind === "changed") {
      li.append(h("code", "diff-before", JSON.stringify(c.before)), " → ", h("code", "diff-after", JSON.stringify(c.after)));
    } else {
      li.append(h("code", c.kind === "added" ? "diff-after" : "diff-before", JSON.stringify(c.kind === "added" ? c.after : c.before)));
    }
    list.append(li);
  }
  return list;
}
