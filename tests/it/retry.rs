//! RetryPolicy (docs/semantics.md §11.1; scenario 15 of its appendix A with
//! max_attempts = 2).

use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::RetryPolicy;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Value {
    #[reducer(add)]
    value: i64,
}

fn no_wait(attempts: u32) -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(attempts)
        .initial_interval(Duration::ZERO)
        .jitter(false)
}

/// A policy that retries any error, transient or not (the tests below that
/// fail with `NodeError::msg` are about attempts, not about which errors retry).
fn retry_any(attempts: u32) -> RetryPolicy {
    no_wait(attempts).retry_on(|_| true)
}

#[tokio::test]
async fn a_failing_node_runs_max_attempts_times_and_siblings_run_once() {
    let (ones, twos) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (o, t) = (Arc::clone(&ones), Arc::clone(&twos));
    let graph = StateGraph::<Value>::new()
        .retry_policy(retry_any(2))
        .add_node(node_fn("one", move |_: &Value| {
            o.fetch_add(1, Ordering::SeqCst);
            Value::update().value(2)
        }))
        .add_node(node_fn(
            "two",
            move |_: &Value| -> Result<ValueUpdate, NodeError> {
                t.fetch_add(1, Ordering::SeqCst);
                Err(NodeError::msg("I'm not good"))
            },
        ))
        .add_edge(START, "one")
        .add_edge(START, "two")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    assert!(graph
        .invoke(Value::update().value(1), &config)
        .await
        .is_err());
    assert_eq!(
        (ones.load(Ordering::SeqCst), twos.load(Ordering::SeqCst)),
        (1, 2)
    );
    assert!(graph.invoke(None, &config).await.is_err());
    assert_eq!(
        (ones.load(Ordering::SeqCst), twos.load(Ordering::SeqCst)),
        (1, 4)
    );
}

#[tokio::test]
async fn a_node_that_recovers_succeeds_and_sees_its_attempt_number() {
    let graph = StateGraph::<Value>::new()
        .add_node_with(flaky, NodeOptions::new().retry(retry_any(3)))
        .add_edge(START, flaky)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Value::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.value, 3, "succeeded on the third attempt");
}

#[node]
fn flaky(_: &Value, ctx: &Context) -> Result<ValueUpdate, NodeError> {
    if ctx.attempt() < 3 {
        return Err(NodeError::msg(format!("attempt {} failed", ctx.attempt())));
    }
    Ok(Value::update().value(i64::from(ctx.attempt())))
}

#[tokio::test]
async fn the_predicate_decides_and_the_last_error_is_reported() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let graph = StateGraph::<Value>::new()
        .retry_policy(no_wait(5).retry_on(|e| e.to_string().contains("transient")))
        .add_node(node_fn(
            "n",
            move |_: &Value| -> Result<ValueUpdate, NodeError> {
                let k = c.fetch_add(1, Ordering::SeqCst);
                Err(NodeError::msg(if k == 0 { "transient" } else { "fatal" }))
            },
        ))
        .add_edge(START, "n")
        .compile()
        .unwrap();
    let err = graph
        .invoke(Value::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "retried once, then the fatal error stops it"
    );
    let report = format!(
        "{err}: {}",
        std::error::Error::source(&err).expect("the node's error")
    );
    assert!(report.contains("fatal"), "{report}");
}

/// Which errors the default policy retries. LangGraph 1.2.22, the same node
/// raising each error under `RetryPolicy(initial_interval=0.01, jitter=False)`
/// (3 attempts), printed:
///
/// ```text
/// ValueError: attempts=1
/// KeyError: attempts=1
/// ConnectionResetError: attempts=3
/// ConnectionRefusedError: attempts=3
/// TimeoutError: attempts=1
/// Exception: attempts=3
/// ```
///
/// A programming error (here a message, as from a failed parse) runs once, a
/// connection error and an error marked transient run three times. Two
/// differences are by design: an unmarked error of any other type is not
/// retried (Python retries a bare `Exception`), and an I/O timeout is (Python's
/// `TimeoutError` is an `OSError`, which it does not retry; a socket that timed
/// out is the outage a retry is for).
#[tokio::test]
async fn the_default_policy_retries_only_transient_errors() {
    use std::io::{Error, ErrorKind};
    async fn attempts(make: fn() -> NodeError) -> (usize, GraphError) {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let graph = StateGraph::<Value>::new()
            .retry_policy(no_wait(3))
            .add_node(node_fn(
                "flaky",
                move |_: &Value| -> Result<ValueUpdate, NodeError> {
                    c.fetch_add(1, Ordering::SeqCst);
                    Err(make())
                },
            ))
            .add_edge(START, "flaky")
            .compile()
            .unwrap();
        let err = graph
            .invoke(Value::update(), &RunConfig::new())
            .await
            .unwrap_err();
        (calls.load(Ordering::SeqCst), err)
    }
    let (n, err) = attempts(|| NodeError::msg("bad input")).await;
    assert_eq!(n, 1, "{err}");
    let (n, _) = attempts(|| "x".parse::<i64>().unwrap_err().into()).await;
    assert_eq!(n, 1, "a ParseIntError is a programming error");
    let (n, _) = attempts(|| Error::from(ErrorKind::NotFound).into()).await;
    assert_eq!(n, 1, "an I/O error that is not a connection's");
    let (n, _) = attempts(|| Error::from(ErrorKind::ConnectionReset).into()).await;
    assert_eq!(n, 3);
    let (n, _) = attempts(|| Error::from(ErrorKind::ConnectionRefused).into()).await;
    assert_eq!(n, 3);
    let (n, _) = attempts(|| Error::from(ErrorKind::TimedOut).into()).await;
    assert_eq!(n, 3);
    // Under an error of the user's that says what caused it.
    #[derive(Debug, thiserror::Error)]
    #[error("the search service is unreachable")]
    struct SearchDown(#[source] Error);
    let (n, _) = attempts(|| SearchDown(Error::from(ErrorKind::ConnectionAborted)).into()).await;
    assert_eq!(n, 3, "a connection error in the source chain");
    let (n, err) = attempts(|| NodeError::transient(NodeError::msg("busy"))).await;
    assert_eq!(n, 3);
    let GraphError::NodeFailed { source, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(source.to_string(), "busy");
}

/// A subgraph's transient failure is transient for the parent's task that ran
/// it; any other failure is not. LangGraph 1.2.22, a child whose node fails on
/// its first call, run as a parent node with `RetryPolicy(initial_interval=0.01,
/// jitter=False)`, printed:
///
/// ```text
/// ConnectionResetError {'value': 1} calls 2
/// ValueError raised ValueError calls 1
/// ```
#[tokio::test]
async fn a_subgraphs_transient_failure_is_retried_by_the_parent() {
    async fn run(make: fn() -> NodeError) -> (Result<i64, GraphError>, usize) {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let child = StateGraph::<Value>::new()
            .add_node(node_fn(
                "flaky",
                move |_: &Value| -> Result<ValueUpdate, NodeError> {
                    if c.fetch_add(1, Ordering::SeqCst) == 0 {
                        return Err(make());
                    }
                    Ok(Value::update().value(1))
                },
            ))
            .add_edge(START, "flaky")
            .compile()
            .unwrap();
        let parent = StateGraph::<Value>::new()
            .add_node_with(
                stategraph::Subgraph::new("child", child),
                NodeOptions::new().retry(no_wait(3)),
            )
            .add_edge(START, "child")
            .compile()
            .unwrap();
        let out = parent.invoke(Value::update(), &RunConfig::new()).await;
        (out.map(|o| o.value), calls.load(Ordering::SeqCst))
    }
    let (out, calls) =
        run(|| std::io::Error::from(std::io::ErrorKind::ConnectionReset).into()).await;
    assert_eq!((out.unwrap(), calls), (1, 2));
    let (out, calls) = run(|| NodeError::msg("bad")).await;
    assert!(out.is_err());
    assert_eq!(calls, 1);
}

#[tokio::test]
async fn a_panic_is_not_retried() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let graph = StateGraph::<Value>::new()
        .retry_policy(retry_any(3))
        .add_node(node_fn("boom", move |_: &Value| -> ValueUpdate {
            c.fetch_add(1, Ordering::SeqCst);
            panic!("boom")
        }))
        .add_edge(START, "boom")
        .compile()
        .unwrap();
    let err = graph
        .invoke(Value::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NodePanicked { .. }), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

mod timeouts {
    //! `NodeOptions::timeout`: an attempt that runs too long is cancelled and
    //! fails with `NodeTimeout`, which a retry policy may retry.

    use super::*;
    use stategraph::{NodeOptions, NodeTimeout};

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Done {
        attempts: u32,
    }

    /// Hangs on its first attempt, answers at once on the next ones.
    #[node]
    async fn work(_: &Done, ctx: &Context) -> DoneUpdate {
        if ctx.attempt() == 1 {
            std::future::pending::<()>().await;
        }
        Done::update().attempts(ctx.attempt())
    }

    fn graph(options: NodeOptions) -> CompiledGraph<Done> {
        StateGraph::<Done>::new()
            .add_node_with(work, options)
            .add_edge(START, work)
            .compile()
            .unwrap()
    }

    #[tokio::test]
    async fn an_attempt_past_its_timeout_fails_the_run_with_node_timeout() {
        let app = graph(NodeOptions::new().timeout(Duration::from_millis(20)));
        let err = app
            .invoke(Done::update(), &RunConfig::new())
            .await
            .unwrap_err();
        let GraphError::NodeFailed { node, source, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(node, "work");
        let timeout = source.downcast_ref::<NodeTimeout>().expect("a NodeTimeout");
        assert_eq!(timeout.limit, Duration::from_millis(20));
        assert!(
            source
                .to_string()
                .contains("did not finish within its timeout"),
            "{source}"
        );
    }

    #[tokio::test]
    async fn a_timed_out_attempt_is_retried() {
        let app = graph(
            NodeOptions::new()
                .timeout(Duration::from_millis(20))
                .retry(no_wait(3)),
        );
        let out = app.invoke(Done::update(), &RunConfig::new()).await.unwrap();
        assert_eq!(out.attempts, 2);
    }

    /// Set by `sleeper` after its sleep.
    static SLEEPER_WOKE: AtomicBool = AtomicBool::new(false);

    /// A sync node blocking its thread for 3 s.
    #[node]
    fn sleeper(_: &Done) -> DoneUpdate {
        std::thread::sleep(Duration::from_secs(3));
        SLEEPER_WOKE.store(true, Ordering::SeqCst);
        Done::update().attempts(1)
    }

    #[tokio::test]
    async fn a_sync_node_past_its_timeout_is_abandoned_and_the_run_fails_at_once() {
        let app = StateGraph::<Done>::new()
            .add_node_with(
                sleeper,
                NodeOptions::new().timeout(Duration::from_millis(200)),
            )
            .add_edge(START, sleeper)
            .compile()
            .unwrap();
        let err = app
            .invoke(Done::update(), &RunConfig::new())
            .await
            .unwrap_err();
        // The run did not wait for the node's thread.
        assert!(!SLEEPER_WOKE.load(Ordering::SeqCst));
        let GraphError::NodeFailed { node, source, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(node, "sleeper");
        let timeout = source.downcast_ref::<NodeTimeout>().expect("a NodeTimeout");
        assert_eq!(timeout.limit, Duration::from_millis(200));
        assert!(timeout.abandoned);
        assert!(source.to_string().contains("was abandoned"), "{source}");
    }

    /// Set by `sleeper_once` after the sleep of its first attempt.
    static FIRST_ATTEMPT_WOKE: AtomicBool = AtomicBool::new(false);

    /// A sync node blocking its thread for 3 s on its first attempt only.
    #[node]
    fn sleeper_once(_: &Done, ctx: &Context) -> DoneUpdate {
        if ctx.attempt() == 1 {
            std::thread::sleep(Duration::from_secs(3));
            FIRST_ATTEMPT_WOKE.store(true, Ordering::SeqCst);
        }
        Done::update().attempts(ctx.attempt())
    }

    #[tokio::test]
    async fn a_sync_node_past_its_timeout_is_retried() {
        let options = NodeOptions::new()
            .timeout(Duration::from_millis(200))
            .retry(no_wait(3));
        let app = StateGraph::<Done>::new()
            .add_node_with(sleeper_once, options)
            .add_edge(START, sleeper_once)
            .compile()
            .unwrap();
        let out = app.invoke(Done::update(), &RunConfig::new()).await.unwrap();
        assert_eq!(out.attempts, 2);
        assert!(!FIRST_ATTEMPT_WOKE.load(Ordering::SeqCst));
    }
}

/// A closure node takes options like any node: here its own retry policy, and
/// its async twin a name of its own.
#[tokio::test]
async fn a_closure_node_takes_node_options() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let graph = StateGraph::<Value>::new()
        .add_node_with(
            node_fn(
                "flaky",
                move |_: &Value| -> Result<ValueUpdate, NodeError> {
                    match counted.fetch_add(1, Ordering::SeqCst) {
                        0 | 1 => Err(NodeError::msg("not yet")),
                        _ => Ok(Value::update().value(10)),
                    }
                },
            ),
            NodeOptions::new().retry(retry_any(3)),
        )
        .add_node_with(
            async_node_fn("later", |s: Arc<Value>, _ctx| async move {
                Value::update().value(s.value)
            }),
            NodeOptions::new().name("double"),
        )
        .add_edge(START, "flaky")
        .add_edge("flaky", "double")
        .compile()
        .unwrap();
    let out = graph
        .invoke(Value::update().value(1), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.value, 22);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// The deprecated closure methods still build the same nodes.
#[tokio::test]
#[allow(deprecated)]
async fn the_deprecated_closure_methods_still_work() {
    let graph = StateGraph::<Value>::new()
        .add_node_fn("one", |_: &Value| Value::update().value(1))
        .add_async_node_fn("two", |_: Arc<Value>, _ctx| async {
            Value::update().value(2)
        })
        .add_edge(START, "one")
        .add_edge("one", "two")
        .compile()
        .unwrap();
    let out = graph
        .invoke(Value::update().value(0), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.value, 3);
}
