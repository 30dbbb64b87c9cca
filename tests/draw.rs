//! Graph drawing: every declared route is drawn, typed gotos included.

use stategraph::prelude::*;

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
    assert_eq!(
        graph().draw_mermaid(),
        "graph TD;
\t__start__([\"__start__\"]):::first
\tagent[\"agent\"]
\ttools[\"tools\"]
\tchecker[\"checker\"]
\tpublish[\"publish (deferred)\"]
\t__end__([\"__end__\"]):::last
\t__start__ --> agent;
\tagent -.-> __end__;
\tagent --> checker;
\tagent -.-> tools;
\tchecker -.-> agent;
\tchecker -.-> publish;
\tpublish --> __end__;
\ttools --> agent;
\ttools --> checker;
\tclassDef default fill:#f2f0ff,line-height:1.2
\tclassDef first fill-opacity:0
\tclassDef last fill:#bfb6fc
"
    );
}

#[test]
fn dot_has_the_same_edges() {
    let dot = graph().draw_dot();
    assert!(dot.starts_with("digraph {"), "{dot}");
    for line in [
        "\"__start__\" -> \"agent\";",
        "\"agent\" -> \"tools\" [style=dashed];",
        "\"agent\" -> \"__end__\" [style=dashed];",
        "\"checker\" -> \"publish\" [style=dashed];",
        "\"publish\" [shape=box style=dashed];",
        "\"tools\" -> \"checker\";",
    ] {
        assert!(dot.contains(line), "missing {line} in\n{dot}");
    }
}

#[test]
fn names_that_are_not_identifiers_get_safe_ids_and_keep_their_labels() {
    let app = StateGraph::<S>::new()
        .add_node_fn("step 1.1", |_: &S| ())
        .add_node_fn("step_1_1", |_: &S| ())
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
        .add_node_fn("fan", |_: &S| ())
        .add_conditional_edges("fan", |_: &S| Vec::<stategraph::Send>::new())
        .add_edge(START, "fan")
        .compile()
        .unwrap();
    assert!(app
        .draw_mermaid()
        .contains("%% fan also routes at run time (names or Sends)"));
}
