//! Edges, joins, conditional edges and deferred nodes (docs/semantics.md §3.2,
//! §2.8; scenarios 7, 17, 18, 19, 20 of its appendix A).

use stategraph::prelude::*;
use std::sync::{Arc, Mutex};

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

fn sorted_concat(a: Vec<String>, b: Vec<String>) -> Vec<String> {
    let mut all = concat(a, b);
    all.sort();
    all
}

fn add_str(a: String, b: String) -> String {
    a + &b
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Hello {
    hello: String,
}

#[tokio::test]
async fn two_writes_to_a_last_value_field_in_one_step_fail_with_the_field_name() {
    let world = |_: &Hello| Hello::update().hello("world".to_owned());
    let app = StateGraph::<Hello>::new()
        .add_node(node_fn("a", world))
        .add_node(node_fn("b", world))
        .add_node(node_fn("c", world))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .compile()
        .unwrap();
    let err = app
        .invoke(Hello::update().hello("there".to_owned()), &RunConfig::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("At key 'hello'"), "{text}");
    assert!(
        text.contains("#[reducer"),
        "the message names the fix: {text}"
    );
    assert_eq!(
        err.code(),
        Some(stategraph::ErrorCode::InvalidConcurrentGraphUpdate)
    );
}

#[tokio::test]
async fn a_conditional_entry_point_fanning_out_to_two_writers_fails_the_same_way() {
    let world = |_: &Hello| Hello::update().hello("world".to_owned());
    let app = StateGraph::<Hello>::new()
        .add_node(node_fn("one", world))
        .add_node(node_fn("two", world))
        .add_conditional_edges(START, |_: &Hello| vec!["one", "two"])
        .compile()
        .unwrap();
    let err = app
        .invoke(Hello::update().hello("x".to_owned()), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("At key 'hello'"), "{err}");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Rag {
    query: String,
    answer: String,
    #[reducer(sorted_concat)]
    docs: Vec<String>,
}

fn rewrite_query(s: &Rag) -> RagUpdate {
    Rag::update().query(format!("query: {}", s.query))
}
fn analyzer_one(s: &Rag) -> RagUpdate {
    Rag::update().query(format!("analyzed: {}", s.query))
}
fn retriever_one(_: &Rag) -> RagUpdate {
    Rag::update().docs(vec!["doc1".into(), "doc2".into()])
}
fn retriever_two(_: &Rag) -> RagUpdate {
    Rag::update().docs(vec!["doc3".into(), "doc4".into()])
}

#[tokio::test]
async fn a_join_edge_waits_for_every_source_and_runs_its_target_once() {
    let qa_runs = Arc::new(Mutex::new(0));
    let counter = Arc::clone(&qa_runs);
    let app = StateGraph::<Rag>::new()
        .add_node(node_fn("rewrite_query", rewrite_query))
        .add_node(node_fn("analyzer_one", analyzer_one))
        .add_node(node_fn("retriever_one", retriever_one))
        .add_node(node_fn("retriever_two", retriever_two))
        .add_node(node_fn("qa", move |s: &Rag| {
            *counter.lock().unwrap() += 1;
            Rag::update().answer(s.docs.join(","))
        }))
        .add_edge(START, "rewrite_query")
        .add_edge("rewrite_query", "analyzer_one")
        .add_edge("analyzer_one", "retriever_one")
        .add_edge("rewrite_query", "retriever_two")
        .add_edge(("retriever_one", "retriever_two"), "qa")
        .add_edge("qa", END)
        .compile()
        .unwrap();
    let out = app
        .invoke(
            Rag::update().query("what is weather in sf".into()),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.query, "analyzed: query: what is weather in sf");
    assert_eq!(out.docs, ["doc1", "doc2", "doc3", "doc4"]);
    assert_eq!(out.answer, "doc1,doc2,doc3,doc4");
    assert_eq!(*qa_runs.lock().unwrap(), 1);
}

#[tokio::test]
async fn a_join_inside_a_loop_fires_once_per_round() {
    use futures::StreamExt;
    let app = StateGraph::<Rag>::new()
        .add_node(node_fn("rewrite_query", rewrite_query))
        .add_node(node_fn("analyzer_one", analyzer_one))
        .add_node(node_fn("retriever_one", retriever_one))
        .add_node(node_fn("retriever_two", retriever_two))
        .add_node(node_fn("decider", |_: &Rag| ()))
        .add_node(node_fn("qa", |s: &Rag| {
            Rag::update().answer(s.docs.join(","))
        }))
        .add_edge(START, "rewrite_query")
        .add_conditional_edges("rewrite_query", |_: &Rag| {
            vec!["analyzer_one", "retriever_two"]
        })
        .add_edge("analyzer_one", "retriever_one")
        .add_edge(("retriever_one", "retriever_two"), "decider")
        .add_conditional_edges("decider", |s: &Rag| {
            if s.query.matches("analyzed").count() > 1 {
                "qa"
            } else {
                "rewrite_query"
            }
        })
        .add_edge("qa", END)
        .compile()
        .unwrap();
    let events: Vec<_> = app
        .stream(
            Rag::update().query("what is weather in sf".into()),
            &RunConfig::new(),
            StreamMode::Updates,
        )
        .collect()
        .await;
    let nodes: Vec<String> = events
        .iter()
        .map(|e| match e.as_ref().unwrap() {
            StreamEvent::Updates { node, .. } => node.to_string(),
            _ => panic!("only updates were asked for"),
        })
        .collect();
    assert_eq!(nodes.len(), 11, "{nodes:?}");
    let decider_updates: Vec<usize> = events
        .iter()
        .filter_map(|e| match e.as_ref().unwrap() {
            StreamEvent::Updates { node, updates } if &**node == "decider" => Some(updates.len()),
            _ => None,
        })
        .collect();
    assert_eq!(decider_updates, [0, 0], "the decider writes nothing, twice");
    let out = app
        .invoke(
            Rag::update().query("what is weather in sf".into()),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.docs,
        ["doc1", "doc1", "doc2", "doc2", "doc3", "doc3", "doc4", "doc4"]
    );
    assert_eq!(out.answer, "doc1,doc1,doc2,doc2,doc3,doc3,doc4,doc4");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Trail {
    #[reducer(concat)]
    visited: Vec<String>,
}

fn visit(name: &'static str) -> impl Fn(&Trail) -> TrailUpdate + Send + Sync + 'static {
    move |_: &Trail| Trail::update().visited(vec![name.to_owned()])
}

async fn deferred_run(defer: bool) -> Vec<String> {
    let app = StateGraph::<Trail>::new()
        .add_node(node_fn("a", visit("a")))
        .add_node(node_fn("b", visit("b")))
        .add_node(node_fn("b2", visit("b2")))
        .add_node_with(c, NodeOptions::new().defer(defer))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("b", "b2")
        .add_edge("a", "c")
        .add_edge("b2", "c")
        .compile()
        .unwrap();
    app.invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap()
        .into_state()
        .visited
}

#[node]
fn c(_: &Trail) -> TrailUpdate {
    Trail::update().visited(vec!["c".to_owned()])
}

#[tokio::test]
async fn a_deferred_node_runs_once_after_every_branch_finished() {
    assert_eq!(deferred_run(true).await, ["a", "b", "b2", "c"]);
}

#[tokio::test]
async fn without_defer_the_same_node_runs_once_per_incoming_branch() {
    assert_eq!(deferred_run(false).await, ["a", "b", "b2", "c", "c"]);
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Key {
    #[reducer(add_str)]
    my_key: String,
}

#[tokio::test]
async fn a_join_and_a_plain_edge_from_the_same_source_both_fire() {
    let app = StateGraph::<Key>::new()
        .add_node(node_fn("up", |_: &Key| {
            Key::update().my_key("my_value".into())
        }))
        .add_node(node_fn("side", |_: &Key| ()))
        .add_node(node_fn("other", |_: &Key| {
            Key::update().my_key("_more".into())
        }))
        .add_node(node_fn("down", |_: &Key| ()))
        .add_edge(START, "up")
        .add_edge("up", "side")
        .add_edge("up", "other")
        .add_edge(("up", "side"), "down")
        .add_edge("down", END)
        .compile()
        .unwrap();
    let out = app.invoke(Key::update(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.my_key, "my_value_more");
}

#[tokio::test]
async fn static_edges_fire_in_addition_to_a_command_goto() {
    #[derive(Goto, Clone, Copy, Debug)]
    enum Jump {
        Y,
    }
    #[node]
    fn x(_: &Trail) -> Command<Jump> {
        Command::goto(Jump::Y).update(Trail::update().visited(vec!["x".into()]))
    }
    let app = StateGraph::<Trail>::new()
        .add_node(x)
        .add_node(node_fn("y", visit("y")))
        .add_node(node_fn("z", visit("z")))
        .add_edge(START, x)
        .add_edge(x, "z")
        .compile()
        .unwrap();
    let out = app
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.visited, ["x", "y", "z"]);
}

#[node]
fn seq_one(_: &Trail) -> TrailUpdate {
    Trail::update().visited(vec!["one".into()])
}

#[node]
fn seq_two(_: &Trail) -> TrailUpdate {
    Trail::update().visited(vec!["two".into()])
}

#[tokio::test]
async fn a_sequence_of_different_nodes_is_chained_in_order() {
    let app = StateGraph::<Trail>::new()
        .add_sequence((seq_one, seq_two, c))
        .add_edge(START, seq_one)
        .compile()
        .unwrap();
    let out = app
        .invoke(Trail::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.visited, ["one", "two", "c"]);
}

#[test]
fn an_empty_sequence_is_reported_by_compile() {
    let empty: Vec<c> = Vec::new();
    let err = StateGraph::<Trail>::new()
        .add_node(c)
        .add_edge(START, c)
        .add_sequence(empty)
        .compile()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Sequence requires at least one node."),
        "{err}"
    );
}

#[tokio::test]
async fn an_edge_added_twice_is_one_edge_also_in_a_checkpoint() {
    let app = StateGraph::<Trail>::new()
        .add_node(node_fn("a", visit("a")))
        .add_node(node_fn("b", visit("b")))
        .add_node(node_fn("c", visit("c")))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(("a", "b"), "c")
        .add_edge(("a", "b"), "c")
        .add_edge("a", "c")
        .add_edge("a", "c")
        .compile_with(stategraph::checkpoint::InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("twice");
    let out = app.invoke(Trail::update(), &config).await.unwrap();
    assert_eq!(out.visited, ["a", "b", "c"]);
    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.values.visited, ["a", "b", "c"]);
    assert!(snapshot.next.is_empty());
}

#[test]
fn two_joins_whose_channel_names_coincide_are_reported_by_compile() {
    let err = StateGraph::<Trail>::new()
        .add_node(node_fn("a", visit("a")))
        .add_node(node_fn("b+c", visit("b+c")))
        .add_node(node_fn("a+b", visit("a+b")))
        .add_node(node_fn("c", visit("c")))
        .add_node(node_fn("d", visit("d")))
        .add_edge(START, "a")
        .add_edge(("a+b", "c"), "d")
        .add_edge(("a", "b+c"), "d")
        .compile()
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "the join edges from `a+b`, `c` and from `a`, `b+c` into `d` would share the \
             channel `join:a+b+c:d`; rename the nodes so that no name contains `+`"
        ),
        "{err}"
    );
}
