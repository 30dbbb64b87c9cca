"""Python LangGraph side of the workloads only stategraph's bench defines.

The Python anchor that bench/compare.sh runs implements LangGraph's benchmark
workloads; this script implements the ones added since, with the same
harness rules and output format, so that bench/compare.sh can put both sides of
every workload in one table.

Requires: pip install langgraph==1.2.22 langgraph-checkpoint-sqlite==3.1.2 numpy
    sqlite-vec (and pysqlite3-binary where Python's sqlite3 cannot load extensions)

Usage:
    python3 bench/anchor.py --list
    python3 bench/anchor.py --only chain_10000_ckpt_sqlite [--quick]

Output: one JSON object per line on stdout:
    {"workload", "median_ms", "min_ms", "max_ms", "runs", "check",
     "peak_rss_kb", "base_rss_kb"}
"""

import argparse
import atexit
import gc
import json
import os
import re
import resource
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid

from typing_extensions import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

RECURSION_LIMIT = 1_000_000_000
DEFAULT_RUNS = 5
LONG_RUN_S = 10.0


def scratch_dir(prefix: str) -> str:
    """A new directory for a run's databases, removed when the process exits."""
    directory = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class CheckError(Exception):
    pass


def expect(cond: bool, msg: str) -> None:
    if not cond:
        raise CheckError(msg)


# chain_<n> and chain_<n>_ckpt_{memory,sqlite} ---------------------------------
# A chain of n nodes, node i writing `step = i + 1`; with a saver, durability
# "sync" (a checkpoint per superstep). Checks: the final state; with a saver,
# n + 2 checkpoints (input, __start__, one per node).


class Chain(TypedDict):
    name: str
    step: int


def make_chain(n: int, saver: str | None):
    builder = StateGraph(Chain)
    for i in range(n):
        builder.add_node(f"node_{i}", lambda _s, _i=i: {"step": _i + 1})
    builder.add_edge(START, "node_0")
    for i in range(1, n):
        builder.add_edge(f"node_{i - 1}", f"node_{i}")
    builder.add_edge(f"node_{n - 1}", END)
    checkpointer = None
    if saver == "memory":
        checkpointer = InMemorySaver()
    elif saver == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = os.path.join(scratch_dir("stategraph-anchor-"), "chain.db")
        conn = sqlite3.connect(path, check_same_thread=False)
        checkpointer = SqliteSaver(conn)
    graph = builder.compile(checkpointer=checkpointer)

    def run_once():
        config = {
            "configurable": {"thread_id": str(uuid.uuid4())},
            "recursion_limit": RECURSION_LIMIT,
        }
        kwargs = {"durability": "sync"} if checkpointer is not None else {}
        out = graph.invoke({"name": "chain"}, config, **kwargs)
        return out, config

    def check(result):
        out, config = result
        expect(out == {"name": "chain", "step": n}, f"final state {out}")
        if checkpointer is not None:
            history = list(graph.get_state_history(config))
            expect(len(history) == n + 2, f"{len(history)} checkpoints, expected {n + 2}")

    return run_once, check


# functional_{tasks,fanout}_<n>[_ckpt_memory] ----------------------------------
# The Functional API: an entrypoint awaiting n tasks one after another
# ("tasks"), or calling n tasks and then awaiting them all ("fanout"); each task
# returns its argument plus one. With a saver, durability "sync" (each task's
# result stored as it finishes). Check: the sum.


def make_functional(n: int, parallel: bool, saver: bool):
    from langgraph.func import entrypoint, task

    @task
    def add_one(i: int) -> int:
        return i + 1

    checkpointer = InMemorySaver() if saver else None

    @entrypoint(checkpointer=checkpointer)
    def workflow(count: int) -> int:
        if parallel:
            calls = [add_one(i) for i in range(count)]
            return sum(c.result() for c in calls)
        total = 0
        for i in range(count):
            total += add_one(i).result()
        return total

    def run_once():
        config = {
            "configurable": {"thread_id": str(uuid.uuid4())},
            "recursion_limit": RECURSION_LIMIT,
        }
        kwargs = {"durability": "sync"} if saver else {}
        return workflow.invoke(n, config, **kwargs)

    def check(out):
        expect(out == n * (n + 1) // 2, f"sum {out}")

    return run_once, check


# invoke_2000 and invoke_2000_ckpt ----------------------------------------------
# interrupt_resume_1000's graph (the shared anchor's) without its interrupt:
# "ask" writes {"reply": "a"} at once, "done" copies it to "answer". 2000
# invocations (as many as interrupt_resume_1000 has), each on a new thread:
# without a saver, and with InMemorySaver (durability "exit"). Check: every
# result is {"reply": "a", "answer": "a"}.

INVOCATIONS = 2000


def make_invoke(saver: bool):
    class Ask(TypedDict, total=False):
        reply: str
        answer: str

    builder = StateGraph(Ask)
    builder.add_node("ask", lambda _s: {"reply": "a"})
    builder.add_node("done", lambda s: {"answer": s["reply"]})
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "done")
    builder.add_edge("done", END)
    graph = builder.compile(checkpointer=InMemorySaver() if saver else None)
    kwargs = {"durability": "exit"} if saver else {}

    def run_once():
        bad = []
        for k in range(INVOCATIONS):
            config = {
                "configurable": {"thread_id": str(uuid.uuid4())},
                "recursion_limit": RECURSION_LIMIT,
            }
            out = graph.invoke({}, config, **kwargs)
            if out != {"reply": "a", "answer": "a"}:
                bad.append(f"invocation {k}: {out!r}")
        return bad

    def check(bad):
        expect(not bad, f"{len(bad)} wrong results, first: {bad[:1]}")

    return run_once, check


# store_put_10k_memory and store_search_10k_memory -------------------------------
# LangGraph's InMemoryStore with an index of 64 dimensions over `text` (numpy
# installed, as LangGraph recommends: it computes the cosine similarities). The
# data, as bench/src/workloads/store.rs: item i is key f"item-{i}" in
# ("bench", "items") with {"text": f"item {i}", "group": i % 10, "rank": i};
# text f"item {i}" embeds to the vector of seed i, f"query {k}" to that of seed
# 100000 + k, component j of seed s being ((s * 7919 + j * 104729) % 10007) /
# 10007 - 0.5; the embedder looks vectors up. Search k (0..100): query
# f"query {k}", filter {"group": k % 10}, limit 10, under ("bench",). A put
# run's inputs, a fresh store, the keys and the values, are built before its
# timing starts (store_put_inputs; the Rust side builds the same): the run is
# the 10 000 puts alone. InMemoryStore.put copies each value (dict(value)).

STORE_ITEMS = 10_000
STORE_QUERIES = 100
STORE_DIMS = 64


def store_vector(seed: int) -> list[float]:
    return [((seed * 7919 + j * 104729) % 10007) / 10007 - 0.5 for j in range(STORE_DIMS)]


def store_table() -> dict:
    table = {f"item {i}": store_vector(i) for i in range(STORE_ITEMS)}
    table.update({f"query {k}": store_vector(100_000 + k) for k in range(STORE_QUERIES)})
    return table


def new_store(table: dict):
    from langgraph.store.memory import InMemoryStore

    def embed(texts: list[str]) -> list[list[float]]:
        return [table[t] for t in texts]

    return InMemoryStore(index={"dims": STORE_DIMS, "embed": embed, "fields": ["text"]})


def fill_store(store) -> None:
    ns = ("bench", "items")
    for i in range(STORE_ITEMS):
        store.put(ns, f"item-{i}", {"text": f"item {i}", "group": i % 10, "rank": i})


def store_put_inputs(table: dict):
    """One run's inputs of store_put_10k_memory: a fresh store, the keys and
    the values (built before timing, as bench/src/workloads/store.rs does)."""
    keys = [f"item-{i}" for i in range(STORE_ITEMS)]
    values = [{"text": f"item {i}", "group": i % 10, "rank": i} for i in range(STORE_ITEMS)]
    return new_store(table), keys, values


def make_store_put():
    table = store_table()

    def prepare():
        return store_put_inputs(table)

    def run_once(inputs):
        store, keys, values = inputs
        ns = ("bench", "items")
        for key, value in zip(keys, values):
            store.put(ns, key, value)
        return store

    def check(store):
        n = len(store._data[("bench", "items")])
        expect(n == STORE_ITEMS, f"{n} items")

    return prepare, run_once, check


def make_store_search():
    import math

    table = store_table()
    store = new_store(table)
    fill_store(store)

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b)) / (
            math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
        )

    best = []
    for k in range(STORE_QUERIES):
        q = store_vector(100_000 + k)
        i = max((i for i in range(STORE_ITEMS) if i % 10 == k % 10), key=lambda i: cos(q, store_vector(i)))
        best.append(f"item-{i}")

    def run_once():
        return [
            store.search(("bench",), query=f"query {k}", filter={"group": k % 10}, limit=10)
            for k in range(STORE_QUERIES)
        ]

    def check(results):
        expect(len(results) == STORE_QUERIES, f"{len(results)} searches")
        for k, found in enumerate(results):
            expect(len(found) == 10, f"search {k}: {len(found)} items")
            expect(found[0].key == best[k], f"search {k}: best {found[0].key} expected {best[k]}")
            expect(all(i.value["group"] == k % 10 for i in found), f"search {k}: outside the filter")
            expect(
                all(a.score >= b.score for a, b in zip(found, found[1:])), f"search {k}: order"
            )

    return run_once, check


# store_put_10k_sqlite and store_search_10k_sqlite -----------------------------
# 10 000 items ({"text", "kind", "n"}) with 64-dimension vectors: put one at a
# time into a fresh SqliteStore on a file, or searched
# 100 times with a query and the filter {"kind": "fact"}, 10 results each. The
# embedding model looks precomputed vectors up (the same LCG numbers as the Rust
# side), so the store is what is measured.

SQLITE_ITEMS = 10_000
SQLITE_DIMS = 64
SQLITE_QUERIES = 100
SQLITE_KINDS = ["note", "fact", "todo", "quote"]


def sqlite_store_vectors(count: int, seed: int) -> list[list[float]]:
    s = seed
    out = []
    for _ in range(count):
        v = []
        for _ in range(SQLITE_DIMS):
            s = (s * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
            v.append((s >> 40) / float(1 << 24) - 0.5)
        out.append(v)
    return out


def sqlite_store_text(i: int) -> str:
    return f"document {i} about topic {i % 97}"


def sqlite_store_item(i: int) -> dict:
    return {"text": sqlite_store_text(i), "kind": SQLITE_KINDS[i % len(SQLITE_KINDS)], "n": i}


def make_sqlite_store_factory(backend: str):
    table = dict(zip((sqlite_store_text(i) for i in range(SQLITE_ITEMS)), sqlite_store_vectors(SQLITE_ITEMS, 1)))
    table.update(zip((f"query {q}" for q in range(SQLITE_QUERIES)), sqlite_store_vectors(SQLITE_QUERIES, 2)))

    def embed(texts: list[str]) -> list[list[float]]:
        return [table[t] for t in texts]

    index = {"dims": SQLITE_DIMS, "embed": embed, "fields": ["text"], "text_fields": ["text"]}
    directory = scratch_dir("stategraph-anchor-store-")
    runs = [0]

    def open_store():
        import sqlite3 as stdlib_sqlite3

        if not hasattr(stdlib_sqlite3.connect(":memory:"), "enable_load_extension"):
            import pysqlite3

            sys.modules["sqlite3"] = pysqlite3
        from langgraph.store.sqlite import SqliteStore

        runs[0] += 1
        conn = sys.modules["sqlite3"].connect(
            os.path.join(directory, f"store-{runs[0]}.db"),
            check_same_thread=False,
            isolation_level=None,
        )
        store = SqliteStore(conn, index=index)
        store.setup()
        return store

    return open_store


def make_sqlite_store_put(backend: str):
    open_store = make_sqlite_store_factory(backend)
    ns = ("bench", "docs")
    values = [sqlite_store_item(i) for i in range(SQLITE_ITEMS)]

    def run_once():
        store = open_store()
        for i, value in enumerate(values):
            store.put(ns, f"doc-{i}", value)
        return store

    def check(store):
        found = store.search(ns, limit=SQLITE_ITEMS + 1)
        expect(len(found) == SQLITE_ITEMS, f"{len(found)} items")
        last = store.get(ns, f"doc-{SQLITE_ITEMS - 1}")
        expect(last is not None and last.value == sqlite_store_item(SQLITE_ITEMS - 1), "the last item")

    return run_once, check


def make_sqlite_store_search(backend: str):
    store = make_sqlite_store_factory(backend)()
    ns = ("bench", "docs")
    for i in range(SQLITE_ITEMS):
        store.put(ns, f"doc-{i}", sqlite_store_item(i))

    def run_once():
        return [
            store.search(ns, query=f"query {q}", filter={"kind": "fact"}, limit=10)
            for q in range(SQLITE_QUERIES)
        ]

    def check(results):
        expect(len(results) == SQLITE_QUERIES, f"{len(results)} searches")
        for found in results:
            expect(len(found) == 10, f"{len(found)} results")
            expect(all(i.value["kind"] == "fact" for i in found), "an item outside the filter")
            scores = [i.score for i in found]
            expect(all(a >= b for a, b in zip(scores, scores[1:])), f"scores {scores}")

    return run_once, check


# chat_<n>_turns_sync_{memory,sqlite} ------------------------------------------
# One thread, n invokes, each adding a user message and the assistant's answer
# (~400 bytes each) to MessagesState (add_messages), durability "sync"; a fresh
# saver per run. As bench/src/workloads/chat.rs. Checks: 2n messages in order,
# 3n checkpoints (input, __start__'s step, the assistant's step per turn),
# get_state and a checkpoint from the middle of the thread.

CHAT_FILLER = "the quick brown fox jumps over the lazy dog. "


def chat_text(side: str, turn: int) -> str:
    s = f"{side} turn {turn}: "
    while len(s) < 400:
        s += CHAT_FILLER
    return s[:400]


def make_chat(turns: int, saver: str):
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    def assistant(state):
        turn = len(state["messages"]) // 2
        return {"messages": [AIMessage(content=chat_text("assistant", turn))]}

    builder = StateGraph(MessagesState)
    builder.add_node("assistant", assistant)
    builder.add_edge(START, "assistant")
    builder.add_edge("assistant", END)
    inputs = [chat_text("user", i) for i in range(turns)]
    directory = scratch_dir("stategraph-anchor-chat-")
    runs = [0]

    def run_once():
        runs[0] += 1
        if saver == "memory":
            checkpointer = InMemorySaver()
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            path = os.path.join(directory, f"chat-{runs[0]}.db")
            conn = sqlite3.connect(path, check_same_thread=False)
            checkpointer = SqliteSaver(conn)
        graph = builder.compile(checkpointer=checkpointer)
        config = {"configurable": {"thread_id": f"chat-{runs[0]}"}}
        out = None
        for text in inputs:
            out = graph.invoke({"messages": [HumanMessage(content=text)]}, config, durability="sync")
        return graph, config, out

    def check(result):
        graph, config, out = result
        m = out["messages"]
        expect(len(m) == 2 * turns, f"{len(m)} messages")
        for i in range(turns):
            expect(m[2 * i].content == chat_text("user", i), f"turn {i}: user")
            expect(m[2 * i + 1].content == chat_text("assistant", i), f"turn {i}: assistant")
        history = list(graph.get_state_history(config))
        expect(len(history) == 3 * turns, f"{len(history)} checkpoints, expected {3 * turns}")
        expect(graph.get_state(config).values["messages"] == m, "get_state")
        middle = graph.get_state(history[len(history) // 2].config).values["messages"]
        expect(len(middle) > 0 and middle == m[: len(middle)], "the middle checkpoint")

    return run_once, check


def sized(name: str):
    """The workloads of other sizes: chat_<n>_turns_sync_{memory,sqlite}."""
    found = re.fullmatch(r"chat_([1-9][0-9]*)_turns_sync_(memory|sqlite)", name)
    if found:
        return lambda: make_chat(int(found.group(1)), found.group(2))
    return None


WORKLOADS = {
    "invoke_2000": lambda: make_invoke(False),
    "invoke_2000_ckpt": lambda: make_invoke(True),
    "functional_tasks_1000": lambda: make_functional(1000, False, False),
    "functional_tasks_1000_ckpt_memory": lambda: make_functional(1000, False, True),
    "functional_fanout_1000": lambda: make_functional(1000, True, False),
    "functional_fanout_1000_ckpt_memory": lambda: make_functional(1000, True, True),
    "store_put_10k_memory": make_store_put,
    "store_search_10k_memory": make_store_search,
    "store_put_10k_sqlite": lambda: make_sqlite_store_put("sqlite"),
    "store_search_10k_sqlite": lambda: make_sqlite_store_search("sqlite"),
    "chain_10000": lambda: make_chain(10_000, None),
    "chain_10000_ckpt_memory": lambda: make_chain(10_000, "memory"),
    "chain_10000_ckpt_sqlite": lambda: make_chain(10_000, "sqlite"),
    "chat_1000_turns_sync_memory": lambda: make_chat(1000, "memory"),
    "chat_1000_turns_sync_sqlite": lambda: make_chat(1000, "sqlite"),
}


def measure(name: str, quick: bool) -> dict:
    # build + compile: not timed. A workload whose runs consume inputs returns
    # (prepare, run_once, check): prepare builds one run's inputs, untimed,
    # just before that run (harness rule 1; bench/src/harness.rs does the same).
    parts = (WORKLOADS.get(name) or sized(name))()
    if not isinstance(parts, tuple) or len(parts) not in (2, 3):
        raise TypeError(
            f"{name}: its factory returned {parts!r}, "
            "not (run_once, check) or (prepare, run_once, check)"
        )
    prepare, run_once, check = parts if len(parts) == 3 else (None, *parts)
    gc.collect()
    base_rss = rss_kb()
    times: list[float] = []
    failures: list[str] = []
    target = 1 if quick else DEFAULT_RUNS
    i = 0
    while i < target:
        if prepare is None:
            t0 = time.perf_counter_ns()
            out = run_once()
            dt_ms = (time.perf_counter_ns() - t0) / 1e6
        else:
            inputs = prepare()
            t0 = time.perf_counter_ns()
            out = run_once(inputs)
            dt_ms = (time.perf_counter_ns() - t0) / 1e6
            del inputs
        times.append(dt_ms)
        try:
            check(out)
        except CheckError as e:
            failures.append(f"run {i}: {e}")
            print(f"FAIL {name} run {i}: {e}", file=sys.stderr, flush=True)
        del out
        if i == 0 and not quick and dt_ms > LONG_RUN_S * 1000:
            target = 1 if dt_ms > 6 * LONG_RUN_S * 1000 else 3
        i += 1
    return {
        "workload": name,
        "median_ms": round(statistics.median(times), 3),
        "min_ms": round(min(times), 3),
        "max_ms": round(max(times), 3),
        "runs": len(times),
        "check": "ok" if not failures else "FAIL: " + "; ".join(failures),
        "peak_rss_kb": rss_kb(),
        "base_rss_kb": base_rss,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(WORKLOADS))
        return 0
    names = [n for o in args.only for n in o.split(",") if n] or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS and sized(n) is None]
    if unknown:
        print(f"unknown workload(s): {unknown}; known: {list(WORKLOADS)}", file=sys.stderr)
        return 2
    rc = 0
    for name in names:
        res = measure(name, args.quick)
        print(json.dumps(res), flush=True)
        rc = rc or (0 if res["check"] == "ok" else 1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
