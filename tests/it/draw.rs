//! Graph drawing: every declared route is drawn, typed gotos included; subgraphs
//! can be drawn expanded.
//!
//! The drawings are insta snapshots in tests/it/snapshots/. A changed drawing fails
//! the test; review the new one with `cargo insta review` (or rerun with
//! `INSTA_UPDATE=always` and read the diff) before committing it.

use stategraph::prelude::*;
use stategraph::{DrawOptions, Subgraph};

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

#[derive(Goto, Clone, Copy, Debug)]
enum AgentNext {
    Tools,
    #[goto(end)]
    Done,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Review {
    Agent,
    Publish,
}

#[node]
fn agent(s: &S) -> Command<AgentNext> {
    Command::goto(if s.n > 0 {
        AgentNext::Tools
    } else {
        AgentNext::Done
    })
}

#[node]
fn tools(_: &S) {}

#[node]
fn checker(_: &S) {}

#[node]
fn publish(_: &S) {}

/// Static edges, a join, a conditional edge with a goto type, a node's Command
/// goto type, and a deferred node.
fn graph() -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(agent)
        .add_node(tools)
        .add_node(checker)
        .add_node_with(publish, NodeOptions::new().defer(true))
        .add_edge(START, agent)
        .add_edge(tools, agent)
        .add_edge((agent, tools), checker)
        .add_conditional_edges(checker, |s: &S| {
            if s.n > 1 {
                Review::Agent
            } else {
                Review::Publish
            }
        })
        .add_edge(publish, END)
        .compile()
        .unwrap()
}

#[test]
fn mermaid_shows_static_join_conditional_and_goto_edges() {
    stategraph::assert_graph_snapshot!(graph());
}

#[test]
fn dot_has_the_same_edges() {
    insta::assert_snapshot!(graph().draw_dot());
}

#[test]
fn names_that_are_not_identifiers_get_safe_ids_and_keep_their_labels() {
    let app = StateGraph::<S>::new()
        .add_node(node_fn("step 1.1", |_: &S| ()))
        .add_node(node_fn("step_1_1", |_: &S| ()))
        .add_edge(START, "step 1.1")
        .add_edge("step 1.1", "step_1_1")
        .compile()
        .unwrap();
    let chart = app.draw_mermaid();
    assert!(
        chart.contains("n0[\"step 1.1\"]") && chart.contains("n1[\"step_1_1\"]"),
        "{chart}"
    );
    assert!(chart.contains("n0 --> n1;"), "{chart}");
}

#[test]
fn routes_decided_at_run_time_are_noted() {
    let app = StateGraph::<S>::new()
        .add_node(node_fn("fan", |_: &S| ()))
        .add_conditional_edges("fan", |_: &S| Vec::<stategraph::Send>::new())
        .add_edge(START, "fan")
        .compile()
        .unwrap();
    assert!(app
        .draw_mermaid()
        .contains("%% fan also routes at run time (names or Sends)"));
}

// Map-reduce: Sends from START's router to a node that takes a payload, and a
// node whose Command sends; `destinations` declares where they go.

fn append<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Jobs {
    items: Vec<u32>,
    #[reducer(append)]
    done: Vec<u32>,
}

#[node]
fn square(n: u32) -> JobsUpdate {
    Jobs::update().done(vec![n * n])
}

#[node]
fn retry(jobs: &Jobs) -> Command<stategraph::NoGoto> {
    let mut again = Command::update_only(Jobs::update());
    for &n in jobs
        .items
        .iter()
        .filter(|n| !jobs.done.contains(&(*n * *n)))
    {
        again = again.and_send(send(square, n));
    }
    again
}

#[node]
fn total(_: &Jobs) {}

fn map_reduce(declared: bool) -> StateGraph<Jobs> {
    let graph = StateGraph::<Jobs>::new()
        .add_node(square)
        .add_node(retry)
        .add_node(total)
        .add_conditional_edges(START, |jobs: &Jobs| {
            jobs.items
                .iter()
                .map(|&n| send(square, n))
                .collect::<Vec<_>>()
        })
        .add_edge(square, retry)
        .add_edge(retry, total)
        .add_edge(total, END);
    if declared {
        graph
            .destinations(START, square)
            .destinations(retry, [square])
    } else {
        graph
    }
}

#[test]
fn send_targets_are_drawn_when_declared() {
    let app = map_reduce(true).compile().unwrap();
    stategraph::assert_graph_snapshot!("send_targets_mermaid", app);
    insta::assert_snapshot!("send_targets_dot", app.draw_dot());
}

#[test]
fn undeclared_sends_are_a_comment() {
    let chart = map_reduce(false).compile().unwrap().draw_mermaid();
    assert!(
        chart.contains("%% __start__ also routes at run time (names or Sends)")
            && !chart.contains("Send .->"),
        "{chart}"
    );
    // A `Command<G>` may add Sends to its gotos, which its type does not show:
    // only a declaration draws them.
    assert!(!chart.contains("retry also routes"), "{chart}");
}

#[tokio::test]
async fn declared_destinations_do_not_change_the_run() {
    let input = || Jobs::update().items(vec![1, 2, 3]);
    let plain = map_reduce(false).compile().unwrap();
    let declared = map_reduce(true).compile().unwrap();
    let a = plain.invoke(input(), &RunConfig::new()).await.unwrap();
    let b = declared.invoke(input(), &RunConfig::new()).await.unwrap();
    assert_eq!(a.done, [1, 4, 9]);
    assert_eq!(a.done, b.done);
}

#[test]
fn unknown_destinations_are_compile_errors() {
    let err = StateGraph::<S>::new()
        .add_node(node_fn("fan", |_: &S| ()))
        .add_edge(START, "fan")
        .destinations("fan", ("worker", END))
        .destinations("nobody", "fan")
        .compile()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("destinations of `fan` name `worker`")
            && err.contains("destinations names source `nobody`")
            && !err.contains("name `__end__`"),
        "{err}"
    );
}

// Subgraphs: `research` shares the state and has its own conditional edge and a
// nested subgraph `lookup`; `summarise` has its own state and is reached by Send.

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Note {
    text: String,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Enough {
    Search,
    Write,
}

fn lookup() -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(node_fn("query", |_: &S| ()))
        .add_node(node_fn("rank", |_: &S| ()))
        .add_edge(START, "query")
        .add_edge("query", "rank")
        .compile()
        .unwrap()
}

fn research() -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(node_fn("search", |_: &S| ()))
        .add_node(Subgraph::new("lookup", lookup()))
        .add_node(node_fn("write", |_: &S| ()))
        .add_edge(START, "search")
        .add_edge("search", "lookup")
        .add_conditional_edges("lookup", |s: &S| {
            if s.n > 2 {
                Enough::Write
            } else {
                Enough::Search
            }
        })
        .add_edge("write", END)
        .compile()
        .unwrap()
}

fn with_subgraphs() -> CompiledGraph<S> {
    let summarise = StateGraph::<Note>::new()
        .add_node(node_fn("shorten", |_: &Note| ()))
        .add_edge(START, "shorten")
        .compile()
        .unwrap();
    let summarise = Subgraph::mapped(
        "summarise",
        summarise,
        |n: &u32| Note::update().text(n.to_string()),
        |_: Note| S::update(),
    );
    let fan_out = {
        let summarise = summarise.clone();
        move |s: &S| (0..s.n).map(|i| send(&summarise, i)).collect::<Vec<_>>()
    };
    StateGraph::<S>::new()
        .add_node(Subgraph::new("research", research()))
        .add_node(summarise.clone())
        .add_node(publish)
        .add_edge(START, "research")
        .add_conditional_edges("research", fan_out)
        .destinations("research", &summarise)
        .add_edge("summarise", publish)
        .add_edge(publish, END)
        .compile()
        .unwrap()
}

#[test]
fn subgraphs_are_one_node_by_default() {
    let app = with_subgraphs();
    assert_eq!(
        app.draw_mermaid(),
        app.draw_mermaid_with(&DrawOptions::new())
    );
    assert_eq!(
        app.draw_dot(),
        app.draw_dot_with(&DrawOptions::new().xray(0))
    );
    stategraph::assert_graph_snapshot!("subgraphs_collapsed_mermaid", app);
    insta::assert_snapshot!("subgraphs_collapsed_dot", app.draw_dot());
}

#[test]
fn xray_1_expands_one_level() {
    let app = with_subgraphs();
    let options = DrawOptions::new().xray(1);
    insta::assert_snapshot!("subgraphs_xray_1_mermaid", app.draw_mermaid_with(&options));
    insta::assert_snapshot!("subgraphs_xray_1_dot", app.draw_dot_with(&options));
}

#[test]
fn xray_max_expands_every_level() {
    let app = with_subgraphs();
    let all = DrawOptions::new().xray(usize::MAX);
    let two = DrawOptions::new().xray(2);
    assert_eq!(app.draw_mermaid_with(&all), app.draw_mermaid_with(&two));
    insta::assert_snapshot!("subgraphs_xray_all_mermaid", app.draw_mermaid_with(&all));
    insta::assert_snapshot!("subgraphs_xray_all_dot", app.draw_dot_with(&all));
}

#[test]
fn expanded_names_that_would_meet_get_numbered_ids() {
    // `research:search` written `research_search` would be this node's id too.
    let app = StateGraph::<S>::new()
        .add_node(Subgraph::new("research", research()))
        .add_node(node_fn("research_search", |_: &S| ()))
        .add_edge(START, "research")
        .add_edge("research", "research_search")
        .compile()
        .unwrap();
    insta::assert_snapshot!(app.draw_mermaid_with(&DrawOptions::new().xray(1)));
}
