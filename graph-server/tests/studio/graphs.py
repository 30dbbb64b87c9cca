"""The graphs the Studio's browser test drives, for LangGraph's own server
(`langgraph dev`): Python twins of `examples/quickstart.rs` (`agent`) and
`examples/human_in_the_loop.rs` (`human_in_the_loop`), with their state
spelled as serde writes the Rust state (externally tagged enums), so the
test's inputs and checks hold against graph-server serving the Rust examples
too; `slow`, a run that waits a minute, for the Cancel button; and `nested`,
a subgraph as a node, for "expand subgraphs".
"""

import asyncio
import operator
from typing import Annotated, Literal, Optional, Union

from typing_extensions import TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


# --- quickstart: the agent loop ------------------------------------------------

class Human(TypedDict):
    Human: str


class ToolCallBody(TypedDict):
    tool: str
    input: str


class ToolCall(TypedDict):
    ToolCall: ToolCallBody


class ToolResult(TypedDict):
    ToolResult: str


class Ai(TypedDict):
    Ai: str


Message = Union[Human, ToolCall, ToolResult, Ai]


class Agent(TypedDict):
    messages: Annotated[list[Message], operator.add]
    model_calls: Annotated[int, operator.add]


def _say(text: str) -> str:
    """The answer, streamed token by token (`messages` stream mode) by a
    scripted chat model, as a real model's would be."""
    chunks = GenericFakeChatModel(messages=iter([AIMessage(content=text)]))
    return "".join(str(c.content) for c in chunks.stream("answer"))


def model(state: Agent) -> Command[Literal["tools", "__end__"]]:
    last = state["messages"][-1] if state["messages"] else None
    if last and "Human" in last:
        question = last["Human"].rstrip("?").rsplit(" ", 1)[-1]
        return Command(
            goto="tools",
            update={
                "messages": [{"ToolCall": {"tool": "calculator", "input": question}}],
                "model_calls": 1,
            },
        )
    if last and "ToolResult" in last:
        reply = _say(f"The answer is {last['ToolResult']}.")
    else:
        reply = "I have nothing to say."
    return Command(goto=END, update={"messages": [{"Ai": reply}], "model_calls": 1})


def calculator(text: str) -> int:
    for op in "*+":
        if op in text:
            a, b = text.split(op, 1)
            return int(a) * int(b) if op == "*" else int(a) + int(b)
    raise ValueError(f"cannot compute `{text}`: expected `a*b` or `a+b`")


def tools(state: Agent) -> dict:
    last = state["messages"][-1]
    call = last.get("ToolCall") if isinstance(last, dict) else None
    if not call:
        return {}
    return {"messages": [{"ToolResult": str(calculator(call["input"]))}]}


agent = (
    StateGraph(Agent)
    .add_node("model", model)
    .add_node("tools", tools)
    .add_edge(START, "model")
    .add_edge("tools", "model")
    .compile()
)


# --- human in the loop: write, review (interrupt), publish ------------------------

class Post(TypedDict, total=False):
    topic: str
    draft: str
    revisions: Annotated[int, operator.add]
    note: Optional[str]
    published: Optional[str]


def write(post: Post) -> dict:
    draft = f"{post.get('topic', '')}: why the compiler should check your agent graph."
    if post.get("note"):
        draft = f"{draft} (revised: {post['note']})"
    return {"draft": draft, "revisions": 1, "note": None}


def review(post: Post) -> Command[Literal["publish", "write"]]:
    decision = interrupt({"draft": post["draft"], "revision": post.get("revisions", 0)})
    if decision.get("approve"):
        return Command(goto="publish")
    return Command(goto="write", update={"note": decision.get("note")})


def publish(post: Post) -> dict:
    return {"published": f"[published] {post['draft']}"}


review_graph = (
    StateGraph(Post)
    .add_node("write", write)
    .add_node("review", review)
    .add_node("publish", publish)
    .add_edge(START, "write")
    .add_edge("write", "review")
    .add_edge("publish", END)
    .compile()
)


# --- slow: a run that waits, for the Cancel button ----------------------------------

class Slow(TypedDict, total=False):
    started: bool
    finished: bool


def begin(state: Slow) -> dict:
    return {"started": True}


async def wait(state: Slow) -> dict:
    await asyncio.sleep(60)
    return {"finished": True}


slow = (
    StateGraph(Slow)
    .add_node("begin", begin)
    .add_node("wait", wait)
    .add_edge(START, "begin")
    .add_edge("begin", "wait")
    .add_edge("wait", END)
    .compile()
)


# --- nested: a subgraph as a node, for "expand subgraphs" (xray) -----------------

class Research(TypedDict, total=False):
    topic: str
    notes: Annotated[list[str], operator.add]


research = (
    StateGraph(Research)
    .add_node("search", lambda r: {"notes": [f"found: {r.get('topic', '')}"]})
    .add_node("summarize", lambda r: {"notes": ["summary"]})
    .add_edge(START, "search")
    .add_edge("search", "summarize")
    .add_edge("summarize", END)
    .compile()
)

nested = (
    StateGraph(Research)
    .add_node("plan", lambda r: {"notes": ["plan"]})
    .add_node("research", research)
    .add_node("write", lambda r: {"notes": ["written"]})
    .add_edge(START, "plan")
    .add_edge("plan", "research")
    .add_edge("research", "write")
    .add_edge("write", END)
    .compile()
)
