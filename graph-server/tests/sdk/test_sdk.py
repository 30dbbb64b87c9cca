"""Drives a LangGraph Server API with the official `langgraph-sdk` client.

Usage: python3 test_sdk.py URL. Runs against our server (run.sh) and, for
comparison, against LangGraph's own (`langgraph dev` in this directory, with
graphs.py). Each check prints its name; the first failure exits non-zero.
"""
import asyncio
import operator
import sys
import time
import uuid
from typing import Annotated, TypedDict

import httpx
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import NotFoundError, ConflictError, UnprocessableEntityError
from langgraph.graph import START, StateGraph
from langgraph.pregel.remote import RemoteGraph

URL = sys.argv[1]
client = get_sync_client(url=URL)
passed = []


def check(fn):
    fn()
    passed.append(fn.__name__)
    print(f"ok  {fn.__name__}")
    return fn


@check
def assistants():
    found = {a["graph_id"]: a for a in client.assistants.search()}
    assert set(found) >= {"agent", "hitl", "slow"}, found
    # LangGraph's ids: uuid5 of the graph id.
    aid = found["agent"]["assistant_id"]
    assert aid == "fe096781-5601-53d2-b2f6-0d3403f7e9ca", found
    assert client.assistants.get(aid)["graph_id"] == "agent"
    graph = client.assistants.get_graph(aid)
    ids = [n["id"] for n in graph["nodes"]]
    assert ids == ["__start__", "model", "__end__"], graph
    assert {"source": "__start__", "target": "model"} in graph["edges"], graph
    schemas = client.assistants.get_schemas(aid)
    state = schemas["state_schema"]
    assert set(state["properties"]) == {"messages", "count"}, schemas
    # Typed as the state's fields are (LangGraph: from the TypedDict's annotations).
    assert state["properties"]["count"]["type"] == "integer", schemas
    assert state["properties"]["messages"]["type"] == "array", schemas
    try:
        client.assistants.get("00000000-0000-0000-0000-000000000000")
        raise AssertionError("an unknown assistant was found")
    except NotFoundError:
        pass


@check
def chat_turns():
    t = client.threads.create(metadata={"user": "u1"})
    tid = t["thread_id"]
    assert t["status"] == "idle" and t["metadata"] == {"user": "u1"}, t
    out = client.runs.wait(tid, "agent", input={"messages": ["hi"]})
    assert out == {"messages": ["hi", "echo: hi"], "count": 1}, out
    out = client.runs.wait(tid, "agent", input={"messages": ["again"]})
    assert out == {"messages": ["hi", "echo: hi", "again", "echo: again"], "count": 2}, out
    thread = client.threads.get(tid)
    assert thread["status"] == "idle", thread
    assert thread["values"]["count"] == 2, thread
    assert thread["metadata"]["graph_id"] == "agent", thread
    runs = client.runs.list(tid)
    assert [r["status"] for r in runs] == ["success", "success"], runs


def stream(tid, **kw):
    return [(p.event, p.data) for p in client.runs.stream(tid, "agent", **kw)]


@check
def stream_values():
    tid = client.threads.create()["thread_id"]
    parts = stream(tid, input={"messages": ["m"]})
    assert parts[0][0] == "metadata" and "run_id" in parts[0][1], parts
    assert parts[1:] == [
        ("values", {"messages": ["m"], "count": 0}),
        ("values", {"messages": ["m", "echo: m"], "count": 1}),
    ], parts


@check
def stream_updates_custom_messages():
    tid = client.threads.create()["thread_id"]
    parts = stream(tid, input={"messages": ["m"]}, stream_mode=["updates", "custom", "messages-tuple"])
    events = [e for e, _ in parts[1:]]
    assert ("updates", {"model": {"messages": ["echo: m"], "count": 1}}) in parts, parts
    assert ("custom", {"progress": "thinking"}) in parts, parts
    assert events.index("custom") < events.index("updates"), events


@check
def stream_tasks_debug_checkpoints():
    tid = client.threads.create()["thread_id"]
    parts = stream(tid, input={"messages": ["m"]}, stream_mode=["tasks", "debug", "checkpoints"])
    tasks = [d for e, d in parts if e == "tasks"]
    assert tasks[0]["name"] == "model" and "triggers" in tasks[0], tasks
    assert tasks[1]["result"] == {"messages": ["echo: m"], "count": 1}, tasks
    kinds = [d["type"] for e, d in parts if e == "debug"]
    assert kinds == ["checkpoint", "checkpoint", "task", "task_result", "checkpoint"], kinds
    cps = [d for e, d in parts if e == "checkpoints"]
    assert [c["next"] for c in cps] == [["__start__"], ["model"], []], cps
    assert cps[-1]["values"] == {"messages": ["m", "echo: m"], "count": 1}, cps


@check
def interrupt_and_resume():
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "hitl", input={"messages": ["x"]})
    assert out["messages"] == ["x", "echo: x"], out
    assert out["__interrupt__"][0]["value"] == {"question": "ok?"}, out
    state = client.threads.get_state(tid)
    assert state["next"] == ["review"], state
    assert state["interrupts"][0]["value"] == {"question": "ok?"}, state
    assert client.threads.get(tid)["status"] == "interrupted"
    parts = [(p.event, p.data) for p in client.runs.stream(
        tid, "hitl", command={"resume": "yes"}, stream_mode=["updates"])]
    assert ("updates", {"review": {"messages": ["review: yes"]}}) in parts, parts
    state = client.threads.get_state(tid)
    assert state["values"]["messages"][-1] == "review: yes" and state["next"] == [], state
    assert client.threads.get(tid)["status"] == "idle"


@check
def breakpoints():
    tid = client.threads.create()["thread_id"]
    out = client.runs.wait(tid, "agent", input={"messages": ["b"]}, interrupt_before=["model"])
    assert out == {"messages": ["b"], "count": 0}, out
    assert client.threads.get_state(tid)["next"] == ["model"]
    out = client.runs.wait(tid, "agent", input=None)
    assert out["messages"] == ["b", "echo: b"], out


@check
def command_update_and_goto():
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": ["a"]})
    out = client.runs.wait(tid, "agent", command={"update": {"messages": ["cmd"]}, "goto": "model"})
    assert out["messages"] == ["a", "echo: a", "cmd", "echo: cmd"], out


@check
def state_history_and_time_travel():
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, "agent", input={"messages": ["one"]})
    client.runs.wait(tid, "agent", input={"messages": ["two"]})
    history = client.threads.get_history(tid, limit=20)
    assert [h["metadata"]["step"] for h in history] == [4, 3, 2, 1, 0, -1], history
    at = history[3]  # step 1: after the first turn
    state = client.threads.get_state(tid, checkpoint_id=at["checkpoint"]["checkpoint_id"])
    assert state["values"] == {"messages": ["one", "echo: one"], "count": 1}, state
    state = client.threads.get_state(tid, checkpoint=at["checkpoint"])
    assert state["values"]["count"] == 1, state
    # Fork from that checkpoint: a new turn on top of it.
    out = client.runs.wait(tid, "agent", input={"messages": ["fork"]},
                           checkpoint_id=at["checkpoint"]["checkpoint_id"])
    assert out["messages"] == ["one", "echo: one", "fork", "echo: fork"], out
    updated = client.threads.update_state(tid, {"messages": ["manual"]}, as_node="model")
    assert updated["checkpoint"]["checkpoint_id"], updated
    assert client.threads.get_state(tid)["values"]["messages"][-1] == "manual"


@check
def threads_crud():
    team = str(uuid.uuid4())  # the suite may run twice on one server
    tid = client.threads.create(metadata={"team": team})["thread_id"]
    try:
        client.threads.create(thread_id=tid)
        raise AssertionError("a duplicate thread was created")
    except ConflictError:
        pass
    same = client.threads.create(thread_id=tid, if_exists="do_nothing")
    assert same["thread_id"] == tid
    patched = client.threads.update(tid, metadata={"k": "v"})
    assert patched["metadata"] == {"team": team, "k": "v"}, patched
    found = client.threads.search(metadata={"team": team, "k": "v"})
    assert [t["thread_id"] for t in found] == [tid], found
    assert client.threads.count(metadata={"team": team}) == 1
    client.runs.wait(tid, "agent", input={"messages": ["c"]})
    copy = client.threads.copy(tid)
    assert copy["thread_id"] != tid
    assert client.threads.get_state(copy["thread_id"])["values"] == {"messages": ["c", "echo: c"], "count": 1}
    client.threads.delete(tid)
    try:
        client.threads.get(tid)
        raise AssertionError("a deleted thread was found")
    except NotFoundError:
        pass


@check
def background_runs_join_and_join_stream():
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "slow", input={"messages": ["bg"]}, stream_resumable=True)
    assert run["status"] in ("pending", "running"), run
    parts = [(p.event, p.data) for p in client.runs.join_stream(tid, run["run_id"])]
    assert ("values", {"messages": ["bg", "slow: bg"], "count": 1}) in parts, parts
    out = client.runs.join(tid, run["run_id"])
    assert out == {"messages": ["bg", "slow: bg"], "count": 1}, out
    got = client.runs.get(tid, run["run_id"])
    assert got["status"] == "success", got
    try:
        client.runs.get(tid, "00000000-0000-0000-0000-000000000000")
        raise AssertionError("an unknown run was found")
    except NotFoundError:
        pass


@check
def stateless_runs():
    out = client.runs.wait(None, "agent", input={"messages": ["s"]})
    assert out == {"messages": ["s", "echo: s"], "count": 1}, out
    parts = [(p.event, p.data) for p in client.runs.stream(None, "agent", input={"messages": ["s"]})]
    assert parts[-1] == ("values", {"messages": ["s", "echo: s"], "count": 1}), parts


@check
def cancel():
    tid = client.threads.create()["thread_id"]
    run = client.runs.create(tid, "slow", input={"messages": ["c"]})
    client.runs.cancel(tid, run["run_id"], wait=True)
    assert client.runs.get(tid, run["run_id"])["status"] == "interrupted"
    assert client.threads.get(tid)["status"] != "busy"


@check
def multitask_reject_and_enqueue():
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "slow", input={"messages": ["1"]})
    try:
        client.runs.create(tid, "slow", input={"messages": ["2"]}, multitask_strategy="reject")
        raise AssertionError("a run on a busy thread was accepted")
    except ConflictError:
        pass
    second = client.runs.create(tid, "slow", input={"messages": ["2"]}, multitask_strategy="enqueue")
    out = client.runs.join(tid, second["run_id"])
    assert out["messages"] == ["1", "slow: 1", "2", "slow: 2"], out
    assert client.runs.get(tid, first["run_id"])["status"] == "success"


@check
def multitask_interrupt_and_rollback():
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "slow", input={"messages": ["1"]})
    time.sleep(0.1)
    second = client.runs.create(tid, "slow", input={"messages": ["2"]}, multitask_strategy="interrupt")
    out = client.runs.join(tid, second["run_id"])
    assert client.runs.get(tid, first["run_id"])["status"] == "interrupted"
    # What the interrupted run wrote before it stopped (its input, if it had
    # started) stays in the thread.
    assert out["messages"][-2:] == ["2", "slow: 2"] and "slow: 1" not in out["messages"], out

    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "slow", input={"messages": ["1"]})
    time.sleep(0.1)
    second = client.runs.create(tid, "slow", input={"messages": ["2"]}, multitask_strategy="rollback")
    out = client.runs.join(tid, second["run_id"])
    assert out == {"messages": ["2", "slow: 2"], "count": 1}, out
    try:
        client.runs.get(tid, first["run_id"])
        raise AssertionError("a rolled-back run is still there")
    except NotFoundError:
        pass


@check
def bad_input_and_unknown_ids():
    tid = client.threads.create()["thread_id"]
    r = httpx.post(f"{URL}/threads/{tid}/runs/wait",
                   json={"assistant_id": "agent", "input": {}, "stream_mode": "bogus"})
    assert r.status_code == 422, r.text
    r = httpx.post(f"{URL}/threads/00000000-0000-0000-0000-000000000000/runs/wait",
                   json={"assistant_id": "agent", "input": {}})
    assert r.status_code == 404 and "detail" in r.json(), r.text


@check
def remote_graph_as_a_node():
    remote = RemoteGraph("agent", url=URL)

    class Outer(TypedDict):
        messages: Annotated[list, operator.add]
        count: Annotated[int, operator.add]

    outer = StateGraph(Outer).add_node("remote", remote).add_edge(START, "remote").compile()
    out = outer.invoke({"messages": ["via remote"]})
    assert out["messages"] == ["via remote", "via remote", "echo: via remote"] or \
        out["messages"][-1] == "echo: via remote", out


@check
def async_client_streams():
    async def go():
        aclient = get_client(url=URL)
        t = await aclient.threads.create()
        parts = [p async for p in aclient.runs.stream(t["thread_id"], "agent", input={"messages": ["a"]},
                                                      stream_mode="updates")]
        return parts
    parts = asyncio.run(go())
    assert parts[-1].data == {"model": {"messages": ["echo: a"], "count": 1}}, parts


@check
def store_items():
    ns = ["users", str(uuid.uuid4())]
    client.store.put_item(ns, "prefs", {"food": "pizza", "n": 1})
    client.store.put_item(ns, "other", {"food": "salad", "n": 2})
    item = client.store.get_item(ns, "prefs")
    assert item["namespace"] == ns and item["value"] == {"food": "pizza", "n": 1}, item
    assert item["created_at"] and item["updated_at"], item
    found = client.store.search_items(ns, filter={"food": "salad"})
    assert [i["key"] for i in found["items"]] == ["other"], found
    assert [i["key"] for i in client.store.search_items(ns)["items"]] == ["other", "prefs"] or \
        sorted(i["key"] for i in client.store.search_items(ns)["items"]) == ["other", "prefs"]
    spaces = client.store.list_namespaces(prefix=ns)
    assert spaces["namespaces"] == [ns], spaces
    client.store.delete_item(ns, "prefs")
    assert client.store.get_item(ns, "prefs") is None  # LangGraph: 200, null


print(f"sdk suite: {len(passed)} passed, 0 failed")
