"""End-to-end test of the Studio page in a real Chromium, driven by Playwright.

    python3 studio_test.py --server http://127.0.0.1:2024 [--studio URL]
                           [--screenshots DIR] [--chromium PATH]

`--server` is the API the page talks to: LangGraph's own `langgraph dev`
serving graphs.py, or graph-server serving the quickstart and
human-in-the-loop examples (assistants `agent` and `human_in_the_loop`; the
Cancel and subgraph checks need `slow` and `nested` assistants as in
graphs.py, or `--cancel-assistant ''` / `--subgraph-assistant ''`).
`--studio` is the page's URL; without it the page's files
(graph-server/studio/) are served here by a small static server, and the page
is pointed at `--server` with `?api=`.

It checks, through the page only: the graph is drawn; a chat run of the
agent streams its updates and its answer token by token, highlighting the
nodes it runs; the human-in-the-loop graph pauses at its interrupt, which is
answered twice from the page; a fork from an old checkpoint with an edited
state runs as a new branch, shown next to the old one in the history; a slow
run is cancelled; a subgraph expands and its nodes are lit as they run; a
500-checkpoint history renders only the rows in view and is keyboard
navigable. Screenshots go to `--screenshots`.
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import sys
import threading
import time
import urllib.parse
import urllib.request

from playwright.sync_api import expect, sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.normpath(os.path.join(HERE, "..", "..", "studio"))
TIMEOUT = 20_000


def api(server, method, path, body=None):
    req = urllib.request.Request(
        server.rstrip("/") + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.loads(res.read() or b"null")


def serve_assets():
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=ASSETS)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/index.html"


class Check:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn):
        print(f"-- {name}", flush=True)
        try:
            fn()
            self.passed += 1
            print(f"   ok: {name}", flush=True)
        except Exception as e:  # report every failure, keep going
            self.failed += 1
            print(f"   FAILED: {name}: {e}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="the API's base URL")
    ap.add_argument("--studio", help="the page's URL (default: serve graph-server/studio here)")
    ap.add_argument("--screenshots", default="target/studio-screenshots")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    ap.add_argument("--history-size", type=int, default=500)
    ap.add_argument(
        "--no-tokens",
        dest="tokens",
        action="store_false",
        help="the agent's model streams no message chunks: do not expect `messages` events",
    )
    ap.add_argument(
        "--subgraph-assistant",
        default="nested",
        help="an assistant with a subgraph node `research` of nodes `search` and `summarize`"
        " ('' to leave subgraphs unchecked)",
    )
    ap.add_argument(
        "--cancel-assistant",
        default="slow",
        help="an assistant whose runs take long enough to cancel ('' to leave Cancel unchecked)",
    )
    args = ap.parse_args()
    if not args.chromium:
        sys.exit("no chromium found: apt-get install chromium, or pass --chromium PATH")
    os.makedirs(args.screenshots, exist_ok=True)
    server = args.server.rstrip("/")
    httpd = None
    if args.studio:
        page_url = args.studio
    else:
        httpd, page_url = serve_assets()
    sep = "&" if "?" in page_url else "?"
    page_url = f"{page_url}{sep}api={urllib.parse.quote(server)}"

    check = Check()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(TIMEOUT)
        expect.set_options(timeout=TIMEOUT)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        shot = lambda name: page.screenshot(path=os.path.join(args.screenshots, f"{name}.png"))

        def select_assistant(name):
            page.select_option("#assistant", label=name)
            # the page marks <body> once the graph, input form and threads are this assistant's
            expect(page.locator("body")).to_have_attribute("data-assistant", name)

        def new_thread():
            before = page.get_attribute("body", "data-thread")
            page.click("#new-thread")
            # the page marks <body> with the thread once its state and history are shown
            page.wait_for_function("b => document.body.dataset.thread && document.body.dataset.thread !== b", arg=before)

        def run_finished():
            # set once the run's stream ended and the thread's state and history are reloaded
            expect(page.locator("body")).to_have_attribute("data-run", "idle")

        def open_page():
            page.goto(page_url + "&assistant=agent")
            expect(page.locator("body")).to_have_attribute("data-assistant", "agent")
            expect(page.locator('#graph g[data-node="model"]')).to_have_count(1)
            expect(page.locator('#graph g[data-node="tools"]')).to_have_count(1)
            # model -> tools and model -> END are conditional (Command goto), tools -> model is not
            expect(page.locator('#graph path.edge.conditional[data-source="model"]')).to_have_count(2)
            expect(page.locator('#graph path.edge[data-source="tools"][data-target="model"]')).not_to_have_class("edge conditional")
            shot("01-graph")

        def token():
            page.fill("#token", "studio-test-token")
            with page.expect_request("**/assistants/search") as req:
                page.click("#connect")
            assert req.value.headers.get("authorization") == "Bearer studio-test-token", req.value.headers
            expect(page.locator("body")).to_have_attribute("data-assistant", "agent")
            page.fill("#token", "")
            with page.expect_request("**/assistants/search") as req:
                page.click("#connect")
            assert "authorization" not in req.value.headers, req.value.headers
            expect(page.locator("body")).to_have_attribute("data-assistant", "agent")

        def chat_run():
            new_thread()
            # Records every node the page marks while the run goes, however fast it is.
            page.evaluate(
                """() => {
                  window.__marked = new Set();
                  new MutationObserver((ms) => ms.forEach((m) => {
                    const g = m.target;
                    if (g.classList.contains('running') || g.classList.contains('done')) window.__marked.add(g.dataset.node);
                  })).observe(document.getElementById('graph'), {subtree: true, attributes: true, attributeFilter: ['class']});
                }"""
            )
            page.fill("#chat-input", "What is 6*7?")
            page.press("#chat-input", "Enter")
            expect(page.locator("#chat .msg").last).to_contain_text("The answer is 42.")
            run_finished()
            expect(page.locator("#run-status")).to_have_text("done")
            marked = page.evaluate("() => [...window.__marked]")
            assert "model" in marked and "tools" in marked, f"nodes marked during the run: {marked}"
            page.click("#tab-events")
            events = page.locator("#events li b").all_inner_texts()
            assert "updates" in events, events
            tokens = [e for e in events if e.startswith("messages")]
            if args.tokens:
                # the answer came in pieces: more than one messages event
                assert len(tokens) > 1, f"message events: {len(tokens)} of {events}"
            shot("02-run-events")
            page.click("#tab-chat")
            # input, 3 loop steps: model, tools, model
            expect(page.locator("#history-count")).to_have_text("5 checkpoints")
            shot("02-run")

        def interrupt():
            select_assistant("human_in_the_loop")
            new_thread()
            page.check('input[name="mode"][value="form"]')
            # The state schema types the fields: a text input for `topic: str`,
            # a number input for `revisions: int`.
            expect(page.locator("#field-topic")).to_have_attribute("type", "text")
            expect(page.locator("#field-revisions")).to_have_attribute("type", "number")
            page.fill("#field-topic", "typed graphs")
            page.click("#run")
            run_finished()
            expect(page.locator("#interrupt")).to_be_visible()
            expect(page.locator("#interrupt-values")).to_contain_text("typed graphs: why the compiler should check your agent graph.")
            shot("03-interrupt")
            page.fill("#resume-value", '{"approve": false, "note": "shorter"}')
            page.click("#resume")
            run_finished()
            expect(page.locator("#interrupt-values")).to_contain_text("(revised: shorter)")
            page.fill("#resume-value", '{"approve": true}')
            page.click("#resume")
            run_finished()
            expect(page.locator("#interrupt")).to_be_hidden()
            expect(page.locator("#chat")).to_contain_text("[published] typed graphs: why the compiler should check your agent graph. (revised: shorter)")

        def fork():
            # The first pause for review: step 1, next = review, revision 1.
            row = page.locator("#history .cp", has_text="→ review").last
            row.click()
            expect(page.locator("#cp-state")).to_contain_text("revisions")
            page.click("#tab-diff")
            expect(page.locator("#cp-diff")).to_contain_text("draft")
            page.click("#tab-edit")
            values = json.loads(page.input_value("#edit-values"))
            assert values["revisions"] == 1, values
            values["draft"] = "A forked draft."
            page.fill("#edit-values", json.dumps(values, indent=2))
            page.click("#fork-run")
            run_finished()
            expect(page.locator("#interrupt-values")).to_contain_text("A forked draft.")
            page.fill("#resume-value", '{"approve": true}')
            page.click("#resume")
            run_finished()
            expect(page.locator("#chat")).to_contain_text("[published] A forked draft.")
            # the old branch is still there, shown apart; the fork point is marked
            expect(page.locator("#history .cp.off-branch").first).to_be_attached()
            expect(page.locator("#history .badge.fork").first).to_be_attached()
            page.click("#tab-state")
            shot("04-fork")

        def long_history():
            n = args.history_size
            t = api(server, "POST", "/threads", {"metadata": {"graph_id": "agent"}})
            tid = t["thread_id"]
            started = time.monotonic()
            api(server, "POST", f"/threads/{tid}/state", {"values": {"messages": [{"Human": "What is 1+1?"}]}, "as_node": "tools"})
            for i in range(n - 1):
                api(server, "POST", f"/threads/{tid}/state", {"values": {"model_calls": 1}, "as_node": "tools"})
            print(f"   {n} checkpoints written in {time.monotonic() - started:.1f}s")
            select_assistant("agent")
            page.fill("#thread-search", tid[:13])
            page.locator(f'#thread-list [data-thread="{tid}"]').click()
            expect(page.locator("#history-count")).to_have_text(f"{n} checkpoints")
            rows = page.locator("#history .cp").count()
            assert 0 < rows < 40, f"{rows} rows in the DOM for {n} checkpoints"
            # Scroll through the whole list and time the frames.
            frames = page.evaluate(
                """async () => {
                  const el = document.getElementById('history');
                  const times = [];
                  let last = performance.now();
                  const end = el.scrollHeight - el.clientHeight;
                  for (let y = 0; y <= end; y += 120) {
                    el.scrollTop = y;
                    await new Promise(requestAnimationFrame);
                    const now = performance.now(); times.push(now - last); last = now;
                  }
                  times.sort((a, b) => a - b);
                  return { frames: times.length, p50: times[times.length >> 1], p95: times[Math.floor(times.length * 0.95)], max: times[times.length - 1] };
                }"""
            )
            print(f"   scrolled {n} checkpoints: {frames}")
            rows = page.locator("#history .cp").count()
            assert 0 < rows < 40, f"{rows} rows in the DOM after scrolling"
            page.focus("#history")
            page.keyboard.press("End")
            # the oldest: the first state update, step 0
            expect(page.locator("#history .cp.selected")).to_have_attribute("data-index", str(n - 1))
            expect(page.locator("#history .cp.selected")).to_contain_text("step 0")
            page.keyboard.press("Home")
            page.keyboard.press("ArrowDown")
            expect(page.locator("#history .cp.selected")).to_have_attribute("data-index", "1")
            shot("05-long-history")

        def cancel():
            select_assistant(args.cancel_assistant)
            new_thread()
            page.check('input[name="mode"][value="json"]')
            page.fill("#input-json", "{}")
            page.click("#run")
            expect(page.locator("#cancel")).to_be_enabled()
            # the run is under way: its first node finished, the waiting one started
            expect(page.locator('#graph g[data-node="begin"]')).to_have_class("node done")
            page.click("#cancel")
            run_finished()
            expect(page.locator("#run-status")).to_have_text("cancelled")
            expect(page.locator("#cancel")).to_be_disabled()
            expect(page.locator("#chat")).not_to_contain_text("finished: true")
            shot("06-cancelled")

            # A run started elsewhere (here: over the API, in the background) is
            # joined when its thread is opened, and cancelled from the page.
            t = api(server, "POST", "/threads", {"metadata": {"graph_id": args.cancel_assistant}})
            run = api(server, "POST", f"/threads/{t['thread_id']}/runs", {"assistant_id": args.cancel_assistant, "input": {}})
            page.fill("#thread-search", t["thread_id"][:13])
            page.locator(f'#thread-list [data-thread="{t["thread_id"]}"]').click()
            expect(page.locator("#cancel")).to_be_enabled()
            expect(page.locator("#run-status")).to_have_text(f"run {run['run_id'][:8]}")
            page.click("#cancel")
            run_finished()
            expect(page.locator("#run-status")).to_have_text("cancelled")
            status = api(server, "GET", f"/threads/{t['thread_id']}/runs/{run['run_id']}")["status"]
            assert status in ("interrupted", "error", "cancelled"), status
            page.fill("#thread-search", "")

        def subgraphs():
            select_assistant(args.subgraph_assistant)
            expect(page.locator('#graph g[data-node="research"]')).to_have_count(1)
            page.check("#xray")
            expect(page.locator('#graph g[data-node="research:search"]')).to_have_count(1)
            expect(page.locator('#graph rect.subgraph[data-subgraph="research"]')).to_have_count(1)
            new_thread()
            page.check('input[name="mode"][value="json"]')
            page.fill("#input-json", '{"topic": "graphs"}')
            page.click("#run")
            run_finished()
            expect(page.locator("#run-status")).to_have_text("done")
            # the subgraph's own nodes were marked, from its namespaced events
            done = page.evaluate("() => [...document.querySelectorAll('#graph g.done')].map(g => g.dataset.node)")
            assert "research:search" in done and "research:summarize" in done, done
            expect(page.locator("#chat")).to_contain_text("found: graphs")
            shot("07-subgraph")
            page.uncheck("#xray")
            expect(page.locator('#graph g[data-node="research:search"]')).to_have_count(0)

        check.run("the page loads and draws the agent's graph", open_page)
        check.run("the token field is sent as a bearer token", token)
        check.run("a chat run streams updates and tokens, marking the nodes it runs", chat_run)
        check.run("an interrupt is answered from the page, twice", interrupt)
        check.run("a fork from an old checkpoint runs as a new branch", fork)
        if args.cancel_assistant:
            check.run("a running run is cancelled from the page, and one started elsewhere joined and cancelled", cancel)
        else:
            print("-- cancel: not checked (--cancel-assistant '')")
        if args.subgraph_assistant:
            check.run("subgraphs expand (xray) and their nodes are marked as they run", subgraphs)
        else:
            print("-- subgraphs: not checked (--subgraph-assistant '')")
        check.run(f"a {args.history_size}-checkpoint history is virtualised and keyboard navigable", long_history)
        if errors:
            check.failed += 1
            print(f"   FAILED: errors in the page: {errors}")
        browser.close()
    if httpd:
        httpd.shutdown()
    print(f"studio: {check.passed} passed, {check.failed} failed")
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
