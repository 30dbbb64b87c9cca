"""The graphs of examples/sdk_server.rs, in Python: `langgraph dev` serves
these (langgraph.json) so the suite can run against LangGraph's own server."""
import operator
import time
from typing import Annotated, TypedDict

from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt


class S(TypedDict):
    messages: Annotated[list, operator.add]
    count: Annotated[int, operator.add]


def model(s: S):
    get_stream_writer()({"progress": "thinking"})
    last = s["messages"][-1] if s["messages"] else ""
    return {"messages": [f"echo: {last}"], "count": 1}


def review(s: S):
    answer = interrupt({"question": "ok?"})
    return {"messages": [f"review: {answer}"]}


def slow(s: S):
    time.sleep(0.3)
    last = s["messages"][-1] if s["messages"] else ""
    return {"messages": [f"slow: {last}"], "count": 1}


agent = StateGraph(S).add_node("model", model).add_edge(START, "model").compile()
hitl = (
    StateGraph(S)
    .add_node("model", model)
    .add_node("review", review)
    .add_edge(START, "model")
    .add_edge("model", "review")
    .compile()
)
slow_graph = StateGraph(S).add_node("slow", slow).add_edge(START, "slow").compile()
