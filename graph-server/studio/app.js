// stategraph studio: the page's behaviour. It talks to the server only through
// `Api` (LangGraph Server's public HTTP API), so it works against graph-server
// or any server speaking that API.

import { Api } from "./api.js";
import { render as renderGraph } from "./graph.js";
import { diffView, tree } from "./json.js";
import { VirtualList } from "./vlist.js";

const $ = (id) => document.getElementById(id);
const ROW_H = 52;
const HISTORY_PAGE = 100;
const HISTORY_MAX = 5000;
// Asked for first; a server that rejects one of them is asked again with fewer.
const STREAM_MODES = [
  ["values", "updates", "messages-tuple", "tasks"],
  ["values", "updates", "messages"],
  ["values", "updates"],
];

const S = {
  api: null,
  assistants: [],
  assistant: null,
  schemas: null,
  nodes: new Map(), // node id -> <g>
  graphNodeIds: [],
  threads: [],
  threadId: null,
  threadState: null,
  history: [], // newest first, normalised
  byId: new Map(),
  selected: -1,
  run: null, // { threadId, runId, abort, cancelled, left }: the run the page shows
  live: new Map(), // streamed message id -> { text, node }
  values: null, // the values shown in the conversation
  chatKeys: new Map(), // graph id -> the serde variant a 422 taught us to use for a human message
};

// --- small helpers -----------------------------------------------------------

function h(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function setStatus(text, error = false) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", error);
}

function fail(err) {
  console.error(err);
  setStatus(err && err.message ? err.message : String(err), true);
}

function short(id) {
  return id ? String(id).slice(0, 8) : "";
}

function parseLoose(text) {
  const t = text.trim();
  if (!t) return null;
  try {
    return JSON.parse(t);
  } catch {
    return t;
  }
}

// --- messages ------------------------------------------------------------------

function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p.text ?? "")).join("");
  return content === undefined ? "" : JSON.stringify(content);
}

/** `{ role, text }` of a message in LangChain's shape or serde's (`{"Human": "..."}`). */
export function describeMessage(m) {
  if (m === null || typeof m !== "object") return { role: "other", text: String(m) };
  if (typeof m.type === "string" || typeof m.role === "string") {
    const r = (m.type || m.role).toLowerCase();
    const role = r === "human" || r === "user" ? "human" : r === "ai" || r === "assistant" || r === "aimessagechunk" ? "ai" : r;
    let text = contentText(m.content);
    for (const c of m.tool_calls || []) text += `${text ? "\n" : ""}→ ${c.name}(${JSON.stringify(c.args)})`;
    return { role, text };
  }
  const keys = Object.keys(m);
  if (keys.length === 1) {
    const k = keys[0];
    const v = m[k];
    const lk = k.toLowerCase();
    const role = /^(human|user)/.test(lk) ? "human" : /^(ai|assistant)/.test(lk) ? "ai" : /tool/.test(lk) ? "tool" : lk;
    let text = typeof v === "string" ? v : JSON.stringify(v);
    if (lk === "toolcall" && v && typeof v === "object" && v.tool !== undefined) text = `→ ${v.tool}(${v.input ?? ""})`;
    return { role, text, label: k };
  }
  return { role: "other", text: JSON.stringify(m) };
}

function resolveRef(schema, root) {
  let s = schema;
  for (let i = 0; i < 8 && s && s.$ref; i++) {
    const path = s.$ref.replace(/^#\//, "").split("/");
    s = path.reduce((o, k) => (o ? o[k] : undefined), root);
  }
  return s || {};
}

function inputSchema() {
  return (S.schemas && (S.schemas.input_schema || S.schemas.state_schema)) || null;
}

/** How the human's chat message is spelled: `{ key }` for serde enums, or LangChain's dict. */
function chatShape() {
  const root = inputSchema();
  const msgs = root && root.properties && root.properties.messages;
  if (!msgs) return null;
  const learnt = S.assistant && S.chatKeys.get(S.assistant.graph_id);
  if (learnt) return { key: learnt };
  const existing = (S.values && S.values.messages) || [];
  for (const m of existing) {
    if (m && typeof m === "object" && !m.type && !m.role) {
      const k = Object.keys(m).find((k) => /^(human|user)$/i.test(k));
      if (k) return { key: k };
    }
  }
  const items = resolveRef(msgs.items, root);
  for (const v of items.anyOf || items.oneOf || [items]) {
    const variant = resolveRef(v, root);
    const k = Object.keys(variant.properties || {}).find((k) => /^(human|user)$/i.test(k));
    if (k) return { key: k };
    if (Array.isArray(variant.enum)) {
      const e = variant.enum.find((x) => /^(human|user)$/i.test(x));
      if (e) return { key: e };
    }
  }
  return { langchain: true };
}

function humanMessage(text) {
  const shape = chatShape() || { langchain: true };
  return shape.key ? { [shape.key]: text } : { role: "user", content: text };
}

// --- the conversation and the event log ----------------------------------------

function renderChat() {
  const chat = $("chat");
  chat.replaceChildren();
  const values = S.values || {};
  const messages = Array.isArray(values.messages) ? values.messages : null;
  if (messages) {
    for (const m of messages) {
      const d = describeMessage(m);
      chat.append(h("div", { class: `msg msg-${d.role}` }, h("span", { class: "who", text: d.label || d.role }), h("span", { class: "text", text: d.text })));
    }
  } else if (S.values) {
    chat.append(tree(S.values, 2));
  }
  const texts = new Set((messages || []).map((m) => describeMessage(m).text));
  for (const [id, live] of S.live) {
    if (texts.has(live.text)) {
      S.live.delete(id);
      continue;
    }
    chat.append(
      h("div", { class: "msg msg-ai streaming", "data-stream": id }, h("span", { class: "who", text: live.node || "ai" }), h("span", { class: "text", text: live.text })),
    );
  }
  chat.scrollTop = chat.scrollHeight;
}

function logEvent(event, data) {
  const list = $("events");
  const text = typeof data === "string" ? data : JSON.stringify(data);
  list.append(h("li", {}, h("b", { text: event }), " ", h("code", { text: text.length > 400 ? `${text.slice(0, 400)}…` : text })));
  if (list.children.length > 2000) list.firstElementChild.remove();
  list.scrollTop = list.scrollHeight;
}

// --- the graph -------------------------------------------------------------------

async function loadGraph() {
  if (!S.assistant) return;
  const graph = await S.api.graph(S.assistant.assistant_id, $("xray").checked);
  S.nodes = renderGraph($("graph"), graph);
  S.graphNodeIds = (graph.nodes || []).map((n) => String(n.id)).filter((id) => !/(^|:)__(start|end)__$/.test(id));
  const sel = $("edit-as-node");
  sel.replaceChildren(h("option", { value: "", text: "(the last one to write)" }));
  for (const id of S.graphNodeIds) sel.append(h("option", { value: id, text: id }));
  for (const [id, g] of S.nodes) {
    g.setAttribute("tabindex", "-1");
    g.addEventListener("click", () => setStatus(`node ${id}`));
  }
  markNext();
}

function nodeHandle(name, ns) {
  const prefix = ns ? ns.split("|").map((p) => p.split(":")[0]).join(":") : "";
  return S.nodes.get(prefix ? `${prefix}:${name}` : name) || S.nodes.get(name) || (prefix ? S.nodes.get(prefix.split(":")[0]) : null);
}

function markNode(name, ns, cls) {
  const g = nodeHandle(name, ns);
  if (!g) return;
  if (cls === "running") g.classList.remove("done");
  if (cls === "done") g.classList.remove("running");
  g.classList.add(cls);
}

function clearMarks(...classes) {
  for (const g of S.nodes.values()) g.classList.remove(...classes);
}

/** Marks the nodes the selected checkpoint (or the thread's head) runs next. */
function markNext() {
  clearMarks("next");
  const cp = S.history[S.selected];
  const next = cp ? cp.next : S.threadState ? S.threadState.next : [];
  for (const n of next || []) markNode(n, "", "next");
}

// --- assistants ------------------------------------------------------------------

async function connect() {
  const base = $("base-url").value.trim();
  localStorage.setItem("studio.base", base);
  sessionStorage.setItem("studio.token", $("token").value);
  S.api = new Api(base, $("token").value);
  setStatus("connecting…");
  try {
    S.assistants = await S.api.searchAssistants();
  } catch (e) {
    fail(e);
    return;
  }
  const sel = $("assistant");
  sel.replaceChildren();
  for (const a of S.assistants) sel.append(h("option", { value: a.assistant_id, text: a.name || a.graph_id }));
  const wanted = new URLSearchParams(location.search).get("assistant") || localStorage.getItem("studio.assistant");
  const pick = S.assistants.find((a) => a.assistant_id === wanted || a.graph_id === wanted || a.name === wanted) || S.assistants[0];
  if (pick) sel.value = pick.assistant_id;
  setStatus(`${S.assistants.length} assistant(s) on ${base || location.origin}`);
  await selectAssistant();
}

async function selectAssistant() {
  const assistant = S.assistants.find((a) => a.assistant_id === $("assistant").value) || null;
  S.assistant = assistant;
  // Set once the graph, the input and the threads are the new assistant's.
  delete document.body.dataset.assistant;
  clearThread();
  if (!assistant) return;
  localStorage.setItem("studio.assistant", assistant.graph_id);
  try {
    const [schemas] = await Promise.all([S.api.schemas(assistant.assistant_id).catch(() => null), loadGraph()]);
    if (S.assistant !== assistant) return;
    S.schemas = schemas;
    setupInput();
    await loadThreads();
    if (S.assistant === assistant) document.body.dataset.assistant = assistant.graph_id;
  } catch (e) {
    fail(e);
  }
}

// --- threads -----------------------------------------------------------------------

async function loadThreads() {
  const mine = $("thread-mine").checked && S.assistant;
  S.threads = await S.api.searchThreads({
    metadata: mine ? { graph_id: S.assistant.graph_id } : undefined,
    status: $("thread-status").value || undefined,
    limit: 100,
  });
  renderThreads();
}

function renderThreads() {
  const q = $("thread-search").value.trim().toLowerCase();
  const list = $("thread-list");
  list.replaceChildren();
  const shown = S.threads.filter((t) => !q || `${t.thread_id} ${t.status} ${JSON.stringify(t.metadata || {})}`.toLowerCase().includes(q));
  shown.forEach((t, i) => {
    const li = h(
      "li",
      { role: "option", id: `thread-${i}`, "data-thread": t.thread_id, "aria-selected": String(t.thread_id === S.threadId), class: "thread" },
      h("code", { text: short(t.thread_id) }),
      h("span", { class: `badge status-${t.status}`, text: t.status || "" }),
      h("time", { text: t.updated_at ? new Date(t.updated_at).toLocaleTimeString() : "" }),
    );
    li.addEventListener("click", () => selectThread(t.thread_id));
    list.append(li);
  });
  if (!shown.length) list.append(h("li", { class: "empty", text: S.threads.length ? "no match" : "no threads yet" }));
}

async function newThread() {
  try {
    const t = await S.api.createThread(S.assistant ? { graph_id: S.assistant.graph_id } : {});
    await loadThreads();
    await selectThread(t.thread_id);
    return t.thread_id;
  } catch (e) {
    fail(e);
    return null;
  }
}

/** No thread selected: a run starts a new one. */
function clearThread() {
  S.threadId = null;
  S.threadState = null;
  S.values = null;
  S.live.clear();
  delete document.body.dataset.thread;
  $("thread-label").textContent = "";
  $("events").replaceChildren();
  $("interrupt").hidden = true;
  setHistory([], null);
  renderChat();
}

async function selectThread(threadId) {
  if (S.run && S.run.threadId !== threadId) {
    // Stop showing the other thread's run; it goes on on the server.
    S.run.left = true;
    S.run.abort.abort();
  }
  S.threadId = threadId;
  S.live.clear();
  $("events").replaceChildren();
  $("thread-label").textContent = `thread ${short(threadId)}`;
  for (const li of $("thread-list").children) li.setAttribute("aria-selected", String(li.dataset.thread === threadId));
  await refreshThread();
  if (S.run || S.threadId !== threadId) return;
  const runs = await S.api.listRuns(threadId).catch(() => []);
  const active = (Array.isArray(runs) ? runs : []).find((r) => r.status === "running" || r.status === "pending");
  if (active && S.threadId === threadId && !S.run) joinRun(threadId, active.run_id);
}

async function refreshThread(selectId) {
  if (!S.threadId) return;
  const threadId = S.threadId;
  try {
    const [state, history] = await Promise.all([S.api.threadState(threadId), loadHistory(threadId)]);
    if (threadId !== S.threadId) return;
    S.threadState = state;
    S.values = state ? state.values : null;
    setHistory(history, selectId ?? headId());
    renderChat();
    showInterrupts();
    document.body.dataset.thread = threadId;
  } catch (e) {
    fail(e);
  }
}

function headId() {
  const st = S.threadState;
  if (!st) return null;
  return (st.checkpoint && st.checkpoint.checkpoint_id) || st.checkpoint_id || null;
}

// --- history -------------------------------------------------------------------------

async function loadHistory(threadId) {
  const all = [];
  let before = null;
  while (all.length < HISTORY_MAX) {
    const page = await S.api.history(threadId, HISTORY_PAGE, before);
    if (!Array.isArray(page) || !page.length) break;
    all.push(...page);
    if (page.length < HISTORY_PAGE) break;
    before = cpId(page[page.length - 1]);
    if (!before) break;
  }
  return all;
}

function cpId(s) {
  return (s.checkpoint && s.checkpoint.checkpoint_id) || s.checkpoint_id || null;
}

function normalise(s) {
  const md = s.metadata || {};
  const interrupts = [...(s.interrupts || [])];
  for (const t of s.tasks || []) for (const i of t.interrupts || []) if (!interrupts.some((x) => x.id && x.id === i.id)) interrupts.push(i);
  return {
    id: cpId(s),
    parent: (s.parent_checkpoint && s.parent_checkpoint.checkpoint_id) || s.parent_checkpoint_id || null,
    step: md.step,
    source: md.source,
    next: s.next || [],
    tasks: s.tasks || [],
    values: s.values,
    created: s.created_at,
    interrupts,
    raw: s,
  };
}

function setHistory(raw, selectId) {
  S.history = raw.map(normalise);
  S.byId = new Map(S.history.map((c) => [c.id, c]));
  const children = new Map();
  for (const c of S.history) {
    if (!c.parent) continue;
    if (!children.has(c.parent)) children.set(c.parent, []);
    children.get(c.parent).push(c.id);
  }
  const onHead = new Set();
  for (let id = headId(); id && !onHead.has(id); id = S.byId.get(id)?.parent) onHead.add(id);
  for (const c of S.history) {
    c.current = onHead.size === 0 || onHead.has(c.id);
    c.forked = (children.get(c.parent) || []).length > 1;
  }
  $("history-count").textContent = `${S.history.length} checkpoint${S.history.length === 1 ? "" : "s"}`;
  const idx = Math.max(0, S.history.findIndex((c) => c.id === selectId));
  historyList.setItems(S.history);
  if (S.history.length) historyList.select(idx, true);
  else showCheckpoint(-1);
}

function writesOf(c) {
  const out = [];
  for (const t of c.tasks) {
    if (t.interrupts && t.interrupts.length) out.push(`${t.name}: interrupted`);
    else if (t.error) out.push(`${t.name}: error`);
    else if (t.result && typeof t.result === "object") out.push(`${t.name}: ${Object.keys(t.result).join(", ") || "(nothing)"}`);
    else if (t.result !== undefined && t.result !== null) out.push(`${t.name}: ${JSON.stringify(t.result)}`);
  }
  return out.join(" · ");
}

function renderHistoryRow(c, i, selected) {
  const row = h(
    "div",
    {
      class: `cp${c.current ? "" : " off-branch"}${selected ? " selected" : ""}`,
      role: "option",
      "aria-selected": String(selected),
      "data-checkpoint": c.id,
    },
    h("span", { class: "lane", "aria-hidden": "true", text: c.current ? "●" : "○" }),
    h(
      "span",
      { class: "cp-line" },
      h("b", { text: `step ${c.step ?? "?"}` }),
      h("span", { class: "badge", text: c.source || "" }),
      c.forked ? h("span", { class: "badge fork", text: "fork" }) : null,
      c.current ? null : h("span", { class: "badge", text: "other branch" }),
      h("span", { class: "next", text: c.next.length ? `→ ${c.next.join(", ")}` : "→ end" }),
    ),
    h("span", { class: "writes", text: writesOf(c) || " " }),
  );
  return row;
}

const historyList = new VirtualList($("history"), ROW_H, renderHistoryRow, (i) => showCheckpoint(i));

async function showCheckpoint(i) {
  S.selected = i;
  markNext();
  const c = S.history[i];
  const meta = $("cp-meta");
  if (!c) {
    $("cp-title").textContent = "Checkpoint";
    meta.replaceChildren();
    $("cp-state").replaceChildren();
    $("cp-diff").replaceChildren();
    return;
  }
  $("cp-title").textContent = `Step ${c.step ?? "?"} · ${c.source || ""}`;
  meta.replaceChildren(
    h("div", {}, "checkpoint ", h("code", { text: c.id })),
    h("div", {}, "parent ", h("code", { text: c.parent || "none" })),
    h("div", { text: `next: ${c.next.join(", ") || "(end)"}${c.created ? ` · ${new Date(c.created).toLocaleString()}` : ""}` }),
  );
  for (const t of c.tasks) {
    const box = h("details", { class: "task" }, h("summary", { text: `task ${t.name}${t.error ? " (error)" : ""}${t.interrupts && t.interrupts.length ? " (interrupted)" : ""}` }));
    box.append(tree(t.result ?? t.error ?? t.interrupts ?? null, 1));
    meta.append(box);
  }
  $("cp-state").replaceChildren(tree(c.values, 2));
  $("edit-values").value = JSON.stringify(c.values ?? {}, null, 2);
  const diffBox = $("cp-diff");
  diffBox.replaceChildren(h("p", { class: "muted", text: "loading…" }));
  let parent = c.parent ? S.byId.get(c.parent) : null;
  if (c.parent && !parent) {
    try {
      parent = normalise(await S.api.checkpointState(S.threadId, c.parent));
    } catch {
      parent = null;
    }
  }
  if (S.history[S.selected] !== c) return;
  diffBox.replaceChildren(
    h("p", { class: "muted", text: parent ? `from step ${parent.step ?? "?"} (${short(parent.id)})` : "the first checkpoint: against an empty state" }),
    diffView(parent ? parent.values ?? {} : {}, c.values ?? {}),
  );
}

// --- interrupts -----------------------------------------------------------------------

function pendingInterrupts() {
  const st = S.threadState;
  if (!st) return [];
  const out = [];
  const add = (i) => {
    if (!out.some((x) => x.id && x.id === i.id)) out.push(i);
  };
  if (Array.isArray(st.interrupts)) st.interrupts.forEach(add);
  for (const t of st.tasks || []) for (const i of t.interrupts || []) add(i);
  return out;
}

function showInterrupts() {
  const list = pendingInterrupts();
  const form = $("interrupt");
  form.hidden = !list.length;
  const box = $("interrupt-values");
  box.replaceChildren();
  for (const i of list) box.append(tree(i.value, 3));
}

// --- input -----------------------------------------------------------------------------

function inputMode() {
  return document.querySelector('input[name="mode"]:checked')?.value || "json";
}

function setMode(mode) {
  for (const r of document.querySelectorAll('input[name="mode"]')) r.checked = r.value === mode;
  $("input-chat").hidden = mode !== "chat";
  $("input-form").hidden = mode !== "form";
  $("input-json").hidden = mode !== "json";
}

function templateFor(schema, root) {
  const s = resolveRef(schema, root);
  if (s.default !== undefined && s.default !== null) return s.default;
  const types = [s.type, ...(s.anyOf || s.oneOf || []).map((v) => resolveRef(v, root).type)].flat().filter(Boolean);
  if (types.includes("null")) return null;
  if (types.includes("string")) return "";
  if (types.includes("integer") || types.includes("number")) return 0;
  if (types.includes("boolean")) return false;
  if (types.includes("array")) return [];
  if (types.includes("object")) return {};
  return null;
}

function fieldType(schema, root) {
  const s = resolveRef(schema, root);
  const types = [s.type, ...(s.anyOf || s.oneOf || []).map((v) => resolveRef(v, root).type)].flat().filter((t) => t && t !== "null");
  return types.length === 1 ? types[0] : "json";
}

function setupInput() {
  const root = inputSchema();
  const props = (root && root.properties) || {};
  const form = $("input-form");
  form.replaceChildren();
  const template = {};
  for (const [name, schema] of Object.entries(props)) {
    template[name] = templateFor(schema, root);
    const type = fieldType(schema, root);
    const id = `field-${name}`;
    let input;
    if (type === "boolean") input = h("input", { id, type: "checkbox", "data-field": name, "data-type": type });
    else if (type === "integer" || type === "number") input = h("input", { id, type: "number", "data-field": name, "data-type": type });
    else if (type === "string") input = h("input", { id, type: "text", "data-field": name, "data-type": type });
    else input = h("textarea", { id, rows: "1", spellcheck: "false", "data-field": name, "data-type": "json", placeholder: "JSON, or text" });
    form.append(h("label", { for: id }, h("span", { text: name }), input));
  }
  if (!Object.keys(props).length) form.append(h("p", { class: "muted", text: "No input schema: use JSON." }));
  $("input-json").value = JSON.stringify(Object.keys(props).length ? template : {}, null, 2);
  setMode(chatShape() ? "chat" : Object.keys(props).length ? "form" : "json");
}

function readInput() {
  const mode = inputMode();
  if (mode === "chat") {
    const text = $("chat-input").value.trim();
    if (!text) throw new Error("type a message first");
    return { messages: [humanMessage(text)] };
  }
  if (mode === "form") {
    const out = {};
    for (const f of $("input-form").querySelectorAll("[data-field]")) {
      const name = f.dataset.field;
      const type = f.dataset.type;
      if (type === "boolean") {
        if (f.checked) out[name] = true;
      } else if (f.value.trim() === "") {
        continue;
      } else if (type === "integer" || type === "number") out[name] = Number(f.value);
      else if (type === "string") out[name] = f.value;
      else out[name] = parseLoose(f.value);
    }
    return out;
  }
  const text = $("input-json").value.trim();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`the input is not JSON: ${e.message}`);
  }
}

// --- runs ---------------------------------------------------------------------------------

function setRunning(running, text) {
  $("run").disabled = running;
  $("resume").disabled = running;
  $("fork-run").disabled = running;
  $("rerun").disabled = running;
  $("cancel").disabled = !running;
  $("run-status").textContent = text || "";
  $("run-status").classList.toggle("active", running);
}

/**
 * Streams one run: `extra` holds `input`, `command` or `checkpoint_id`.
 * `chatText`: the input is this chat message, in the shape `chatShape()`
 * guessed; a server that rejects it (422 on `messages`) is asked again with
 * the message as a serde enum's `{"Human": text}`, which is then remembered.
 */
async function startRun(extra, chatText) {
  if (!S.assistant) return fail(new Error("pick an assistant first"));
  if (S.run) return fail(new Error("a run is in progress"));
  let threadId = S.threadId;
  if (!threadId) threadId = await newThread();
  if (!threadId) return;
  await follow(threadId, null, async (signal) => {
    for (let m = 0; m < STREAM_MODES.length; m++) {
      const body = { assistant_id: S.assistant.assistant_id, stream_mode: STREAM_MODES[m], stream_subgraphs: true, ...extra };
      try {
        for await (const ev of S.api.streamRun(threadId, body, signal)) onEvent(ev);
        return;
      } catch (e) {
        const graphId = S.assistant.graph_id;
        if (chatText !== undefined && e.status === 422 && /messages/.test(e.detail || "") && !S.chatKeys.has(graphId)) {
          S.chatKeys.set(graphId, "Human");
          extra = { ...extra, input: { messages: [humanMessage(chatText)] } };
          m--;
          continue;
        }
        const modeProblem = (e.status === 422 || e.status === 400) && /stream.?mode|messages-tuple/i.test(e.detail || "");
        if (!modeProblem || m === STREAM_MODES.length - 1) throw e;
      }
    }
  });
}

/** Follows a run someone else started on the thread (the SDK, another tab) while it goes. */
async function joinRun(threadId, runId) {
  if (S.run) return;
  setStatus(`joined run ${short(runId)}, in progress`);
  await follow(threadId, runId, async (signal) => {
    for await (const ev of S.api.joinStream(threadId, runId, signal)) onEvent(ev);
  });
}

/** Shows a run's events as `read(signal)` hands them to `onEvent`, then the thread it left. */
async function follow(threadId, runId, read) {
  const abort = new AbortController();
  S.run = { threadId, runId, abort, cancelled: false, left: false };
  document.body.dataset.run = "running";
  S.live.clear();
  $("events").replaceChildren();
  clearMarks("running", "done", "next");
  setRunning(true, runId ? `run ${short(runId)}` : "starting…");
  $("interrupt").hidden = true;
  let error = null;
  try {
    await read(abort.signal);
  } catch (e) {
    if (!(e && e.name === "AbortError")) error = e;
  }
  const { cancelled, left } = S.run;
  S.run = null;
  clearMarks("running");
  setRunning(false, error ? "failed" : cancelled ? "cancelled" : left ? "" : "done");
  if (error) fail(error);
  else if (!left) setStatus(cancelled ? "run cancelled" : "run finished");
  await refreshThread();
  if (!error && !left && pendingInterrupts().length) $("run-status").textContent = "interrupted";
  await loadThreads().catch(() => {});
  // The thread's state, history and list are the run's outcome now.
  document.body.dataset.run = "idle";
}

function onEvent({ event, data }) {
  logEvent(event, data);
  const [kind, ns] = [event.split("|")[0], event.includes("|") ? event.slice(event.indexOf("|") + 1) : ""];
  switch (kind) {
    case "metadata":
      if (data && data.run_id && S.run) {
        S.run.runId = data.run_id;
        $("run-status").textContent = `run ${short(data.run_id)}`;
        if (S.run.cancelled) cancelRun();
      }
      break;
    case "values":
      if (!ns && data && typeof data === "object") {
        const { __interrupt__: _, ...values } = data;
        S.values = values;
        renderChat();
      }
      break;
    case "updates":
      if (data && typeof data === "object") {
        for (const node of Object.keys(data)) {
          if (node === "__interrupt__") $("run-status").textContent = "interrupted";
          else markNode(node, ns, "done");
        }
      }
      break;
    case "tasks":
      if (data && data.name) {
        const finished = "result" in data || "error" in data || "interrupts" in data;
        markNode(data.name, ns, finished ? "done" : "running");
        if (!finished) $("run-status").textContent = `running ${data.name}`;
      }
      break;
    case "messages": {
      // messages-tuple: [chunk, metadata]
      const [chunk, meta] = Array.isArray(data) ? data : [data, {}];
      if (!chunk) break;
      const id = chunk.id || `${meta?.langgraph_node}-${meta?.langgraph_step}`;
      const live = S.live.get(id) || { text: "", node: meta?.langgraph_node };
      live.text += contentText(chunk.content ?? chunk.text ?? (typeof chunk === "string" ? chunk : ""));
      S.live.set(id, live);
      renderChat();
      break;
    }
    case "messages/partial":
    case "messages/complete":
      for (const m of Array.isArray(data) ? data : []) {
        if (!m || !m.id) continue;
        S.live.set(m.id, { text: contentText(m.content), node: m.type === "ai" ? "ai" : m.type });
      }
      renderChat();
      break;
    case "error":
      setStatus(`run error: ${typeof data === "string" ? data : data?.message || JSON.stringify(data)}`, true);
      break;
    default:
      break;
  }
}

async function cancelRun() {
  const run = S.run;
  if (!run) return;
  run.cancelled = true;
  // Before the run's metadata event there is no run id yet: the event cancels.
  if (!run.runId) return;
  try {
    await S.api.cancelRun(run.threadId, run.runId);
  } catch (e) {
    fail(e);
  }
  // The server ends the stream when the run stops; stop reading in any case.
  setTimeout(() => run.abort.abort(), 2000);
}

// --- editing and forking ---------------------------------------------------------------

async function fork(run) {
  const c = S.history[S.selected];
  if (!c) return fail(new Error("select a checkpoint first"));
  let edited;
  try {
    edited = JSON.parse($("edit-values").value);
  } catch (e) {
    return fail(new Error(`the state is not JSON: ${e.message}`));
  }
  const changed = {};
  for (const [k, v] of Object.entries(edited || {})) {
    if (JSON.stringify(v) !== JSON.stringify((c.values || {})[k])) changed[k] = v;
  }
  document.body.dataset.run = "running";
  try {
    const res = await S.api.updateState(S.threadId, changed, c.id, $("edit-as-node").value || undefined);
    const id = (res && res.checkpoint && res.checkpoint.checkpoint_id) || res?.checkpoint_id || res?.configurable?.checkpoint_id;
    setStatus(`forked from step ${c.step}: checkpoint ${short(id)}`);
    if (run) await startRun({ input: null, checkpoint_id: id });
    else await refreshThread(id);
  } catch (e) {
    fail(e);
  }
  document.body.dataset.run = "idle";
}

// --- tabs and keys -------------------------------------------------------------------------

function setupTabs(ids) {
  const tabs = ids.map($);
  const activate = (tab, focus) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
    if (focus) tab.focus();
  };
  tabs.forEach((t, i) => {
    t.type = "button";
    t.addEventListener("click", () => activate(t, false));
    t.addEventListener("keydown", (e) => {
      const d = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (d) activate(tabs[(i + d + tabs.length) % tabs.length], true);
    });
  });
}

function threadKeys(e) {
  const items = [...$("thread-list").querySelectorAll("[data-thread]")];
  if (!items.length) return;
  let i = items.findIndex((li) => li.getAttribute("aria-selected") === "true");
  if (e.key === "ArrowDown") i = Math.min(items.length - 1, i + 1);
  else if (e.key === "ArrowUp") i = Math.max(0, i - 1);
  else if (e.key === "Home") i = 0;
  else if (e.key === "End") i = items.length - 1;
  else return;
  e.preventDefault();
  $("thread-list").setAttribute("aria-activedescendant", items[i].id);
  items[i].scrollIntoView({ block: "nearest" });
  selectThread(items[i].dataset.thread);
}

// --- start -----------------------------------------------------------------------------------

function defaultBase() {
  const q = new URLSearchParams(location.search).get("api");
  if (q) return q;
  const saved = localStorage.getItem("studio.base");
  if (saved) return saved;
  // Served by graph-server at /studio: the API is at the same origin.
  if (location.protocol.startsWith("http") && /\/studio\/?/.test(location.pathname)) return location.origin;
  return "http://127.0.0.1:2024";
}

function init() {
  $("base-url").value = defaultBase();
  $("token").value = sessionStorage.getItem("studio.token") || "";
  setupTabs(["tab-chat", "tab-events"]);
  setupTabs(["tab-state", "tab-diff", "tab-edit"]);
  $("connect").addEventListener("click", connect);
  $("base-url").addEventListener("keydown", (e) => e.key === "Enter" && connect());
  $("assistant").addEventListener("change", selectAssistant);
  $("xray").addEventListener("change", () => loadGraph().catch(fail));
  $("new-thread").addEventListener("click", newThread);
  let searchTimer = 0;
  $("thread-search").addEventListener("input", () => {
    renderThreads();
    // Then from the server again: threads created elsewhere since show up too.
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => loadThreads().catch(fail), 250);
  });
  $("thread-status").addEventListener("change", () => loadThreads().catch(fail));
  $("thread-mine").addEventListener("change", () => loadThreads().catch(fail));
  $("thread-list").addEventListener("keydown", threadKeys);
  for (const r of document.querySelectorAll('input[name="mode"]')) r.addEventListener("change", () => setMode(r.value));
  $("run-form").addEventListener("submit", (e) => {
    e.preventDefault();
    let input;
    try {
      input = readInput();
    } catch (err) {
      return fail(err);
    }
    const chatText = inputMode() === "chat" ? $("chat-input").value.trim() : undefined;
    if (chatText !== undefined) $("chat-input").value = "";
    startRun({ input }, chatText);
  });
  $("cancel").addEventListener("click", cancelRun);
  $("interrupt").addEventListener("submit", (e) => {
    e.preventDefault();
    startRun({ input: null, command: { resume: parseLoose($("resume-value").value) } });
  });
  $("cp-edit").addEventListener("submit", (e) => {
    e.preventDefault();
    fork(true);
  });
  $("fork-only").addEventListener("click", () => fork(false));
  $("rerun").addEventListener("click", () => {
    const c = S.history[S.selected];
    if (c) startRun({ input: null, checkpoint_id: c.id });
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea, select")) return;
    if (e.key === "n" && !e.ctrlKey && !e.metaKey) newThread();
    if (e.key === "Escape" && S.run) cancelRun();
  });
  connect();
}

init();
