//! Failures: node errors, panics, bad input, and `compile()` validation
//! (docs/semantics.md §3.4, §11.4; scenarios 8 and 44 of its appendix A).

use stategraph::prelude::*;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Job {
    done: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("the tool is down")]
struct ToolDown;

#[node]
async fn flaky(_: &Job) -> Result<JobUpdate, ToolDown> {
    Err(ToolDown)
}

#[tokio::test]
async fn a_node_error_names_the_node_and_keeps_its_source() {
    let app = StateGraph::<Job>::new()
        .add_node(flaky)
        .add_edge(START, flaky)
        .compile()
        .unwrap();
    let err = app
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    match &err {
        GraphError::NodeFailed {
            node, step, source, ..
        } => {
            assert_eq!(node, "flaky");
            assert_eq!(*step, 1);
            assert!(source.is::<ToolDown>());
        }
        other => panic!("expected NodeFailed, got {other:?}"),
    }
    // The node's error is the source, printed once by whoever prints the chain.
    assert!(!err.to_string().contains("the tool is down"), "{err}");
    let report = format!(
        "{err}: {}",
        std::error::Error::source(&err).expect("the node's error")
    );
    assert!(report.contains("the tool is down"), "{report}");
}

#[tokio::test]
async fn different_error_types_travel_through_question_mark_in_one_node() {
    #[node]
    fn parse(_: &Job) -> Result<JobUpdate, NodeError> {
        let n: u32 = "12".parse()?;
        if n > 10 {
            Err(ToolDown)?;
        }
        Ok(Job::update().done(true))
    }
    let app = StateGraph::<Job>::new()
        .add_node(parse)
        .add_edge(START, parse)
        .compile()
        .unwrap();
    let err = app
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    let GraphError::NodeFailed { source, .. } = err else {
        panic!("expected NodeFailed");
    };
    assert!(source.is::<ToolDown>());
}

#[tokio::test]
async fn a_panicking_node_becomes_an_error_and_the_process_survives() {
    #[node]
    fn explode(_: &Job) -> JobUpdate {
        panic!("kaboom")
    }
    let app = StateGraph::<Job>::new()
        .add_node(explode)
        .add_edge(START, explode)
        .compile()
        .unwrap();
    let err = app
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::NodePanicked { node, message, .. } if node == "explode" && message == "kaboom"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_panic_among_parallel_tasks_is_caught_too() {
    let app = StateGraph::<Job>::new()
        .add_node(node_fn("fine", |_: &Job| ()))
        .add_node(async_node_fn(
            "bad",
            |_: std::sync::Arc<Job>, _| async move {
                if true {
                    panic!("async kaboom");
                }
            },
        ))
        .add_edge(START, "fine")
        .add_edge(START, "bad")
        .compile()
        .unwrap();
    let err = app
        .invoke(Job::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::NodePanicked { message, .. } if message == "async kaboom"),
        "{err:?}"
    );
}

#[tokio::test]
async fn no_input_on_a_graph_without_checkpointer_is_an_empty_input_error() {
    let app = StateGraph::<Job>::new()
        .add_node(node_fn("n", |_: &Job| ()))
        .add_edge(START, "n")
        .compile()
        .unwrap();
    let err = app.invoke(None, &RunConfig::new()).await.unwrap_err();
    assert!(matches!(err, GraphError::EmptyInput(_)));
    assert_eq!(err.to_string(), "Received no input for __start__");
}

fn compile_error(graph: StateGraph<Job>) -> String {
    match graph.compile() {
        Ok(_) => panic!("expected compile() to fail"),
        Err(GraphError::InvalidGraph { problems }) => problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        Err(other) => panic!("expected InvalidGraph, got {other:?}"),
    }
}

#[test]
fn an_edge_from_an_unknown_node_is_reported() {
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("a", |_: &Job| ()))
            .add_edge(START, "a")
            .add_edge("unknown", "a"),
    );
    assert!(
        text.contains("Found edge starting at unknown node 'unknown'"),
        "{text}"
    );
}

/// A misspelt node name in a string edge is reported with the closest name the
/// graph has, from wherever the edge names it.
#[test]
fn an_unknown_node_close_to_a_known_one_gets_a_did_you_mean() {
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("step", |_: &Job| ()))
            .add_node(node_fn("review", |_: &Job| ()))
            .add_edge(START, "stpe")
            .add_edge("step", "reveiw")
            .add_edge(("step", "Review"), END)
            .add_conditional_edges("sep", |_: &Job| END),
    );
    assert_eq!(
        text,
        "Found edge ending at unknown node `stpe`; did you mean `step`?\n\
         Found edge ending at unknown node `reveiw`; did you mean `review`?\n\
         Need to add_node `Review` first; did you mean `review`?\n\
         Found edge starting at unknown node 'sep'; did you mean `step`?"
    );

    // Nothing close: no guess.
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("step", |_: &Job| ()))
            .add_edge(START, "step")
            .add_edge("step", "summarize"),
    );
    assert_eq!(text, "Found edge ending at unknown node `summarize`");
}

#[test]
fn an_edge_to_an_unknown_node_is_reported() {
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("a", |_: &Job| ()))
            .add_edge(START, "a")
            .add_edge("a", "b"),
    );
    assert!(
        text.contains("Found edge ending at unknown node `b`"),
        "{text}"
    );
}

#[test]
fn a_graph_without_entry_point_is_reported() {
    let text = compile_error(StateGraph::<Job>::new().add_node(node_fn("a", |_: &Job| ())));
    assert!(text.contains("Graph must have an entrypoint"), "{text}");
}

#[test]
fn reserved_and_duplicate_names_are_all_reported_together() {
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("a", |_: &Job| ()))
            .add_node(node_fn("a", |_: &Job| ()))
            .add_node(node_fn("__end__", |_: &Job| ()))
            .add_node(node_fn("x|y", |_: &Job| ()))
            .add_node(node_fn("__interrupt__", |_: &Job| ()))
            .add_edge(START, "a")
            .add_edge(END, "a")
            .add_edge("a", START),
    );
    for expected in [
        "Node `a` already present.",
        "Node `__end__` is reserved.",
        "'|' is a reserved character",
        "Node name '__interrupt__' is reserved",
        "END cannot be a start node",
        "START cannot be an end node",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn a_join_from_a_missing_node_is_reported() {
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("a", |_: &Job| ()))
            .add_node(node_fn("c", |_: &Job| ()))
            .add_edge(START, "a")
            .add_edge(("a", "b"), "c"),
    );
    assert!(text.contains("Need to add_node `b` first"), "{text}");
}

#[test]
fn a_router_with_a_declared_unknown_target_is_reported() {
    #[derive(Goto, Clone, Copy, Debug)]
    enum Where {
        Left,
        #[goto(end)]
        Stop,
    }
    let text = compile_error(
        StateGraph::<Job>::new()
            .add_node(node_fn("a", |_: &Job| ()))
            .add_edge(START, "a")
            .add_conditional_edges("a", |_: &Job| Where::Stop),
    );
    assert!(
        text.contains("At 'a' node, the conditional edge found unknown target 'left'"),
        "{text}"
    );
    let _ = Where::Left;
}

/// The errors carry their facts in fields: a program can tell problems apart
/// without reading messages.
#[tokio::test]
async fn errors_are_typed_with_the_facts_in_fields() {
    use stategraph::checkpoint::InMemorySaver;
    use stategraph::error::{ConfigError, EmptyInputError, GraphProblem, ResumeError};

    let Err(err) = StateGraph::<Job>::new()
        .add_node(flaky)
        .add_edge(flaky, "ghost")
        .compile()
    else {
        panic!("the graph is invalid");
    };
    let GraphError::InvalidGraph { problems } = &err else {
        panic!("expected InvalidGraph, got {err:?}");
    };
    assert_eq!(
        problems,
        &[
            GraphProblem::UnknownEdgeTarget {
                node: "ghost".to_owned(),
                did_you_mean: None,
            },
            GraphProblem::NoEntrypoint,
        ]
    );
    // The message lists each problem on its own line, as before.
    assert_eq!(
        err.to_string(),
        "invalid graph:\nFound edge ending at unknown node `ghost`\nGraph must have an \
         entrypoint: add at least one edge from START to another node"
    );

    let app = StateGraph::<Job>::new()
        .add_node(flaky)
        .add_edge(START, flaky)
        .compile()
        .unwrap();
    let err = app.invoke(None, &RunConfig::new()).await.unwrap_err();
    assert!(matches!(
        err,
        GraphError::EmptyInput(EmptyInputError::NoInput)
    ));
    let err = app
        .invoke(Job::update(), &RunConfig::new().with_recursion_limit(0))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        GraphError::InvalidConfig(ConfigError::RecursionLimitTooLow)
    ));

    let saved = StateGraph::<Job>::new()
        .add_node(flaky)
        .add_edge(START, flaky)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let err = saved
        .invoke(Command::resume("yes"), &RunConfig::thread("t"))
        .await
        .unwrap_err();
    match err {
        GraphError::InvalidResume(ResumeError::NoCheckpoint { thread_id }) => {
            assert_eq!(thread_id, "t")
        }
        other => panic!("expected NoCheckpoint, got {other:?}"),
    }
}
