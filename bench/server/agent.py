"""The quickstart agent of examples/serve.rs, in Python, for `langgraph dev`
(langgraph.json) in bench/server.sh: the same state, nodes and messages, so
both servers get the same requests and answer the same values.

A message is a one-key dict as serde writes the Rust enum (`{"Human": "What
is 6*7?"}`, `{"ToolCall": {"tool": "calculator", "input": "6*7"}}`,
`{"ToolResult": "42"}`, `{"Ai": "The answer is 42."}`); the model is a
stand-in that asks the calculator for each question, then answers.
"""
import operator
from typing import Annotated, TypedDict

from langgraph.graph import START, StateGraph


class Agent(TypedDict):
    messages: Annotated[list, operator.add]
    model_calls: Annotated[int, operator.add]


async def model(state: Agent):
    last = state["messages"][-1] if state["messages"] else {}
    if "Human" in last:
        question = last["Human"].rstrip("?").rsplit(" ", 1)[-1]
        return {
            "messages": [{"ToolCall": {"tool": "calculator", "input": question}}],
            "model_calls": 1,
        }
    if "ToolResult" in last:
        reply = f"The answer is {last['ToolResult']}."
    else:
        reply = "I have nothing to say."
    return {"messages": [{"Ai": reply}], "model_calls": 1}


async def tools(state: Agent):
    last = state["messages"][-1] if state["messages"] else {}
    call = last.get("ToolCall")
    if call is None:
        return {}
    text = call["input"]
    op = "*" if "*" in text else "+"
    a, b = text.split(op, 1)
    result = int(a) * int(b) if op == "*" else int(a) + int(b)
    return {"messages": [{"ToolResult": str(result)}]}


def route(state: Agent):
    last = state["messages"][-1] if state["messages"] else {}
    return "tools" if "ToolCall" in last else "__end__"


agent = (
    StateGraph(Agent)
    .add_node("model", model)
    .add_node("tools", tools)
    .add_edge(START, "model")
    .add_conditional_edges("model", route, ["tools", "__end__"])
    .add_edge("tools", "model")
    .compile()
)
