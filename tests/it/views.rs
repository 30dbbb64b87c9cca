//! Private state and node input views (LangGraph's private node schemas and
//! nodes typed with another `TypedDict`): a `#[state(private)]` field is a channel
//! nodes write and read that `invoke` neither takes nor returns, and a `#[node]`
//! taking a `#[derive(Schema)]` struct reads only its fields, projected from the
//! state for each PULL task, or sent as they are by `send` (docs/semantics.md
//! §3.1).
//!
//! The expected values are what LangGraph 1.2.22 prints for the same graphs, in
//! the comments (`from typing_extensions import TypedDict`).

use futures::StreamExt;
use serde::{Deserializer, Serializer};
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::Subgraph;
use std::cell::{Cell, RefCell};

thread_local! {
    // Per test: each runs on its own current-thread runtime, and sync nodes run
    // inline on it.
    static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn saw(what: String) {
    SEEN.with(|s| s.borrow_mut().push(what));
}

fn seen() -> Vec<String> {
    SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

// class OverallState(TypedDict):
//     a: str
// class PrivateState(TypedDict):
//     b: str
#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Overall {
    a: String,
    #[state(private)]
    b: String,
}

// The node's input: only `b`.
#[derive(Schema, Clone, Debug, Serialize, Deserialize)]
#[schema(state = Overall)]
struct PrivateState {
    b: String,
}

// def node1(state: OverallState) -> PrivateState:
//     print("node1 got", state)
//     return {"b": state["a"] + "-private"}
#[node]
fn node1(state: &Overall) -> OverallUpdate {
    saw(format!("node1 got a={:?}", state.a));
    Overall::update().b(format!("{}-private", state.a))
}

// def node2(state: PrivateState) -> OverallState:
//     print("node2 got", state)
//     return {"a": state["b"] + "-done"}
#[node]
fn node2(state: &PrivateState) -> OverallUpdate {
    saw(format!("node2 got b={:?}", state.b));
    Overall::update().a(format!("{}-done", state.b))
}

fn private_graph() -> CompiledGraph<Overall> {
    StateGraph::<Overall>::new()
        .add_node(node1)
        .add_node(node2)
        .add_edge(START, node1)
        .add_edge(node1, node2)
        .add_edge(node2, END)
        .compile_with(InMemorySaver::new())
        .unwrap()
}

// app.invoke({"a": "x"}, cfg)
//   node1 got {'a': 'x'}
//   node2 got {'b': 'x-private'}
//   {'a': 'x-private-done'}
// app.get_state(cfg).values
//   {'a': 'x-private-done', 'b': 'x-private'}
// app.get_input_jsonschema()["properties"], app.get_output_jsonschema()["properties"]
//   ['a'], ['a']
#[tokio::test]
async fn a_private_channel_is_read_by_its_view_and_left_out_of_the_output() {
    assert_eq!(<Overall as stategraph::State>::PRIVATE_FIELDS, ["b"]);
    let app = private_graph();
    let thread = RunConfig::thread("1");
    let out = app
        .invoke(Overall::update().a("x".into()), &thread)
        .await
        .unwrap();
    assert_eq!(seen(), ["node1 got a=\"x\"", "node2 got b=\"x-private\""]);
    // Not returned: the field holds its default value.
    assert_eq!(
        out.state,
        Overall {
            a: "x-private-done".into(),
            b: String::new(),
        }
    );
    // The thread's state has it.
    let snapshot = app.get_state(&thread).await.unwrap();
    assert_eq!(
        snapshot.values,
        Overall {
            a: "x-private-done".into(),
            b: "x-private".into(),
        }
    );
}

// app = g.compile(checkpointer=InMemorySaver(), interrupt_before=["node2"])
// app.invoke({"a": "x"}, cfg)
//   {'a': 'x'}
// app.get_state(cfg).values
//   {'a': 'x', 'b': 'x-private'}
// app.update_state(cfg, {"b": "edited"}); app.get_state(cfg).values
//   {'a': 'x', 'b': 'edited'}
// app.invoke(None, cfg)
//   node2 got {'b': 'edited'}
//   {'a': 'edited-done'}
#[tokio::test]
async fn update_state_writes_a_private_field() {
    let app = StateGraph::<Overall>::new()
        .add_node(node1)
        .add_node(node2)
        .add_edge(START, node1)
        .add_edge(node1, node2)
        .interrupt_before(node2)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let thread = RunConfig::thread("1");
    let out = app
        .invoke(Overall::update().a("x".into()), &thread)
        .await
        .unwrap();
    assert!(out.breakpoint.is_some());
    assert_eq!(
        out.state,
        Overall {
            a: "x".into(),
            b: String::new(),
        }
    );
    assert_eq!(app.get_state(&thread).await.unwrap().values.b, "x-private");
    app.update_state(&thread, Overall::update().b("edited".into()), None)
        .await
        .unwrap();
    assert_eq!(app.get_state(&thread).await.unwrap().values.b, "edited");
    let out = app.invoke(None, &thread).await.unwrap();
    assert_eq!(seen(), ["node1 got a=\"x\"", "node2 got b=\"edited\""]);
    assert_eq!(out.a, "edited-done");
    assert!(out.b.is_empty());
}

// for ev in app.stream({"a": "y"}, cfg2, stream_mode="values"): print(ev)
//   {'a': 'y'}
//   {'a': 'y', 'b': 'y-private'}
//   {'a': 'y-private-done', 'b': 'y-private'}
// for ev in app.stream({"a": "y"}, cfg3, stream_mode="updates"): print(ev)
//   {'node1': {'b': 'y-private'}}
//   {'node2': {'a': 'y-private-done'}}
#[tokio::test]
async fn streams_show_private_channels() {
    let app = private_graph();
    let values: Vec<Overall> = app
        .stream(
            Overall::update().a("y".into()),
            &RunConfig::thread("2"),
            StreamMode::Values,
        )
        .map(|event| match event.unwrap() {
            StreamEvent::Values(state) => (*state).clone(),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
        .await;
    let state = |a: &str, b: &str| Overall {
        a: a.into(),
        b: b.into(),
    };
    assert_eq!(
        values,
        [
            state("y", ""),
            state("y", "y-private"),
            state("y-private-done", "y-private"),
        ]
    );

    let updates: Vec<String> = app
        .stream(
            Overall::update().a("y".into()),
            &RunConfig::thread("3"),
            StreamMode::Updates,
        )
        .map(|event| match event.unwrap() {
            StreamEvent::Updates { node, updates } => format!("{node}: {:?}", updates[0]),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
        .await;
    assert_eq!(
        updates,
        [
            "node1: OverallUpdate { b: \"y-private\" }",
            "node2: OverallUpdate { a: \"y-private-done\" }",
        ]
    );
}

// class Overall(TypedDict):
//     a: str
// def first(state: Overall): return {"a": state["a"]}
// def reader(state: Private) -> Overall:
//     print("reader got", state)
//     return {"a": "read:" + str(state.get("b"))}
// START -> first -> reader -> END
// for ev in app.stream({"a": "x", "b": "from-input"}, stream_mode="values"): print(ev)
//   {'a': 'x'}
//   {'a': 'x'}
//   reader got {}
//   {'a': 'read:None'}
//
// A private channel no node wrote is missing from LangGraph's dict; here it
// holds the state's default value.
#[tokio::test]
async fn the_input_does_not_write_a_private_field() {
    #[node]
    fn first(state: &Overall) -> OverallUpdate {
        Overall::update().a(state.a.clone())
    }
    #[node]
    fn reader(state: &PrivateState) -> OverallUpdate {
        saw(format!("reader got b={:?}", state.b));
        Overall::update().a(format!("read:{:?}", state.b))
    }
    let app = StateGraph::<Overall>::new()
        .add_node(first)
        .add_node(reader)
        .add_edge(START, first)
        .add_edge(first, reader)
        .compile()
        .unwrap();
    let values: Vec<Overall> = app
        .stream(
            Overall::update().a("x".into()).b("from-input".into()),
            &RunConfig::new(),
            StreamMode::Values,
        )
        .map(|event| match event.unwrap() {
            StreamEvent::Values(state) => (*state).clone(),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
        .await;
    assert_eq!(seen(), ["reader got b=\"\""]);
    assert!(values.iter().all(|s| s.b.is_empty()), "{values:?}");
    assert_eq!(values.last().unwrap().a, "read:\"\"");

    // class O2(TypedDict): a: str
    // START -> r, def r(state: Private): print("r got", state); return {}
    // g.compile().invoke({"b": "in"})
    //   r got {}
    //   None
    // An input writing only private fields still starts the graph.
    let app = StateGraph::<Overall>::new()
        .add_node(reader)
        .add_edge(START, reader)
        .compile()
        .unwrap();
    let out = app
        .invoke(Overall::update().b("in".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(seen(), ["reader got b=\"\""]);
    assert_eq!(out.a, "read:\"\"");
}

// A command as graph input writes any channel, private ones included
// (LangGraph's `Command(update=..)` input is not filtered by the input schema).
// START -> node2 (node1 only declares the private channel)
// app.invoke(Command(update={"b": "cmd"}))
//   node2 got {'b': 'cmd'}
//   {'a': 'cmd-done'}
#[tokio::test]
async fn a_command_input_writes_a_private_field() {
    let app = StateGraph::<Overall>::new()
        .add_node(node1)
        .add_node(node2)
        .add_edge(START, node2)
        .compile()
        .unwrap();
    let out = app
        .invoke(
            Command::update_only(Overall::update().b("cmd".into())),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(seen(), ["node2 got b=\"cmd\""]);
    assert_eq!(out.a, "cmd-done");
}

// An explicit output schema may name a private field: it is then returned.
#[tokio::test]
async fn an_output_schema_naming_a_private_field_returns_it() {
    #[derive(Schema, Debug, PartialEq)]
    #[schema(state = Overall)]
    struct Both {
        a: String,
        b: String,
    }
    let out = private_graph()
        .with_output::<Both>()
        .invoke(Overall::update().a("x".into()), &RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(
        out.state,
        Both {
            a: "x-private-done".into(),
            b: "x-private".into(),
        }
    );
}

// child: START -> c1 -> c2, c1(state: Overall) -> Private: {"b": "child"},
//        c2(state: Private) -> Overall: {"a": "child saw " + state["b"]}
// parent: START -> p1 -> sub -> p2, p1 -> Private: {"b": "parent"},
//         p2(state: Private) -> Overall: {"a": "parent saw " + state["b"]}
// for ev in app.stream({"a": "x"}, stream_mode="updates"): print(ev)
//   {'p1': {'b': 'parent'}}
//   child c2 got {'b': 'child'}
//   {'sub': {'a': 'child saw child'}}
//   parent p2 got {'b': 'parent'}
//   {'p2': {'a': 'parent saw parent'}}
#[tokio::test]
async fn a_subgraph_hands_back_no_private_field() {
    #[node]
    fn c1(_: &Overall) -> OverallUpdate {
        Overall::update().b("child".into())
    }
    #[node]
    fn c2(state: &PrivateState) -> OverallUpdate {
        saw(format!("child c2 got b={:?}", state.b));
        Overall::update().a(format!("child saw {}", state.b))
    }
    #[node]
    fn p1(_: &Overall) -> OverallUpdate {
        Overall::update().b("parent".into())
    }
    #[node]
    fn p2(state: &PrivateState) -> OverallUpdate {
        saw(format!("parent p2 got b={:?}", state.b));
        Overall::update().a(format!("parent saw {}", state.b))
    }
    let child = StateGraph::<Overall>::new()
        .add_node(c1)
        .add_node(c2)
        .add_edge(START, c1)
        .add_edge(c1, c2)
        .compile()
        .unwrap();
    let app = StateGraph::<Overall>::new()
        .add_node(p1)
        .add_node(Subgraph::new("sub", child))
        .add_node(p2)
        .add_edge(START, p1)
        .add_edge(p1, "sub")
        .add_edge("sub", p2)
        .compile()
        .unwrap();
    let updates: Vec<String> = app
        .stream(
            Overall::update().a("x".into()),
            &RunConfig::new(),
            StreamMode::Updates,
        )
        .map(|event| match event.unwrap() {
            StreamEvent::Updates { node, updates } => format!("{node}: {:?}", updates[0]),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
        .await;
    assert_eq!(
        updates,
        [
            "p1: OverallUpdate { b: \"parent\" }",
            "sub: OverallUpdate { a: \"child saw child\" }",
            "p2: OverallUpdate { a: \"parent saw parent\" }",
        ]
    );
    assert_eq!(
        seen(),
        ["child c2 got b=\"child\"", "parent p2 got b=\"parent\""]
    );
}

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

thread_local! {
    static CLONES: Cell<usize> = const { Cell::new(0) };
}

/// A field that counts its clones.
#[derive(Debug, Default, PartialEq)]
struct Big(Vec<u64>);

impl Clone for Big {
    fn clone(&self) -> Self {
        CLONES.with(|c| c.set(c.get() + 1));
        Big(self.0.clone())
    }
}

impl Serialize for Big {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Big {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::deserialize(d).map(Big)
    }
}

// class Full(TypedDict):
//     topic: str
//     notes: Annotated[list, operator.add]
//     count: int
// class TopicOnly(TypedDict):
//     topic: str
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Full {
    topic: String,
    #[reducer(concat)]
    notes: Vec<String>,
    count: usize,
    big: Big,
}

#[derive(Schema, Clone, Debug, Serialize, Deserialize)]
#[schema(state = Full)]
struct TopicOnly {
    topic: String,
}

// def count_node(state: TopicOnly):
//     print("count_node got", state)
//     return {"count": len(state["topic"]), "notes": ["counted"]}
#[node]
fn count_node(state: &TopicOnly) -> FullUpdate {
    saw(format!("count_node got topic={:?}", state.topic));
    Full::update()
        .count(state.topic.len())
        .notes(vec!["counted".into()])
}

// app.invoke({"topic": "graphs", "notes": ["n0"], "count": 0})
//   count_node got {'topic': 'graphs'}
//   {'topic': 'graphs', 'notes': ['n0', 'counted'], 'count': 6}
#[tokio::test]
async fn a_node_typed_with_a_subset_reads_only_those_fields() {
    let app = StateGraph::<Full>::new()
        .add_node(count_node)
        .add_edge(START, count_node)
        .compile()
        .unwrap();
    CLONES.with(|c| c.set(0));
    let out = app
        .invoke(
            Full::update()
                .topic("graphs".into())
                .notes(vec!["n0".into()])
                .count(0)
                .big(Big(vec![7; 1000])),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(seen(), ["count_node got topic=\"graphs\""]);
    assert_eq!(out.topic, "graphs");
    assert_eq!(out.notes, ["n0", "counted"]);
    assert_eq!(out.count, 6);
    assert_eq!(out.big, Big(vec![7; 1000]));
    // The view is cloned out of the state, the rest of the state is not: the one
    // copy of `big` is the input's, into the `__start__` task (tests/it/no_copy.rs).
    assert_eq!(CLONES.with(Cell::get), 1);
}

// class Essay(TypedDict):
//     topic: str
//     drafts: Annotated[list, operator.add]
// class TopicView(TypedDict):
//     topic: str
// def fan(state: Essay):
//     return [Send("write", {"topic": state["topic"] + str(i)}) for i in range(2)]
// def write(state: TopicView):
//     print("write got", state)
//     return {"drafts": ["draft of " + state["topic"]]}
// app.invoke({"topic": "t", "drafts": []})
//   write got {'topic': 't0'}
//   write got {'topic': 't1'}
//   {'topic': 't', 'drafts': ['draft of t0', 'draft of t1']}
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Essay {
    topic: String,
    #[reducer(concat)]
    drafts: Vec<String>,
}

#[derive(Schema, Clone, Debug, Serialize, Deserialize)]
#[schema(state = Essay)]
struct TopicView {
    topic: String,
}

#[node]
fn write(state: &TopicView) -> EssayUpdate {
    saw(format!("write got topic={:?}", state.topic));
    Essay::update().drafts(vec![format!("draft of {}", state.topic)])
}

fn fan(state: &Essay) -> Vec<stategraph::Send> {
    (0..2)
        .map(|i| {
            send(
                write,
                TopicView {
                    topic: format!("{}{i}", state.topic),
                },
            )
        })
        .collect()
}

#[tokio::test]
async fn a_send_carries_only_the_view() {
    let app = StateGraph::<Essay>::new()
        .add_node(write)
        .add_conditional_edges(START, fan)
        .compile()
        .unwrap();
    let out = app
        .invoke(Essay::update().topic("t".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(seen(), ["write got topic=\"t0\"", "write got topic=\"t1\""]);
    assert_eq!(out.topic, "t");
    assert_eq!(out.drafts, ["draft of t0", "draft of t1"]);
}

// The same view node reached by an edge (its view projected from the state) and
// by `send` (the view as sent), in one superstep: PUSH tasks run first.
#[tokio::test]
async fn a_view_node_is_reached_by_edges_and_by_send() {
    let app = StateGraph::<Essay>::new()
        .add_node(write)
        .add_edge(START, write)
        .add_conditional_edges(START, fan)
        .compile()
        .unwrap();
    let out = app
        .invoke(Essay::update().topic("t".into()), &RunConfig::new())
        .await
        .unwrap();
    let mut seen = seen();
    seen.sort();
    assert_eq!(
        seen,
        [
            "write got topic=\"t\"",
            "write got topic=\"t0\"",
            "write got topic=\"t1\""
        ]
    );
    let mut drafts = out.drafts.clone();
    drafts.sort();
    assert_eq!(drafts, ["draft of t", "draft of t0", "draft of t1"]);
}

// class Jobs(TypedDict):
//     items: list
//     results: Annotated[list, operator.add]
// class Job(TypedDict):
//     item: str
// def fan_out(state: Jobs): return [Send("work", {"item": i}) for i in state["items"]]
// def work(state: Job):
//     print("work got", state)
//     return {"results": [state["item"].upper()]}
// app.invoke({"items": ["a", "b"], "results": []})
//   work got {'item': 'a'}
//   work got {'item': 'b'}
//   {'items': ['a', 'b'], 'results': ['A', 'B']}
//
// A payload of another schema (not a view of the state) is a `Send`-only node's
// input, as before.
#[tokio::test]
async fn a_send_to_a_node_with_another_schema() {
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Jobs {
        items: Vec<String>,
        #[reducer(concat)]
        results: Vec<String>,
    }
    #[derive(Clone, Debug, Serialize, Deserialize)]
    struct Job {
        item: String,
    }
    #[node(state = Jobs)]
    fn work(job: &Job) -> JobsUpdate {
        saw(format!("work got item={:?}", job.item));
        Jobs::update().results(vec![job.item.to_uppercase()])
    }
    let app = StateGraph::<Jobs>::new()
        .add_node(work)
        .add_conditional_edges(START, |jobs: &Jobs| {
            jobs.items
                .iter()
                .map(|item| send(work, Job { item: item.clone() }))
                .collect::<Vec<_>>()
        })
        .compile()
        .unwrap();
    let out = app
        .invoke(
            Jobs::update().items(vec!["a".into(), "b".into()]),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(seen(), ["work got item=\"a\"", "work got item=\"b\""]);
    assert_eq!(out.results, ["A", "B"]);
}

// A view node of a checkpointed graph: its input is projected again when an
// interrupted run resumes.
#[tokio::test]
async fn a_view_node_resumes_from_an_interrupt() {
    #[node]
    fn ask(state: &TopicView, ctx: &Context) -> Result<EssayUpdate, NodeError> {
        let ok: bool = ctx.interrupt(format!("write about {}?", state.topic))?;
        Ok(Essay::update().drafts(vec![format!("{} {ok}", state.topic)]))
    }
    let app = StateGraph::<Essay>::new()
        .add_node(ask)
        .add_edge(START, ask)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let thread = RunConfig::thread("t");
    let out = app
        .invoke(Essay::update().topic("rust".into()), &thread)
        .await
        .unwrap();
    assert_eq!(
        out.interrupts[0].value,
        stategraph::json!("write about rust?")
    );
    let out = app.invoke(Command::resume(true), &thread).await.unwrap();
    assert_eq!(out.drafts, ["rust true"]);
}

// A view node that routes: `Command<G>` needs the state named, as for a payload
// node (the view is not the state whose update the command carries).
// def review(state: TopicView) -> Command[Literal["write", "__end__"]]:
//     return Command(update={"drafts": ["reviewed " + state["topic"]]},
//                    goto="write" if state["topic"] == "t" else END)
// START -> review; app.invoke({"topic": "t", "drafts": []})
//   write got {'topic': 't'}
//   {'topic': 't', 'drafts': ['reviewed t', 'draft of t']}
#[tokio::test]
async fn a_view_node_routes_with_a_command() {
    #[derive(Goto, Clone, Copy, Debug)]
    enum Next {
        Write,
        #[goto(end)]
        Done,
    }
    #[node(state = Essay)]
    fn review(state: &TopicView) -> Command<Next> {
        let next = if state.topic == "t" {
            Next::Write
        } else {
            Next::Done
        };
        Command::goto(next)
            .update(Essay::update().drafts(vec![format!("reviewed {}", state.topic)]))
    }
    let app = StateGraph::<Essay>::new()
        .add_node(review)
        .add_node(write)
        .add_edge(START, review)
        .compile()
        .unwrap();
    let out = app
        .invoke(Essay::update().topic("t".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(seen(), ["write got topic=\"t\""]);
    assert_eq!(out.drafts, ["reviewed t", "draft of t"]);
}
