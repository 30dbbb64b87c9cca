"""LangGraph's Python SqliteSaver against a database written by graph-sqlite.

    python_reads_rust.py DB RUST_EXPECTED.json PYTHON_EXPECTED.json
        Reads every checkpoint graph-sqlite wrote (RUST_EXPECTED.json says what
        they hold), lists and filters them, then runs a graph on a new thread of
        the same database (through the `checkpoints` view) and writes what it
        stored to PYTHON_EXPECTED.json for graph-sqlite to check; finally deletes
        thread rust-2.
    python_reads_rust.py --fixture DB EXPECTED.json
        Reads a copy of fixtures/python_written.sqlite after graph-sqlite opened
        (migrated) it, and checks it still reads as before.

Run by python_reads_rust.sh; exits non-zero on the first difference.
"""

import json
import operator
import os
import sqlite3
import sys
from typing import Annotated, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from make_python_fixture import dump_one  # noqa: E402

CHECKS = 0


def check(cond: bool, what: str) -> None:
    global CHECKS
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    CHECKS += 1


def config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict:
    c = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def check_rows(saver: SqliteSaver, rows: list) -> None:
    for row in rows:
        t = saver.get_tuple(config(row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"]))
        check(t is not None, f"get_tuple finds {row['thread_id']}/{row['checkpoint_ns']}/{row['checkpoint_id']}")
        got = dump_one(t)
        check(got == row, f"checkpoint {row['checkpoint_id']} reads as written:\n python: {got}\n rust:   {row}")
    groups: dict = {}
    for row in rows:
        groups.setdefault((row["thread_id"], row["checkpoint_ns"]), []).append(row["checkpoint_id"])
    for (thread_id, ns), ids in groups.items():
        listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config(thread_id, ns))]
        check(listed == ids, f"list({thread_id}, {ns!r}) is newest first: {listed} != {ids}")
        latest = saver.get_tuple(config(thread_id, ns))
        check(latest is not None and latest.config["configurable"]["checkpoint_id"] == ids[0], f"latest of {thread_id}/{ns!r}")


class State(TypedDict, total=False):
    topic: str
    log: Annotated[list[str], operator.add]


def run_python_graph(saver: SqliteSaver) -> list:
    g = StateGraph(State)
    g.add_node("first", lambda s: {"log": [f"first on {s['topic']}"]})
    g.add_node("second", lambda s: {"log": ["second"]})
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    graph = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "python-2"}}
    out = graph.invoke({"topic": "interop", "log": []}, cfg)
    check(out["log"] == ["first on interop", "second"], f"python graph ran: {out}")
    again = graph.get_state(cfg)
    check(again.values == out, "python reads back its own state from the view")
    return [dump_one(t) for t in saver.list(config("python-2"))]


def main(argv: list) -> None:
    if argv[:1] == ["--fixture"]:
        db, expected_path = argv[1:3]
        with open(expected_path, encoding="utf-8") as f:
            expected = json.load(f)
        saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
        check_rows(saver, expected["review"])
        kinds = [r[0] for r in saver.conn.execute("SELECT type FROM sqlite_master WHERE name = 'checkpoints'")]
        check(kinds == ["view"], f"graph-sqlite migrated the database: {kinds}")
        print(f"python read the migrated fixture: {CHECKS} checks passed")
        return

    db, rust_expected_path, python_expected_path = argv[:3]
    with open(rust_expected_path, encoding="utf-8") as f:
        rows = json.load(f)
    check(len(rows) >= 5, "graph-sqlite wrote several checkpoints")
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    check_rows(saver, rows)

    latest = saver.get_tuple(config("rust-1"))
    values = latest.checkpoint["channel_values"]
    check(len(values["messages"]) == 41, "the message history, put once, is complete in later checkpoints")
    check(values["topic"] == "rust", "a channel unchanged since an earlier checkpoint is present")
    check("scratch" not in values, "an emptied channel has no value")
    check(
        [w[1] for w in latest.pending_writes] == ["__resume__", "messages", "count", "__interrupt__"],
        f"pending writes in LangGraph's order: {latest.pending_writes}",
    )
    alice = list(saver.list(config("rust-1"), filter={"user": "alice"}))
    check(len(alice) == 4, f"metadata filter: {len(alice)}")
    flagged = list(saver.list(None, filter={"flag": True}))
    check(len(flagged) == 1, f"metadata filter on a bool: {len(flagged)}")
    limited = list(saver.list(config("rust-1"), before=config("rust-1", "", rows[1]["checkpoint_id"]), limit=1))
    check(
        [t.config["configurable"]["checkpoint_id"] for t in limited] == [rows[2]["checkpoint_id"]],
        "before + limit",
    )

    written = run_python_graph(saver)
    saver.delete_thread("rust-2")
    check(saver.get_tuple(config("rust-2")) is None, "python deleted rust-2")
    check(
        saver.conn.execute("SELECT count(*) FROM checkpoint_blobs WHERE thread_id = 'rust-2'").fetchone()[0] == 0,
        "deleting through the view removes the thread's blobs",
    )
    with open(python_expected_path, "w", encoding="utf-8") as f:
        json.dump(written, f, ensure_ascii=False)
    print(f"python read graph-sqlite's database: {CHECKS} checks passed")


if __name__ == "__main__":
    main(sys.argv[1:])
