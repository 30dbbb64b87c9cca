//! Tasks of one superstep run concurrently, and their writes are applied in a
//! deterministic order (docs/semantics.md §2.6, §2.7).

use stategraph::prelude::*;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Barrier;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Out {
    #[reducer(concat)]
    order: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_one_step_run_at_the_same_time() {
    // Each task waits for the other: this completes only if both run concurrently.
    let barrier = Arc::new(Barrier::new(2));
    let (b1, b2) = (Arc::clone(&barrier), Arc::clone(&barrier));
    let app = StateGraph::<Out>::new()
        .add_node(async_node_fn("left", move |_: Arc<Out>, _| {
            let b = Arc::clone(&b1);
            async move {
                b.wait().await;
                Out::update().order(vec!["left".into()])
            }
        }))
        .add_node(async_node_fn("right", move |_: Arc<Out>, _| {
            let b = Arc::clone(&b2);
            async move {
                b.wait().await;
                Out::update().order(vec!["right".into()])
            }
        }))
        .add_edge(START, "left")
        .add_edge(START, "right")
        .compile()
        .unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        app.invoke(Out::update(), &RunConfig::new()),
    )
    .await
    .expect("the two tasks deadlocked: they did not run concurrently")
    .unwrap();
    assert_eq!(out.order, ["left", "right"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_follow_task_order_not_completion_order() {
    // "a_slow" finishes last but sorts first by name: its write comes first.
    let app = StateGraph::<Out>::new()
        .add_node(async_node_fn("a_slow", |_: Arc<Out>, _| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Out::update().order(vec!["a_slow".into()])
        }))
        .add_node(node_fn("b_fast", |_: &Out| {
            Out::update().order(vec!["b_fast".into()])
        }))
        .add_edge(START, "a_slow")
        .add_edge(START, "b_fast")
        .compile()
        .unwrap();
    for _ in 0..5 {
        let out = app.invoke(Out::update(), &RunConfig::new()).await.unwrap();
        assert_eq!(out.order, ["a_slow", "b_fast"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_task_cancels_its_slow_sibling() {
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let app = StateGraph::<Out>::new()
        .add_node(async_node_fn("slow", move |_: Arc<Out>, _| {
            let flag = Arc::clone(&flag);
            async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }))
        .add_node(node_fn("fail", |_: &Out| -> Result<(), NodeError> {
            Err(NodeError::msg("no"))
        }))
        .add_edge(START, "slow")
        .add_edge(START, "fail")
        .compile()
        .unwrap();
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        app.invoke(Out::update(), &RunConfig::new()),
    )
    .await
    .expect("the failure did not cancel the sibling")
    .unwrap_err();
    assert!(err.to_string().contains("node `fail` failed"), "{err}");
    assert!(!finished.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn a_graph_runs_on_a_non_tokio_executor() {
    let app = StateGraph::<Out>::new()
        .add_node(node_fn("x", |_: &Out| {
            Out::update().order(vec!["x".into()])
        }))
        .add_node(node_fn("y", |_: &Out| {
            Out::update().order(vec!["y".into()])
        }))
        .add_edge(START, "x")
        .add_edge(START, "y")
        .compile()
        .unwrap();
    let out = futures::executor::block_on(app.invoke(Out::update(), &RunConfig::new())).unwrap();
    assert_eq!(out.order, ["x", "y"]);
}

mod one_thread_at_a_time {
    //! Two runs of one thread must not interleave their checkpoints: the second
    //! fails at once (issue 7 §4); other threads are not affected.

    use super::*;
    use stategraph::checkpoint::InMemorySaver;
    use stategraph::ErrorCode;
    use tokio::sync::{mpsc, Semaphore};

    /// A graph whose node reports that it started, then waits for a permit.
    fn gated(gate: Arc<Semaphore>, entered: mpsc::UnboundedSender<()>) -> CompiledGraph<Out> {
        StateGraph::<Out>::new()
            .add_node(async_node_fn("slow", move |_: Arc<Out>, _| {
                let (gate, entered) = (Arc::clone(&gate), entered.clone());
                async move {
                    let _ = entered.send(());
                    gate.acquire().await.map(|p| p.forget()).ok();
                    Out::update().order(vec!["slow".into()])
                }
            }))
            .add_edge(START, "slow")
            .compile_with(InMemorySaver::new())
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_run_of_a_running_thread_fails_clearly() {
        let gate = Arc::new(Semaphore::new(0));
        let (entered, mut started) = mpsc::unbounded_channel();
        let app = gated(Arc::clone(&gate), entered);
        let run = |thread: &'static str| {
            let app = app.clone();
            tokio::spawn(async move { app.invoke(Out::update(), &RunConfig::thread(thread)).await })
        };
        let first = run("t");
        started.recv().await.unwrap(); // the first run holds thread `t`
        let err = app
            .invoke(Out::update(), &RunConfig::thread("t"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, GraphError::ThreadBusy { thread_id, .. } if thread_id == "t"),
            "{err}"
        );
        assert!(err.to_string().contains("already running"), "{err}");
        // Another thread runs meanwhile.
        let other = run("u");
        started.recv().await.unwrap();
        gate.add_permits(2);
        first.await.unwrap().unwrap();
        other.await.unwrap().unwrap();
        // Once the first run ended, the thread is free again.
        let again = run("t");
        gate.add_permits(1);
        let out = again.await.unwrap().unwrap();
        assert_eq!(out.order, ["slow", "slow"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_run_releases_its_thread() {
        let gate = Arc::new(Semaphore::new(0));
        let (entered, mut started) = mpsc::unbounded_channel();
        let app = gated(Arc::clone(&gate), entered);
        let config = RunConfig::thread("t");
        {
            let run = app.invoke(Out::update(), &config);
            tokio::pin!(run);
            tokio::select! {
                _ = &mut run => panic!("the run cannot finish without a permit"),
                _ = started.recv() => {} // it holds the thread; drop it here
            }
        }
        gate.add_permits(1);
        app.invoke(None, &config).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deleting_or_pruning_a_running_thread_is_refused() {
        let gate = Arc::new(Semaphore::new(0));
        let (entered, mut started) = mpsc::unbounded_channel();
        let app = gated(Arc::clone(&gate), entered);
        let saver = Arc::clone(app.checkpointer().unwrap());
        let first = tokio::spawn({
            let app = app.clone();
            async move { app.invoke(Out::update(), &RunConfig::thread("t")).await }
        });
        started.recv().await.unwrap();
        // The run holds the thread: deleting it under the run would leave the
        // run's next checkpoint pointing at values that no longer exist.
        let deleted = saver.delete_thread("t").await;
        assert!(
            matches!(&deleted, Err(stategraph::checkpoint::CheckpointError::ThreadBusy { thread_id }) if thread_id == "t"),
            "{deleted:?}"
        );
        let pruned = saver
            .prune("t", stategraph::checkpoint::Retention::KeepLast(1))
            .await;
        assert!(
            matches!(
                &pruned,
                Err(stategraph::checkpoint::CheckpointError::ThreadBusy { .. })
            ),
            "{pruned:?}"
        );
        gate.add_permits(1);
        let out = first.await.unwrap().unwrap();
        assert_eq!(out.order, ["slow"]);
        // The run ended: both go through, and the thread is gone.
        assert_eq!(
            saver
                .prune("t", stategraph::checkpoint::Retention::KeepLast(1))
                .await
                .unwrap(),
            2
        );
        saver.delete_thread("t").await.unwrap();
        assert!(app
            .get_state(&RunConfig::thread("t"))
            .await
            .unwrap()
            .values
            .order
            .is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn updating_a_subgraphs_state_waits_for_no_run_of_the_thread() {
        #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
        struct Child {
            #[reducer(std::ops::Add::add)]
            n: u32,
        }
        let child = StateGraph::<Child>::new()
            .add_node(node_fn("c", |_: &Child| Child::update().n(1)))
            .add_edge(START, "c")
            .compile()
            .unwrap();
        let sub = stategraph::Subgraph::mapped(
            "sub",
            child,
            |_: &Out| Child::update(),
            |_: Child| Out::update().order(vec!["sub".into()]),
        )
        .checkpoints(stategraph::SubgraphCheckpoints::Persistent);
        let gate = Arc::new(Semaphore::new(0));
        let (entered, mut started) = mpsc::unbounded_channel::<()>();
        let app = StateGraph::<Out>::new()
            .add_node(sub)
            .add_node(async_node_fn("slow", move |_: Arc<Out>, _| {
                let (gate, entered) = (Arc::clone(&gate), entered.clone());
                async move {
                    let _ = entered.send(());
                    gate.acquire().await.map(|p| p.forget()).ok();
                    Out::update().order(vec!["slow".into()])
                }
            }))
            .add_edge(START, "sub")
            .add_edge("sub", "slow")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let thread = RunConfig::thread("t");
        let first = tokio::spawn({
            let (app, thread) = (app.clone(), thread.clone());
            async move { app.invoke(Out::update(), &thread).await }
        });
        started.recv().await.unwrap();
        let sub_graph = app.subgraph_at::<Child>("sub").unwrap();
        let at_sub = thread.clone().with_checkpoint_ns("sub");
        let busy = sub_graph
            .update_state(&at_sub, Child::update().n(10), None)
            .await;
        assert!(
            matches!(&busy, Err(GraphError::ThreadBusy { thread_id, .. }) if thread_id == "t"),
            "{busy:?}"
        );
        first.abort();
        assert!(first.await.unwrap_err().is_cancelled());
        // The run is gone: the subgraph's state can be updated.
        sub_graph
            .update_state(&at_sub, Child::update().n(10), None)
            .await
            .unwrap();
        assert_eq!(sub_graph.get_state(&at_sub).await.unwrap().values.n, 11);
    }

    /// A task that runs its persistent subgraph again (its retry) is not the
    /// second task the step refuses.
    #[tokio::test]
    async fn a_retried_task_runs_its_persistent_subgraph_again() {
        #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
        struct Child {
            n: u32,
        }
        let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&attempts);
        let child = StateGraph::<Child>::new()
            .add_node(node_fn("c", move |s: &Child| {
                if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    return Err(NodeError::transient(NodeError::msg("flaky")));
                }
                Ok(Child::update().n(s.n + 1))
            }))
            .add_edge(START, "c")
            .compile()
            .unwrap();
        let sub = stategraph::Subgraph::mapped(
            "sub",
            child,
            |_: &Out| Child::update(),
            |done: Child| Out::update().order(vec![done.n.to_string()]),
        )
        .checkpoints(stategraph::SubgraphCheckpoints::Persistent);
        let retry = stategraph::RetryPolicy::new()
            .max_attempts(2)
            .initial_interval(Duration::ZERO)
            .jitter(false);
        let app = StateGraph::<Out>::new()
            .add_node_with(sub, stategraph::NodeOptions::new().retry(retry))
            .add_edge(START, "sub")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let out = app
            .invoke(Out::update(), &RunConfig::thread("t"))
            .await
            .unwrap();
        assert_eq!(out.order, ["1"]);
        assert_eq!(attempts.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn parallel_tasks_of_one_persistent_subgraph_are_an_error() {
        #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
        struct Child {
            n: u32,
        }
        let child = StateGraph::<Child>::new()
            .add_node(node_fn("c", |s: &Child| Child::update().n(s.n + 1)))
            .add_edge(START, "c")
            .compile()
            .unwrap();
        let sub = stategraph::Subgraph::mapped(
            "sub",
            child,
            |_: &u32| Child::update(),
            |_: Child| Out::update(),
        )
        .checkpoints(stategraph::SubgraphCheckpoints::Persistent);
        let target = sub.clone();
        let app = StateGraph::<Out>::new()
            .add_node(sub)
            .add_conditional_edges(START, move |_: &Out| {
                vec![send(&target, 1u32), send(&target, 2u32)]
            })
            .compile_with(InMemorySaver::new())
            .unwrap();
        // Under `exit` the in-memory saver's subgraph runs complete within
        // their first poll, one after the other: refused all the same.
        use stategraph::Durability;
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let thread = RunConfig::thread(format!("{durability:?}")).with_durability(durability);
            let err = app.invoke(Out::update(), &thread).await.unwrap_err();
            let report = format!(
                "{err}: {}",
                std::error::Error::source(&err).expect("the node's error")
            );
            assert!(
                report.contains("namespace `sub`"),
                "{durability:?}: {report}"
            );
            let mut source = std::error::Error::source(&err);
            let mut busy = None;
            while let Some(e) = source {
                if let Some(GraphError::ThreadBusy { .. }) = e.downcast_ref::<GraphError>() {
                    busy = e.downcast_ref::<GraphError>().and_then(GraphError::code);
                }
                source = e.source();
            }
            assert_eq!(busy, Some(ErrorCode::MultipleSubgraphs), "{durability:?}");
        }
    }
}
