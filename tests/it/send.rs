//! `Send` fan-out: PUSH tasks with their own input (docs/semantics.md §2.4, §2.5,
//! §4.2; scenarios 12, 13, 14 of its appendix A).

use stategraph::prelude::*;
use stategraph::Route;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Items {
    #[reducer(concat)]
    items: Vec<String>,
}

fn push(name: &'static str) -> impl Fn(&Items) -> ItemsUpdate + Send + Sync + 'static {
    move |_: &Items| Items::update().items(vec![name.to_owned()])
}

#[tokio::test]
async fn sends_carrying_the_state_run_the_node_once_per_send() {
    let app = StateGraph::<Items>::new()
        .add_node(node_fn("1", push("1")))
        .add_node(node_fn("2", push("2")))
        .add_node(node_fn("3", push("3")))
        .add_edge(START, "1")
        .add_conditional_edges("1", |s: &Items| {
            vec![
                stategraph::Send::to_named("2", s.clone()),
                stategraph::Send::to_named("2", s.clone()),
            ]
        })
        .add_conditional_edges("2", |_: &Items| "3")
        .compile()
        .unwrap();
    let out = app
        .invoke(Items::update().items(vec!["0".into()]), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.items, ["0", "1", "2", "2", "3"]);
}

#[tokio::test]
async fn sends_from_parallel_tasks_are_applied_in_task_then_send_order() {
    let app = StateGraph::<Items>::new()
        .add_node(node_fn("1", push("1")))
        .add_node(node_fn("1.1", push("1.1")))
        .add_node(node_fn("2", |n: &i32| {
            Items::update().items(vec![format!("2|{n}")])
        }))
        .add_node(node_fn("3", push("3")))
        .add_node(node_fn("3.1", push("3.1")))
        .add_edge(START, "1")
        .add_edge(START, "1.1")
        .add_conditional_edges("1", |_: &Items| {
            vec![
                Route::Send(stategraph::Send::to_named("2", 1)),
                Route::Send(stategraph::Send::to_named("2", 2)),
                Route::To("3.1"),
            ]
        })
        .add_conditional_edges("1.1", |_: &Items| {
            vec![
                stategraph::Send::to_named("2", 3),
                stategraph::Send::to_named("2", 4),
            ]
        })
        .add_edge("2", "3")
        .compile()
        .unwrap();
    let out = app
        .invoke(Items::update().items(vec!["0".into()]), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.items,
        ["0", "1", "1.1", "3.1", "2|1", "2|2", "2|3", "2|4", "3"]
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Squares {
    items: Vec<u64>,
    #[reducer(concat)]
    out: Vec<u64>,
}

#[node]
fn times_ten(x: u64) -> SquaresUpdate {
    Squares::update().out(vec![x * 10])
}

#[tokio::test]
async fn typed_sends_keep_send_order_not_completion_order() {
    let app = StateGraph::<Squares>::new()
        .add_node(times_ten)
        .add_conditional_edges(START, |s: &Squares| {
            s.items
                .iter()
                .map(|&x| send(times_ten, x))
                .collect::<Vec<_>>()
        })
        .compile()
        .unwrap();
    let out = app
        .invoke(Squares::update().items(vec![3, 1, 2]), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.items, [3, 1, 2]);
    assert_eq!(out.out, [30, 10, 20]);
}

#[tokio::test]
async fn a_send_with_a_payload_of_the_wrong_type_is_a_clear_error() {
    let app = StateGraph::<Squares>::new()
        .add_node(times_ten)
        .add_conditional_edges(START, |_: &Squares| {
            stategraph::Send::to_named("times_ten", "not a number")
        })
        .compile()
        .unwrap();
    let err = app
        .invoke(Squares::update(), &RunConfig::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("times_ten"), "{text}");
    assert!(text.contains("&str"), "{text}");
    assert!(text.contains("u64"), "{text}");
}

#[tokio::test]
async fn a_send_to_end_is_rejected() {
    let app = StateGraph::<Squares>::new()
        .add_node(times_ten)
        .add_conditional_edges(START, |_: &Squares| stategraph::Send::to_named(END, 1u64))
        .compile()
        .unwrap();
    let err = app
        .invoke(Squares::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Cannot send a packet to the END node"),
        "{err}"
    );
}

#[tokio::test]
async fn a_payload_node_cannot_be_the_target_of_a_static_edge() {
    let err = StateGraph::<Squares>::new()
        .add_node(times_ten)
        .add_edge(START, times_ten)
        .compile()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("node `times_ten` takes a `u64`"), "{text}");
    assert!(text.contains("Send"), "{text}");
}

async fn sends_in_one_step(n: u64) {
    let app = StateGraph::<Squares>::new()
        .add_node(times_ten)
        .add_conditional_edges(START, move |_: &Squares| {
            (0..n).map(|i| send(times_ten, i)).collect::<Vec<_>>()
        })
        .compile()
        .unwrap();
    let out = app
        .invoke(Squares::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.out.len() as u64, n);
    assert!(out.out.iter().enumerate().all(|(i, v)| *v == i as u64 * 10));
}

#[tokio::test]
async fn ten_thousand_sends_in_one_step_all_run_in_order() {
    sends_in_one_step(10_000).await;
}

/// Issue 7 §5: no stack overflow and no quadratic blow-up at 100,000 Sends (the
/// run would take minutes if preparing or applying them were quadratic).
#[tokio::test]
async fn a_hundred_thousand_sends_in_one_step_all_run_in_order() {
    sends_in_one_step(100_000).await;
}
