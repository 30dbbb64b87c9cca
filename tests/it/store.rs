//! The store in the graph (issue 23 item 5): nodes, routers and subgraphs reach
//! the store the graph was compiled with through their context; it outlives
//! threads; time travel does not undo its writes.

use serde_json::json;
use stategraph::checkpoint::{InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::store::{InMemoryStore, Namespace, SearchOp, StoreError};
use stategraph::Subgraph;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Chat {
    user: String,
    said: String,
    reply: String,
}

fn memories(user: &str) -> Result<Namespace, StoreError> {
    Namespace::new(["memories", user])
}

#[node]
async fn remember(s: &Chat, ctx: &Context) -> Result<ChatUpdate, NodeError> {
    let store = ctx.store()?;
    let ns = memories(&s.user)?;
    let n = store
        .search(SearchOp::new(ns.clone()).limit(100))
        .await?
        .len();
    store
        .put(&ns, &format!("m{n}"), json!({"text": s.said}))
        .await?;
    Ok(Chat::update())
}

#[node]
async fn recall(s: &Chat, ctx: &Context) -> Result<ChatUpdate, NodeError> {
    let found = ctx
        .store()?
        .search(SearchOp::new(memories(&s.user)?))
        .await?;
    let known: Vec<String> = found
        .iter()
        .filter_map(|i| i.value["text"].as_str().map(str::to_owned))
        .collect();
    Ok(Chat::update().reply(known.join("; ")))
}

fn chat() -> StateGraph<Chat> {
    StateGraph::<Chat>::new()
        .add_node(remember)
        .add_node(recall)
        .add_edge(START, "remember")
        .add_edge("remember", "recall")
}

fn said(user: &str, text: &str) -> ChatUpdate {
    Chat::update().user(user.to_owned()).said(text.to_owned())
}

#[tokio::test]
async fn nodes_share_the_store_across_threads() {
    let store = InMemoryStore::new();
    let app = chat()
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .store(store.clone()),
        )
        .unwrap();
    app.invoke(said("alice", "I'm vegetarian"), &RunConfig::thread("1"))
        .await
        .unwrap();
    let out = app
        .invoke(said("alice", "any plans?"), &RunConfig::thread("2"))
        .await
        .unwrap();
    // Thread 2 sees what thread 1 stored, most recently updated first.
    // Python (the same graph, runtime.store, InMemoryStore): reply == "I'm
    // vegetarian; any plans?": its in-memory store keeps insertion order, its
    // SQLite and PostgreSQL stores order by updated_at DESC, as all ours do.
    assert_eq!(out.reply, "any plans?; I'm vegetarian");
    let bob = app
        .invoke(said("bob", "hello"), &RunConfig::thread("3"))
        .await
        .unwrap();
    assert_eq!(bob.reply, "hello", "namespaces keep users apart");
    assert_eq!(store.len(), 3);
    assert!(app.store().is_some());
}

#[tokio::test]
async fn a_graph_without_a_store_fails_the_node_with_a_clear_error() {
    let app = chat().compile().unwrap();
    let err = app
        .invoke(said("alice", "hi"), &RunConfig::default())
        .await
        .unwrap_err();
    let GraphError::NodeFailed { node, source, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(node, "remember");
    assert!(source.is::<StoreError>(), "{source}");
    assert!(source.to_string().contains("has no store"), "{source}");
}

#[tokio::test]
async fn subgraphs_reach_the_parents_store() {
    let parents = InMemoryStore::new();
    let own = InMemoryStore::new();
    // The inner graph was compiled with a store of its own; run as a subgraph
    // it uses its parent's (LangGraph passes the parent's store down).
    let inner = chat()
        .compile_with(CompileOptions::new().store(own.clone()))
        .unwrap();
    let outer = StateGraph::<Chat>::new()
        .add_node(Subgraph::new("inner", inner.clone()))
        .add_edge(START, "inner")
        .compile_with(CompileOptions::new().store(parents.clone()))
        .unwrap();
    let out = outer
        .invoke(said("carol", "likes tea"), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.reply, "likes tea");
    assert_eq!((parents.len(), own.len()), (1, 0));
    // Run on its own, the inner graph uses its own store.
    inner
        .invoke(said("carol", "likes tea"), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!((parents.len(), own.len()), (1, 1));
}

#[tokio::test]
async fn routers_reach_the_store() {
    let with = InMemoryStore::new();
    let graph = || {
        StateGraph::<Chat>::new()
            .add_node(node_fn("start", |_: &Chat| Chat::update()))
            .add_node(node_fn("stored", |_: &Chat| {
                Chat::update().reply("has a store".to_owned())
            }))
            .add_node(node_fn("bare", |_: &Chat| {
                Chat::update().reply("no store".to_owned())
            }))
            .add_edge(START, "start")
            .add_conditional_edges("start", |_: &Chat, ctx: &Context| {
                if ctx.store().is_ok() {
                    "stored"
                } else {
                    "bare"
                }
            })
    };
    let app = graph()
        .compile_with(CompileOptions::new().store(with))
        .unwrap();
    let out = app
        .invoke(Chat::update(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.reply, "has a store");
    let out = graph()
        .compile()
        .unwrap()
        .invoke(Chat::update(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.reply, "no store");
}

/// LangGraph: replaying a thread from an earlier checkpoint re-runs its nodes;
/// what they wrote to the store before stays (the store has no checkpoints).
#[tokio::test]
async fn time_travel_does_not_undo_store_writes() {
    let store = InMemoryStore::new();
    let app = chat()
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .store(store.clone()),
        )
        .unwrap();
    let config = RunConfig::thread("t");
    app.invoke(said("dan", "first"), &config).await.unwrap();
    let history = app
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    let before_remember = history
        .iter()
        .find(|s| s.next == ["remember"])
        .expect("a checkpoint before `remember` ran");
    // Replay from before `remember`: it runs again and stores a second memory;
    // the first one is still there.
    let out = app
        .invoke(None, &RunConfig::at_checkpoint(&before_remember.config))
        .await
        .unwrap();
    // Python (the same graph and replay): {'reply': 'first; first'}, and the
    // store then holds 2 items.
    assert_eq!(out.reply, "first; first");
    assert_eq!(store.len(), 2);
}
