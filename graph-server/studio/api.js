// The Studio's client of LangGraph Server's HTTP API: the same paths and bodies
// as the `langgraph-sdk` clients, nothing else. Every request the page makes
// goes through `Api`.

/** A non-2xx answer: the status and the server's `detail` message. */
export class ApiError extends Error {
  constructor(status, detail, path) {
    super(`${status} on ${path}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

export class Api {
  /** `base`: the server's URL (no trailing slash needed); `token`: sent as a bearer token when set. */
  constructor(base, token) {
    this.base = String(base || "").replace(/\/+$/, "");
    this.token = token || "";
  }

  headers(json) {
    const h = { Accept: json ? "application/json" : "text/event-stream" };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  async request(method, path, body) {
    const init = { method, headers: this.headers(true) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(this.base + path, init);
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    if (!res.ok) {
      const detail = data && typeof data === "object" ? data.detail ?? data.message ?? text : text;
      throw new ApiError(res.status, typeof detail === "string" ? detail : JSON.stringify(detail), path);
    }
    return data;
  }

  // --- assistants ---------------------------------------------------------
  searchAssistants() {
    return this.request("POST", "/assistants/search", { limit: 100, offset: 0 });
  }
  graph(assistantId, xray) {
    const q = xray ? "?xray=true" : "";
    return this.request("GET", `/assistants/${encodeURIComponent(assistantId)}/graph${q}`);
  }
  schemas(assistantId) {
    return this.request("GET", `/assistants/${encodeURIComponent(assistantId)}/schemas`);
  }

  // --- threads ------------------------------------------------------------
  createThread(metadata) {
    return this.request("POST", "/threads", { metadata });
  }
  searchThreads({ metadata, status, limit, offset }) {
    const body = { limit: limit ?? 100, offset: offset ?? 0 };
    if (metadata) body.metadata = metadata;
    if (status) body.status = status;
    return this.request("POST", "/threads/search", body);
  }
  threadState(threadId) {
    return this.request("GET", `/threads/${encodeURIComponent(threadId)}/state`);
  }
  checkpointState(threadId, checkpointId) {
    return this.request(
      "GET",
      `/threads/${encodeURIComponent(threadId)}/state/${encodeURIComponent(checkpointId)}`,
    );
  }
  /** One page of the history, newest first; `before` is a checkpoint id. */
  history(threadId, limit, before) {
    const body = { limit };
    if (before) body.before = { configurable: { checkpoint_id: before } };
    return this.request("POST", `/threads/${encodeURIComponent(threadId)}/history`, body);
  }
  /** A new checkpoint from `checkpointId` with `values` applied as `asNode`'s writes. */
  updateState(threadId, values, checkpointId, asNode) {
    const body = { values };
    if (checkpointId) body.checkpoint_id = checkpointId;
    if (asNode) body.as_node = asNode;
    return this.request("POST", `/threads/${encodeURIComponent(threadId)}/state`, body);
  }

  // --- runs ---------------------------------------------------------------
  /** The thread's latest runs, newest first. */
  listRuns(threadId) {
    return this.request("GET", `/threads/${encodeURIComponent(threadId)}/runs?limit=10&offset=0`);
  }
  cancelRun(threadId, runId) {
    return this.request(
      "POST",
      `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/cancel?wait=false&action=interrupt`,
    );
  }

  /**
   * Starts a run on a thread and yields its server-sent events as
   * `{ event, data, id }` (`data` parsed as JSON when it is JSON).
   */
  async *streamRun(threadId, body, signal) {
    const path = `/threads/${encodeURIComponent(threadId)}/runs/stream`;
    const headers = this.headers(false);
    headers["Content-Type"] = "application/json";
    const res = await fetch(this.base + path, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal,
    });
    if (!res.ok || !res.body) {
      const text = await res.text();
      let detail = text;
      try {
        detail = JSON.parse(text).detail ?? text;
      } catch {
        /* not JSON */
      }
      throw new ApiError(res.status, typeof detail === "string" ? detail : JSON.stringify(detail), path);
    }
    yield* parseSse(res.body);
  }
}

/** Joins the stream of a run in progress (started by anyone), as `streamRun` yields. */
Api.prototype.joinStream = async function* joinStream(threadId, runId, signal) {
  const path = `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/stream`;
  const res = await fetch(this.base + path, { headers: this.headers(false), signal });
  if (!res.ok || !res.body) throw new ApiError(res.status, await res.text(), path);
  yield* parseSse(res.body);
};

/** Splits a byte stream into server-sent events. */
export async function* parseSse(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buf += decoder.decode(value, { stream: true });
    let m;
    while ((m = /\r?\n\r?\n/.exec(buf))) {
      const block = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      const ev = parseBlock(block);
      if (ev) yield ev;
    }
    if (done) break;
  }
  const last = parseBlock(buf);
  if (last) yield last;
}

function parseBlock(block) {
  let event = "message";
  let id = null;
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? "" : line.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (!data.length) return null;
  const raw = data.join("\n");
  let parsed = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    /* plain text */
  }
  return { event, data: parsed, id };
}
