//! CachePolicy (docs/semantics.md §11.3): a node's output is reused for an input
//! it has seen, its edges and routers still run; TTL, clearing, Send payloads.

use stategraph::cache::{CachePolicy, InMemoryCache};
use stategraph::prelude::*;
use stategraph::NodeOptions;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Q {
    question: String,
    answer: String,
    #[reducer(concat)]
    trail: Vec<String>,
}

fn counted(calls: &Arc<AtomicUsize>) -> impl Fn(&Q) -> QUpdate + Send + Sync + 'static {
    let calls = Arc::clone(calls);
    move |q: &Q| {
        calls.fetch_add(1, Ordering::SeqCst);
        Q::update()
            .answer(q.question.to_uppercase())
            .trail(vec!["model".into()])
    }
}

fn app(calls: &Arc<AtomicUsize>, policy: CachePolicy) -> CompiledGraph<Q> {
    StateGraph::<Q>::new()
        .add_node(node_fn("model", counted(calls)))
        .add_node(node_fn("after", |_: &Q| {
            Q::update().trail(vec!["after".into()])
        }))
        .cache_policy("model", policy)
        .add_edge(START, "model")
        .add_conditional_edges(
            "model",
            |q: &Q| {
                if q.answer.is_empty() {
                    END
                } else {
                    "after"
                }
            },
        )
        .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
        .unwrap()
}

fn ask(q: &str) -> QUpdate {
    Q::update().question(q.into())
}

#[tokio::test]
async fn a_cached_node_does_not_run_again_and_its_routes_still_fire() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(&calls, CachePolicy::new());
    for _ in 0..3 {
        let out = app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
        assert_eq!(out.answer, "HI");
        assert_eq!(
            out.trail,
            ["model", "after"],
            "the router ran on the cached output"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Another input is another entry.
    app.invoke(ask("ho"), &RunConfig::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn entries_expire_after_the_ttl() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(&calls, CachePolicy::new().ttl(Duration::ZERO));
    for _ in 0..3 {
        app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn clearing_the_cache_runs_the_node_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = app(&calls, CachePolicy::new());
    app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    app.clear_cache(Some(&["other"])).unwrap();
    app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    app.clear_cache(Some(&["model"])).unwrap();
    app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    app.clear_cache(None).unwrap();
    app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn without_a_cache_the_policy_has_no_effect_and_clearing_is_an_error() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = StateGraph::<Q>::new()
        .add_node(node_fn("model", counted(&calls)))
        .cache_policy("model", CachePolicy::new())
        .add_edge(START, "model")
        .compile()
        .unwrap();
    app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    app.invoke(ask("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let err = app.clear_cache(None).unwrap_err();
    assert!(
        err.to_string().contains("No cache is set for this graph"),
        "{err}"
    );
}

#[tokio::test]
async fn a_cache_policy_for_an_unknown_node_is_reported_by_compile() {
    let err = StateGraph::<Q>::new()
        .cache_policy("nope", CachePolicy::new())
        .add_node(node_fn("model", |_: &Q| {}))
        .add_edge(START, "model")
        .compile()
        .unwrap_err();
    assert!(
        err.to_string().contains("cache_policy names node `nope`"),
        "{err}"
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Fan {
    items: Vec<u32>,
    #[reducer(concat)]
    out: Vec<u32>,
}

/// How many times `square` really ran (only the test below uses it).
static SQUARES: AtomicUsize = AtomicUsize::new(0);

#[node]
fn square(x: &u32) -> FanUpdate {
    SQUARES.fetch_add(1, Ordering::SeqCst);
    Fan::update().out(vec![x * x])
}

#[tokio::test]
async fn send_tasks_are_cached_by_payload() {
    let app = StateGraph::<Fan>::new()
        .add_node_with(square, NodeOptions::new().cache(CachePolicy::new()))
        .add_conditional_edges(START, |f: &Fan| {
            f.items.iter().map(|x| send(square, *x)).collect::<Vec<_>>()
        })
        .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
        .unwrap();
    let out = app
        .invoke(Fan::update().items(vec![2, 3, 2]), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.out, [4, 9, 4]);
    // Both 2s ran in the same step (neither was cached yet when they started).
    assert_eq!(SQUARES.load(Ordering::SeqCst), 3);
    let out = app
        .invoke(Fan::update().items(vec![3, 4]), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.out, [9, 16]);
    assert_eq!(
        SQUARES.load(Ordering::SeqCst),
        4,
        "3 came from the cache, 4 ran"
    );
}
