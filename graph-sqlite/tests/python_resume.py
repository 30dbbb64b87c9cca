"""Human in the loop across languages, on one SQLite file (run by python_reads_rust.sh).

    python_resume.py resume DB THREAD EXPECTED_INTERRUPT_JSON
        Python resumes a thread that stategraph paused: it sees the same pending
        interrupt (same id, same value), resumes it with True, and finishes the run.
    python_resume.py pause DB THREAD
        Python runs the same graph until `review` asks, for stategraph to resume;
        prints the interrupt as JSON.

The graph mirrors graph-sqlite/examples/python_resume.rs node for node.
"""

import json
import operator
import sqlite3
import sys
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class Post(TypedDict, total=False):
    topic: str
    draft: str
    log: Annotated[list[str], operator.add]


def build(saver: SqliteSaver):
    def draft(p: Post) -> dict:
        return {"draft": f"a post about {p['topic']}", "log": ["drafted"]}

    def review(p: Post) -> dict:
        approved = interrupt({"question": "publish?", "draft": p["draft"]})
        return {"log": ["approved" if approved else "rejected"]}

    g = StateGraph(Post)
    g.add_node("draft", draft)
    g.add_node("review", review)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", END)
    return g.compile(checkpointer=saver)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"python_resume: FAILED: {what}")


def main(argv: list) -> None:
    mode, db, thread = argv[:3]
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    graph = build(saver)
    cfg = {"configurable": {"thread_id": thread}}
    if mode == "resume":
        expected = json.loads(argv[3])
        state = graph.get_state(cfg)
        check(state.next == ("review",), f"paused before finishing review: {state.next}")
        got = [{"id": i.id, "value": i.value} for i in state.interrupts]
        check(got == [expected], f"python sees stategraph's interrupt: {got} != {[expected]}")
        out = graph.invoke(Command(resume=True), cfg)
        check(out["log"] == ["drafted", "approved"], f"python finished the run: {out}")
        check(graph.get_state(cfg).next == (), "nothing left to run")
        print(json.dumps(out["log"]))
    elif mode == "pause":
        out = graph.invoke({"topic": "python", "log": []}, cfg)
        interrupts = out.get("__interrupt__", [])
        check(len(interrupts) == 1, f"python paused once: {out}")
        print(json.dumps({"id": interrupts[0].id, "value": interrupts[0].value}))
    else:
        raise SystemExit(f"python_resume: unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
