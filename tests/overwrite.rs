//! `Overwrite` on reducer fields (docs/semantics.md §1.3; scenario 37 of its
//! appendix A).

use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    #[reducer(concat)]
    messages: Vec<String>,
}

fn append(word: &'static str) -> impl Fn(&Log) -> LogUpdate + Send + Sync + 'static {
    move |_: &Log| Log::update().messages(vec![word.to_owned()])
}

fn overwrite(word: &'static str) -> impl Fn(&Log) -> LogUpdate + Send + Sync + 'static {
    move |_: &Log| Log::update().messages_overwrite(vec![word.to_owned()])
}

fn start() -> LogUpdate {
    Log::update().messages(vec!["START".into()])
}

#[tokio::test]
async fn an_overwrite_replaces_the_accumulated_value() {
    let app = StateGraph::<Log>::new()
        .add_node(node_fn("a", append("a")))
        .add_node(node_fn("b", overwrite("b")))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile()
        .unwrap();
    let out = app.invoke(start(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages, ["b"]);
}

#[tokio::test]
async fn an_overwrite_wins_over_a_parallel_write_in_the_same_step() {
    let app = StateGraph::<Log>::new()
        .add_node(node_fn("a", append("a")))
        .add_node(node_fn("b", overwrite("b")))
        .add_node(node_fn("c", append("c")))
        .add_node(node_fn("d", append("d")))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(("b", "c"), "d")
        .compile()
        .unwrap();
    let out = app.invoke(start(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages, ["b", "d"]);
}

#[tokio::test]
async fn two_overwrites_in_one_step_are_an_error() {
    let app = StateGraph::<Log>::new()
        .add_node(node_fn("a", append("a")))
        .add_node(node_fn("b", overwrite("b")))
        .add_node(node_fn("c", overwrite("c")))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .compile()
        .unwrap();
    let err = app.invoke(start(), &RunConfig::new()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("Can receive only one Overwrite value per super-step."),
        "{err}"
    );
}
