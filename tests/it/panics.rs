//! Panics in code of yours that the engine runs outside a node's body — a
//! reducer, a router, a `Serialize` or `Deserialize` impl, a retry policy, a
//! checkpointer — end the run with `GraphError::Panicked` naming the site. The
//! process survives, the thread is free for the next run (no `ThreadBusy`), and
//! `get_state` shows the last checkpoint stored before the panic.

use serde::{Deserializer, Serializer};
use stategraph::cache::{CachePolicy, InMemoryCache};
use stategraph::checkpoint::{Checkpointer, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::{Durability, PanicSite, RetryPolicy, SerdeValue, StateSnapshot};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The thread is at the checkpoint stored before the panic, with `next` to
/// run; a second run fails again at the same site (it is not `ThreadBusy`: the
/// first run released the thread) and leaves the thread where it was.
async fn the_thread_is_free_and_unchanged<S: stategraph::State + std::fmt::Debug>(
    app: &CompiledGraph<S>,
    config: &RunConfig,
    first: &GraphError,
    next: &[&str],
) -> StateSnapshot<S> {
    let snapshot = app.get_state(config).await.unwrap();
    assert_eq!(snapshot.next, next);
    let again = app.invoke(None, config).await.unwrap_err();
    match (&again, first) {
        (GraphError::Panicked { site, .. }, GraphError::Panicked { site: before, .. }) => {
            assert_eq!(
                std::mem::discriminant(site),
                std::mem::discriminant(before),
                "{again}"
            )
        }
        _ => panic!("expected the same panic again, got {again:?}"),
    }
    let after = app.get_state(config).await.unwrap();
    assert_eq!(after.config, snapshot.config);
    snapshot
}

mod reducer {
    use super::*;

    fn add_unless_13(total: u32, n: u32) -> u32 {
        if n == 13 {
            panic!("13 is unlucky");
        }
        total + n
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Tally {
        #[reducer(add_unless_13)]
        total: u32,
    }

    #[tokio::test]
    async fn a_panicking_reducer_names_its_field_and_step() {
        let app = StateGraph::<Tally>::new()
            .add_node(node_fn("one", |_: &Tally| Tally::update().total(1)))
            .add_node(node_fn("unlucky", |_: &Tally| Tally::update().total(13)))
            .add_edge(START, "one")
            .add_edge("one", "unlucky")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("reducer");
        let err = app.invoke(Tally::update(), &config).await.unwrap_err();
        let GraphError::Panicked {
            site: PanicSite::Reducer { field, step },
            message,
        } = &err
        else {
            panic!("expected the reducer's panic, got {err:?}");
        };
        assert_eq!(
            (field.as_str(), *step, message.as_str()),
            ("total", 2, "13 is unlucky")
        );
        assert!(
            err.to_string()
                .starts_with("the reducer of field `total` (step 2) panicked: 13 is unlucky;"),
            "{err}"
        );
        // `unlucky` completed: its write is stored, and applying it to the
        // latest snapshot panics again, as LangGraph 1.2.22's `get_state`
        // raises the reducer's error. The checkpoint itself is as stored.
        let latest = app.get_state(&config).await.unwrap_err();
        assert!(
            matches!(
                &latest,
                GraphError::Panicked {
                    site: PanicSite::Reducer { .. },
                    ..
                }
            ),
            "{latest:?}"
        );
        let newest = ListOptions {
            limit: Some(1),
            ..ListOptions::default()
        };
        let history = app.get_state_history(&config, &newest).await.unwrap();
        let snapshot = &history[0];
        assert_eq!(snapshot.next, ["unlucky"]);
        assert_eq!(snapshot.values.total, 1);
        assert_eq!(snapshot.tasks[0].result.as_ref().map(Vec::len), Some(1));
        let again = app.invoke(None, &config).await.unwrap_err();
        assert!(
            matches!(
                &again,
                GraphError::Panicked {
                    site: PanicSite::Reducer { .. },
                    ..
                }
            ),
            "{again:?}"
        );
        let after = app.get_state_history(&config, &newest).await.unwrap();
        assert_eq!(after[0].config, snapshot.config);
    }

    #[tokio::test]
    async fn without_a_saver_the_run_fails_the_same_way() {
        let app = StateGraph::<Tally>::new()
            .add_node(node_fn("unlucky", |_: &Tally| Tally::update().total(13)))
            .add_edge(START, "unlucky")
            .compile()
            .unwrap();
        let err = app
            .invoke(Tally::update(), &RunConfig::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, GraphError::Panicked { site: PanicSite::Reducer { field, step: 1 }, .. } if field == "total"),
            "{err:?}"
        );
    }
}

mod router {
    use super::*;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Count {
        n: u32,
    }

    #[tokio::test]
    async fn a_panicking_router_names_its_node_and_task() {
        let app = StateGraph::<Count>::new()
            .add_node(node_fn("count", |s: &Count| Count::update().n(s.n + 1)))
            .add_node(node_fn("after", |_: &Count| ()))
            .add_edge(START, "count")
            .add_conditional_edges("count", |s: &Count| -> &'static str {
                if s.n > 0 {
                    panic!("no route for {}", s.n);
                }
                "after"
            })
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("router");
        let err = app.invoke(Count::update(), &config).await.unwrap_err();
        let GraphError::Panicked {
            site:
                PanicSite::Router {
                    node,
                    task_id,
                    step,
                },
            message,
        } = &err
        else {
            panic!("expected the router's panic, got {err:?}");
        };
        assert_eq!(
            (node.as_str(), *step, message.as_str()),
            ("count", 1, "no route for 1")
        );
        assert!(!task_id.is_empty());
        assert!(
            err.to_string().starts_with(&format!(
                "the router of a conditional edge from node `count` (task {task_id}, step 1) \
                 panicked: no route for 1;"
            )),
            "{err}"
        );
        let snapshot = the_thread_is_free_and_unchanged(&app, &config, &err, &["count"]).await;
        assert_eq!(snapshot.values.n, 0);
        assert_eq!(snapshot.tasks[0].id, *task_id);
    }
}

mod serialize {
    use super::*;

    /// A value whose `Serialize` impl panics on the text "unwritable".
    #[derive(Clone, Debug, Default, PartialEq)]
    struct Note(String);

    impl Serialize for Note {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            if self.0 == "unwritable" {
                panic!("cannot write {:?}", self.0);
            }
            serializer.serialize_str(&self.0)
        }
    }

    impl<'de> Deserialize<'de> for Note {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            String::deserialize(deserializer).map(Note)
        }
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Notes {
        note: Note,
    }

    fn note(text: &'static str) -> impl Fn(&Notes) -> NotesUpdate + Send + Sync + 'static {
        move |_: &Notes| Notes::update().note(Note(text.to_owned()))
    }

    #[tokio::test]
    async fn a_panic_serialising_a_checkpoint_names_the_field_and_step() {
        for durability in [Durability::Sync, Durability::Async] {
            let app = StateGraph::<Notes>::new()
                .add_node(node_fn("fine", note("fine")))
                .add_node(node_fn("bad", note("unwritable")))
                .add_edge(START, "fine")
                .add_edge("fine", "bad")
                .compile_with(InMemorySaver::new())
                .unwrap();
            let config = RunConfig::thread(format!("{durability:?}")).with_durability(durability);
            let err = app.invoke(Notes::update(), &config).await.unwrap_err();
            let GraphError::Panicked {
                site: PanicSite::Serializing { value, step },
                message,
            } = &err
            else {
                panic!("expected the Serialize impl's panic, got {err:?}");
            };
            assert_eq!(value, &SerdeValue::StateField("note".to_owned()));
            assert_eq!(*step, 2);
            assert_eq!(message, "cannot write \"unwritable\"");
            let snapshot = the_thread_is_free_and_unchanged(&app, &config, &err, &["bad"]).await;
            assert_eq!(snapshot.values.note, Note("fine".to_owned()));
        }
    }

    #[node]
    fn cached(_: &Notes) -> NotesUpdate {
        Notes::update()
    }

    #[tokio::test]
    async fn a_panic_hashing_a_cached_nodes_input_names_the_node() {
        let app = StateGraph::<Notes>::new()
            .add_node_with(cached, NodeOptions::new().cache(CachePolicy::new()))
            .add_edge(START, cached)
            .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
            .unwrap();
        let input = Notes::update().note(Note("unwritable".to_owned()));
        let err = app.invoke(input, &RunConfig::new()).await.unwrap_err();
        assert!(
            matches!(
                &err,
                GraphError::Panicked { site: PanicSite::Serializing { value: SerdeValue::CacheKey(node), step: 1 }, .. }
                    if node == "cached"
            ),
            "{err:?}"
        );
    }
}

mod deserialize {
    use super::*;

    /// Whether `Doc`'s `Deserialize` impl panics (only this test uses `Doc`).
    static READS_PANIC: AtomicBool = AtomicBool::new(false);

    #[derive(Clone, Debug, Default, PartialEq, Serialize)]
    struct Doc(String);

    impl<'de> Deserialize<'de> for Doc {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            let text = String::deserialize(deserializer)?;
            if READS_PANIC.load(Ordering::SeqCst) {
                panic!("cannot read {text:?}");
            }
            Ok(Doc(text))
        }
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Docs {
        doc: Doc,
    }

    #[tokio::test]
    async fn a_panic_restoring_a_checkpoint_names_the_field_and_the_checkpoint() {
        let saver = Arc::new(InMemorySaver::new());
        let graph = || {
            StateGraph::<Docs>::new()
                .add_node(node_fn("draft", |_: &Docs| {
                    Docs::update().doc(Doc("draft".to_owned()))
                }))
                .add_edge(START, "draft")
                .compile_with(Arc::clone(&saver) as Arc<dyn stategraph::checkpoint::Checkpointer>)
                .unwrap()
        };
        // Written by one compiled graph, read by another: a graph's own next
        // run would start from the state it left in memory, decoding nothing.
        let (writer, app) = (graph(), graph());
        let config = RunConfig::thread("deserialize");
        writer.invoke(Docs::update(), &config).await.unwrap();
        let stored = app.get_state(&config).await.unwrap().config.checkpoint_id;

        READS_PANIC.store(true, Ordering::SeqCst);
        let err = app.invoke(None, &config).await.unwrap_err();
        let GraphError::Panicked {
            site:
                PanicSite::Deserializing {
                    value,
                    checkpoint_id,
                },
            message,
        } = &err
        else {
            panic!("expected the Deserialize impl's panic, got {err:?}");
        };
        assert_eq!(value, &SerdeValue::StateField("doc".to_owned()));
        assert_eq!(Some(checkpoint_id.as_str()), stored.as_deref());
        assert_eq!(message, "cannot read \"draft\"");
        // The thread is free: the next run fails the same way, not ThreadBusy;
        // reading the state is an error too, not a panic.
        let again = app.invoke(None, &config).await.unwrap_err();
        assert!(
            matches!(
                again,
                GraphError::Panicked {
                    site: PanicSite::Deserializing { .. },
                    ..
                }
            ),
            "{again:?}"
        );
        let read = app.get_state(&config).await.unwrap_err();
        assert!(
            matches!(
                read,
                GraphError::Panicked {
                    site: PanicSite::Deserializing { .. },
                    ..
                }
            ),
            "{read:?}"
        );

        READS_PANIC.store(false, Ordering::SeqCst);
        let snapshot = app.get_state(&config).await.unwrap();
        assert_eq!(snapshot.config.checkpoint_id, stored);
        assert_eq!(snapshot.values.doc, Doc("draft".to_owned()));
    }
}

mod retry {
    use super::*;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Attempts {
        attempts: u32,
    }

    #[node]
    async fn flaky(_: &Attempts, ctx: &Context) -> Result<AttemptsUpdate, NodeError> {
        if ctx.attempt() == 1 {
            return Err(NodeError::transient(NodeError::msg("the service is down")));
        }
        Ok(Attempts::update().attempts(ctx.attempt()))
    }

    #[tokio::test]
    async fn a_panicking_retry_predicate_names_the_node_and_task() {
        let policy = RetryPolicy::new().retry_on(|e| panic!("cannot judge {e}"));
        let app = StateGraph::<Attempts>::new()
            .add_node_with(flaky, NodeOptions::new().retry(policy))
            .add_edge(START, flaky)
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("retry predicate");
        let err = app.invoke(Attempts::update(), &config).await.unwrap_err();
        let GraphError::Panicked {
            site:
                PanicSite::RetryPredicate {
                    node,
                    task_id,
                    step,
                },
            message,
        } = &err
        else {
            panic!("expected the retry policy's panic, got {err:?}");
        };
        assert_eq!(
            (node.as_str(), *step, message.as_str()),
            ("flaky", 1, "cannot judge the service is down")
        );
        let snapshot = the_thread_is_free_and_unchanged(&app, &config, &err, &["flaky"]).await;
        assert_eq!(snapshot.tasks[0].id, *task_id);
        assert!(snapshot.tasks[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("cannot judge")));
    }

    /// A wait longer than a `Duration` holds saturates at the cap instead of
    /// panicking; tokio's paused clock lets the test skip the wait.
    #[tokio::test(start_paused = true)]
    async fn a_huge_backoff_waits_at_its_cap_and_retries() {
        let policy = RetryPolicy::new()
            .initial_interval(Duration::MAX)
            .max_interval(Duration::MAX);
        let app = StateGraph::<Attempts>::new()
            .add_node_with(flaky, NodeOptions::new().retry(policy))
            .add_edge(START, flaky)
            .compile()
            .unwrap();
        let out = app
            .invoke(Attempts::update(), &RunConfig::new())
            .await
            .unwrap();
        assert_eq!(out.attempts, 2);
    }
}

mod checkpointer {
    use super::*;
    use crate::hooked_saver::HookedSaver;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Steps {
        n: u32,
    }

    #[tokio::test]
    async fn any_other_panic_in_a_run_is_contained_too() {
        // A saver whose puts panic once `armed`.
        let armed = Arc::new(AtomicBool::new(false));
        let fuse = Arc::clone(&armed);
        let saver = Arc::new(
            HookedSaver::new(Arc::new(InMemorySaver::new())).on_put(move |_| {
                if fuse.load(Ordering::SeqCst) {
                    panic!("the disk is on fire");
                }
            }),
        );
        let app = StateGraph::<Steps>::new()
            .add_node(node_fn("step", |s: &Steps| Steps::update().n(s.n + 1)))
            .add_edge(START, "step")
            .compile_with(Arc::clone(&saver) as Arc<dyn Checkpointer>)
            .unwrap();
        let config = RunConfig::thread("saver").with_durability(Durability::Sync);
        app.invoke(Steps::update(), &config).await.unwrap();

        armed.store(true, Ordering::SeqCst);
        let err = app.invoke(Steps::update(), &config).await.unwrap_err();
        assert!(
            matches!(&err, GraphError::Panicked { site: PanicSite::Run, message } if message == "the disk is on fire"),
            "{err:?}"
        );
        armed.store(false, Ordering::SeqCst);
        let snapshot = app.get_state(&config).await.unwrap();
        assert_eq!(snapshot.values.n, 1);
        let out = app.invoke(Steps::update(), &config).await.unwrap();
        assert_eq!(out.n, 2);
    }
}
