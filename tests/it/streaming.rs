//! Stream modes `values`, `updates`, `custom` (docs/semantics.md §9).

use futures::StreamExt;
use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Counter {
    #[reducer(concat)]
    seen: Vec<u32>,
    label: String,
}

#[node]
fn one(_: &Counter) -> CounterUpdate {
    Counter::update().seen(vec![1])
}

#[node]
fn quiet(_: &Counter) {}

#[node]
fn report(s: &Counter, ctx: &Context) -> CounterUpdate {
    ctx.write_custom(serde_json::json!({ "progress": s.seen.len() }));
    ctx.write_custom("done");
    Counter::update().seen(vec![3])
}

fn graph() -> CompiledGraph<Counter> {
    StateGraph::<Counter>::new()
        .add_node(one)
        .add_node(quiet)
        .add_node(report)
        .add_edge(START, one)
        .add_edge(one, quiet)
        .add_edge(quiet, report)
        .add_edge(report, END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn values_are_reported_after_each_step_that_changed_the_state() {
    let values: Vec<Vec<u32>> = graph()
        .stream(
            Counter::update().label("x".into()),
            &RunConfig::new(),
            StreamMode::Values,
        )
        .map(|e| match e.unwrap() {
            StreamEvent::Values(s) => s.seen.clone(),
            _ => panic!("only values were asked for"),
        })
        .collect()
        .await;
    // __start__ (input written), one, (quiet writes nothing: no event), report.
    assert_eq!(values, [vec![], vec![1], vec![1, 3]]);
}

#[tokio::test]
async fn updates_report_every_node_including_those_that_wrote_nothing() {
    let updates: Vec<(String, usize)> = graph()
        .stream(Counter::update(), &RunConfig::new(), StreamMode::Updates)
        .map(|e| match e.unwrap() {
            StreamEvent::Updates { node, updates } => (node.to_string(), updates.len()),
            _ => panic!("only updates were asked for"),
        })
        .collect()
        .await;
    assert_eq!(
        updates,
        [
            ("one".to_owned(), 1),
            ("quiet".to_owned(), 0),
            ("report".to_owned(), 1)
        ]
    );
}

#[tokio::test]
async fn custom_values_arrive_in_order_between_the_other_modes() {
    let events: Vec<String> = graph()
        .stream(
            Counter::update(),
            &RunConfig::new(),
            [StreamMode::Updates, StreamMode::Custom, StreamMode::Values],
        )
        .map(|e| match e.unwrap() {
            StreamEvent::Values(s) => format!("values {:?}", s.seen),
            StreamEvent::Updates { node, .. } => format!("updates {node}"),
            StreamEvent::Custom { node, value } => format!("custom {node} {value}"),
            _ => "other".to_owned(),
        })
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "updates one",
            "values [1]",
            "updates quiet",
            "custom report {\"progress\":1}",
            "custom report \"done\"",
            "updates report",
            "values [1, 3]",
        ]
    );
}

#[tokio::test]
async fn without_the_custom_mode_nodes_are_told_nobody_listens() {
    let app = StateGraph::<Counter>::new()
        .add_node(node_fn("probe", |_: &Counter, ctx: &Context| {
            Counter::update().label(ctx.is_streaming_custom().to_string())
        }))
        .add_edge(START, "probe")
        .compile()
        .unwrap();
    let out = app
        .invoke(Counter::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.label, "false");
}

#[tokio::test]
async fn a_stream_ends_with_the_error_after_the_events_before_it() {
    let app = StateGraph::<Counter>::new()
        .add_node(one)
        .add_node(node_fn("boom", |_: &Counter| -> Result<(), NodeError> {
            Err(NodeError::msg("boom"))
        }))
        .add_edge(START, one)
        .add_edge(one, "boom")
        .compile()
        .unwrap();
    let events: Vec<_> = app
        .stream(Counter::update(), &RunConfig::new(), StreamMode::Values)
        .collect()
        .await;
    // The empty input writes no field, so the first values event follows `one`.
    assert_eq!(events.len(), 2, "one values event, then the error");
    assert!(events[0].is_ok());
    let err = events[1].as_ref().unwrap_err();
    assert!(err.to_string().contains("node `boom` failed"), "{err}");
}
