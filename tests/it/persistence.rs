//! Checkpointing with the in-memory saver: threads, resume after failure, history,
//! durability (docs/semantics.md §2.1, §2.6, §2.10, §6, §7.1–§7.2; scenarios 14–16
//! of its appendix A).

use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::Durability;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Value {
    #[reducer(add)]
    value: i64,
}

#[derive(Debug, thiserror::Error)]
#[error("I'm not good")]
struct ConnectionError;

struct Flaky {
    one_calls: Arc<AtomicUsize>,
    two_calls: Arc<AtomicUsize>,
    two_fails: Arc<AtomicBool>,
}

fn flaky_graph(durability: Durability) -> (CompiledGraph<Value>, Flaky, Arc<InMemorySaver>) {
    let flaky = Flaky {
        one_calls: Arc::default(),
        two_calls: Arc::default(),
        two_fails: Arc::new(AtomicBool::new(true)),
    };
    let (ones, twos, fails) = (
        Arc::clone(&flaky.one_calls),
        Arc::clone(&flaky.two_calls),
        Arc::clone(&flaky.two_fails),
    );
    let saver = Arc::new(InMemorySaver::new());
    let graph = StateGraph::<Value>::new()
        .add_node(node_fn("one", move |_: &Value| {
            ones.fetch_add(1, Ordering::SeqCst);
            Value::update().value(2)
        }))
        .add_node(node_fn(
            "two",
            move |_: &Value| -> Result<ValueUpdate, ConnectionError> {
                twos.fetch_add(1, Ordering::SeqCst);
                if fails.load(Ordering::SeqCst) {
                    Err(ConnectionError)
                } else {
                    Ok(Value::update().value(3))
                }
            },
        ))
        .add_edge(START, "one")
        .add_edge(START, "two")
        .compile_with(Arc::clone(&saver) as Arc<dyn stategraph::checkpoint::Checkpointer>)
        .unwrap();
    let _ = durability;
    (graph, flaky, saver)
}

async fn count_checkpoints(graph: &CompiledGraph<Value>, config: &RunConfig) -> usize {
    graph
        .get_state_history(config, &ListOptions::default())
        .await
        .unwrap()
        .len()
}

async fn pending_writes_scenario(durability: Durability, expected_checkpoints: usize) {
    let (graph, flaky, _saver) = flaky_graph(durability);
    let config = RunConfig::thread("t").with_durability(durability);

    let err = graph
        .invoke(Value::update().value(1), &config)
        .await
        .unwrap_err();
    let report = format!(
        "{err}: {}",
        std::error::Error::source(&err).expect("the node's error")
    );
    assert!(report.contains("I'm not good"), "{report}");
    assert_eq!(flaky.one_calls.load(Ordering::SeqCst), 1);
    assert_eq!(flaky.two_calls.load(Ordering::SeqCst), 1);

    // The latest snapshot applies `one`'s stored write; `two` is still to run.
    let state = graph.get_state(&config).await.unwrap();
    assert_eq!(state.values, Value { value: 3 });
    assert_eq!(state.next, ["two"]);
    let meta = state.metadata.clone().unwrap();
    assert_eq!((meta.source, meta.step), (CheckpointSource::Loop, 0));
    assert!(meta.parents.is_empty());
    assert_eq!(state.tasks.len(), 2);
    let one = state.tasks.iter().find(|t| t.name == "one").unwrap();
    assert!(one.error.is_none());
    assert_eq!(one.result.as_ref().map(Vec::len), Some(1));
    let two = state.tasks.iter().find(|t| t.name == "two").unwrap();
    assert!(
        two.error.as_deref().unwrap_or("").contains("I'm not good"),
        "{two:?}"
    );
    assert!(two.result.is_none());

    // Addressed by id, the same checkpoint shows its stored values only.
    let at = RunConfig::thread("t").with_checkpoint_id(state.config.checkpoint_id.clone().unwrap());
    let exact = graph.get_state(&at).await.unwrap();
    assert_eq!(exact.values, Value { value: 1 });
    assert_eq!(exact.next, ["one", "two"]);

    // Resuming re-runs only the failed task.
    let before = count_checkpoints(&graph, &config).await;
    assert!(graph.invoke(None, &config).await.is_err());
    assert_eq!(
        flaky.one_calls.load(Ordering::SeqCst),
        1,
        "`one` must not run again"
    );
    assert_eq!(flaky.two_calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        count_checkpoints(&graph, &config).await,
        before,
        "a failed step adds no checkpoint"
    );

    flaky.two_fails.store(false, Ordering::SeqCst);
    let out = graph.invoke(None, &config).await.unwrap();
    assert_eq!(out.state, Value { value: 6 });
    assert_eq!(flaky.one_calls.load(Ordering::SeqCst), 1);
    assert_eq!(flaky.two_calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        count_checkpoints(&graph, &config).await,
        expected_checkpoints
    );

    let last = graph.get_state(&config).await.unwrap();
    assert_eq!(last.values, Value { value: 6 });
    assert!(last.next.is_empty());
}

#[tokio::test]
async fn completed_tasks_keep_their_writes_when_a_sibling_fails() {
    pending_writes_scenario(Durability::Sync, 3).await;
}

#[tokio::test]
async fn with_durability_exit_only_the_final_checkpoints_are_stored() {
    pending_writes_scenario(Durability::Exit, 2).await;
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Chat {
    #[reducer(concat)]
    log: Vec<String>,
    turns: u32,
}

fn chat_graph() -> CompiledGraph<Chat> {
    StateGraph::<Chat>::new()
        .add_node(node_fn("reply", |s: &Chat| {
            let last = s.log.last().cloned().unwrap_or_default();
            Chat::update()
                .log(vec![format!("echo: {last}")])
                .turns(s.turns + 1)
        }))
        .add_edge(START, "reply")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

#[tokio::test]
async fn a_thread_continues_where_the_previous_run_ended() {
    let graph = chat_graph();
    let config = RunConfig::thread("conversation");
    graph
        .invoke(Chat::update().log(vec!["hi".into()]), &config)
        .await
        .unwrap();
    let out = graph
        .invoke(Chat::update().log(vec!["again".into()]), &config)
        .await
        .unwrap();
    assert_eq!(out.log, ["hi", "echo: hi", "again", "echo: again"]);
    assert_eq!(out.turns, 2);

    // Other threads are independent.
    let other = graph
        .invoke(
            Chat::update().log(vec!["x".into()]),
            &RunConfig::thread("other"),
        )
        .await
        .unwrap();
    assert_eq!(other.log, ["x", "echo: x"]);

    // History, newest first: input(-1), loop(0), loop(1), input(2), loop(3), loop(4).
    let history = graph
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    let shape: Vec<(CheckpointSource, i64)> = history
        .iter()
        .map(|s| {
            let m = s.metadata.as_ref().unwrap();
            (m.source, m.step)
        })
        .collect();
    use CheckpointSource::{Input, Loop};
    assert_eq!(
        shape,
        [
            (Loop, 4),
            (Loop, 3),
            (Input, 2),
            (Loop, 1),
            (Loop, 0),
            (Input, -1)
        ]
    );
    assert_eq!(history[0].values.log.len(), 4);
    assert_eq!(
        history[5].values,
        Chat::default(),
        "the input checkpoint has no values yet"
    );
    assert_eq!(history[5].next, ["__start__"]);
    // Each checkpoint's parent is the next older one.
    for pair in history.windows(2) {
        assert_eq!(pair[0].parent_config.as_ref(), Some(&pair[1].config));
    }
    assert!(history[5].parent_config.is_none());

    let limited = graph
        .get_state_history(
            &config,
            &ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(limited.len(), 2);
}

#[tokio::test]
async fn an_unknown_thread_has_an_empty_snapshot() {
    let graph = chat_graph();
    let snapshot = graph.get_state(&RunConfig::thread("nobody")).await.unwrap();
    assert_eq!(snapshot.values, Chat::default());
    assert!(snapshot.next.is_empty());
    assert!(snapshot.metadata.is_none() && snapshot.created_at.is_none());
}

#[tokio::test]
async fn an_unknown_checkpoint_id_is_a_clear_error() {
    let graph = chat_graph();
    let config = RunConfig::thread("t").with_checkpoint_id("1ef00000-0000-6000-8000-000000000000");
    let err = graph.get_state(&config).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("thread `t`") && text.contains("1ef00000"),
        "{text}"
    );
    let err = graph.invoke(None, &config).await.unwrap_err();
    assert!(err.to_string().contains("1ef00000"), "{err}");
}

#[tokio::test]
async fn state_apis_need_a_checkpointer_and_runs_need_a_thread() {
    let plain = StateGraph::<Chat>::new()
        .add_node(node_fn("reply", |_: &Chat| ()))
        .add_edge(START, "reply")
        .compile()
        .unwrap();
    let err = plain.get_state(&RunConfig::thread("t")).await.unwrap_err();
    assert!(err.to_string().contains("No checkpointer set"), "{err}");

    let err = chat_graph()
        .invoke(Chat::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("thread_id"), "{err}");
}

#[tokio::test]
async fn no_input_on_a_fresh_thread_is_an_empty_input_error() {
    let err = chat_graph()
        .invoke(None, &RunConfig::thread("fresh"))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Received no input for __start__");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Fan {
    items: Vec<u64>,
    #[reducer(concat)]
    out: Vec<u64>,
}

#[node]
fn times_ten(x: u64) -> FanUpdate {
    Fan::update().out(vec![x * 10])
}

#[tokio::test]
async fn pending_sends_are_checkpointed_and_cleared_after_they_ran() {
    let graph = StateGraph::<Fan>::new()
        .add_node(times_ten)
        .add_conditional_edges(START, |s: &Fan| {
            s.items
                .iter()
                .map(|&x| send(times_ten, x))
                .collect::<Vec<_>>()
        })
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("fan");
    let out = graph
        .invoke(Fan::update().items(vec![3, 1, 2]), &config)
        .await
        .unwrap();
    assert_eq!(out.out, [30, 10, 20]);
    let history = graph
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    // The checkpoint after step 0 holds the three Sends: next runs `times_ten` 3×.
    let step0 = history
        .iter()
        .find(|s| s.metadata.as_ref().is_some_and(|m| m.step == 0))
        .unwrap();
    assert_eq!(step0.next, ["times_ten", "times_ten", "times_ten"]);
    let last = &history[0];
    assert!(last.next.is_empty());
}

#[tokio::test]
async fn a_failed_fan_out_resumes_only_the_failed_send() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fail_two = Arc::new(AtomicBool::new(true));
    let (c, f) = (Arc::clone(&calls), Arc::clone(&fail_two));
    let graph = StateGraph::<Fan>::new()
        .add_node(node_fn(
            "work",
            move |x: &u64| -> Result<FanUpdate, NodeError> {
                c.fetch_add(1, Ordering::SeqCst);
                if *x == 2 && f.load(Ordering::SeqCst) {
                    return Err(NodeError::msg("two fails"));
                }
                Ok(Fan::update().out(vec![*x * 10]))
            },
        ))
        .add_conditional_edges(START, |s: &Fan| {
            s.items
                .iter()
                .map(|&x| stategraph::Send::to_named("work", x))
                .collect::<Vec<_>>()
        })
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("fan");
    assert!(graph
        .invoke(Fan::update().items(vec![1, 2, 3]), &config)
        .await
        .is_err());
    let ran_first = calls.load(Ordering::SeqCst);
    fail_two.store(false, Ordering::SeqCst);
    let out = graph.invoke(None, &config).await.unwrap();
    assert_eq!(
        out.out,
        [10, 20, 30],
        "Send order is kept across the resume"
    );
    // Only the failed Send ran again (plus Sends never started because the failure
    // stopped the step before them).
    assert_eq!(
        calls.load(Ordering::SeqCst) - ran_first,
        3 - (ran_first - 1)
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Recovery {
    #[reducer(concat)]
    steps: Vec<String>,
    attempt: u32,
}

#[tokio::test]
async fn new_input_after_a_failure_discards_the_pending_task_and_starts_over() {
    let graph = StateGraph::<Recovery>::new()
        .add_node(node_fn(
            "node1",
            |s: &Recovery| -> Result<RecoveryUpdate, NodeError> {
                if s.attempt == 1 {
                    return Err(NodeError::msg("Simulated failure"));
                }
                Ok(Recovery::update().steps(vec!["node1".into()]))
            },
        ))
        .add_node(node_fn("node2", |_: &Recovery| {
            Recovery::update().steps(vec!["node2".into()])
        }))
        .add_edge(START, "node1")
        .add_edge("node1", "node2")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("recovery");
    let err = graph
        .invoke(
            Recovery::update().steps(vec!["start".into()]).attempt(1),
            &config,
        )
        .await
        .unwrap_err();
    let report = format!(
        "{err}: {}",
        std::error::Error::source(&err).expect("the node's error")
    );
    assert!(report.contains("Simulated failure"), "{report}");
    let state = graph.get_state(&config).await.unwrap();
    assert_eq!(
        state.values,
        Recovery {
            steps: vec!["start".into()],
            attempt: 1
        }
    );
    assert_eq!(state.next, ["node1"]);
    assert!(state.tasks[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("Simulated failure")));

    let out = graph
        .invoke(Recovery::update().steps(vec![]).attempt(2), &config)
        .await
        .unwrap();
    assert_eq!(out.steps, ["start", "node1", "node2"]);
    assert_eq!(out.attempt, 2);
    let history = graph
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 6);

    let saver = graph.checkpointer().unwrap();
    saver.delete_thread("recovery").await.unwrap();
    let empty = graph.get_state(&config).await.unwrap();
    assert!(empty.metadata.is_none());
    let history = graph
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    assert!(history.is_empty());
}

#[tokio::test]
async fn the_checkpoints_and_tasks_modes_report_each_step() {
    use futures::StreamExt;
    let graph = StateGraph::<Chat>::new()
        .add_node(node_fn("first", |_: &Chat| {
            Chat::update().log(vec!["1".into()])
        }))
        .add_node(node_fn("second", |_: &Chat| {
            Chat::update().log(vec!["2".into()])
        }))
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let events: Vec<String> = graph
        .stream(
            Chat::update(),
            &RunConfig::thread("s"),
            [StreamMode::Checkpoints, StreamMode::Tasks],
        )
        .map(|e| match e.unwrap() {
            StreamEvent::Checkpoint(c) => format!(
                "checkpoint {:?} {} next={:?} log={:?}",
                c.metadata.source, c.metadata.step, c.next, c.values.log
            ),
            StreamEvent::TaskStart { name, triggers, .. } => format!("start {name} {triggers:?}"),
            StreamEvent::TaskResult {
                name,
                error,
                updates,
                ..
            } => {
                format!("result {name} error={error:?} updates={}", updates.len())
            }
            _ => "other".to_owned(),
        })
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "checkpoint Input -1 next=[\"__start__\"] log=[]",
            "checkpoint Loop 0 next=[\"first\"] log=[]",
            "start first [\"branch:to:first\"]",
            "result first error=None updates=1",
            "checkpoint Loop 1 next=[\"second\"] log=[\"1\"]",
            "start second [\"branch:to:second\"]",
            "result second error=None updates=1",
            "checkpoint Loop 2 next=[] log=[\"1\", \"2\"]",
        ]
    );
}

/// Every `checkpoints` event carries the config of its parent, as LangGraph's
/// `prev_checkpoint_config`: the checkpoint stored before it, so the events
/// chain like `get_state_history`. Under `exit` nothing is stored during the
/// run, and every event carries the parent of the checkpoint the run started
/// from (none on a new thread). LangGraph 1.2.22, `one` (+1) then `two` (+10)
/// over `value` with `operator.add`, two runs of thread `t` per mode, ids
/// numbered by first sight (`config parent step next`):
///
/// ```text
/// == exit run 1                == exit run 2
/// c0 parent None -1 ['__start__']   c4 parent None 3 ['__start__']
/// c1 parent None 0 ['one']          c5 parent None 4 ['one']
/// c2 parent None 1 ['two']          c6 parent None 5 ['two']
/// c3 parent None 2 []               c7 parent None 6 []
/// history: [('c7', 'c3', 6), ('c3', None, 2)]
/// == async (and sync) run 1    == async (and sync) run 2
/// c0 parent None -1 ['__start__']   c4 parent c3 3 ['__start__']
/// c1 parent c0 0 ['one']            c5 parent c4 4 ['one']
/// c2 parent c1 1 ['two']            c6 parent c5 5 ['two']
/// c3 parent c2 2 []                 c7 parent c6 6 []
/// history: c7 <- c6 <- c5 <- c4 <- c3 <- c2 <- c1 <- c0
/// ```
#[tokio::test]
async fn checkpoint_events_carry_their_parent_config_in_every_durability() {
    use futures::StreamExt;
    use std::collections::HashMap;
    for durability in [Durability::Exit, Durability::Async, Durability::Sync] {
        let graph = StateGraph::<Value>::new()
            .add_node(node_fn("one", |_: &Value| Value::update().value(1)))
            .add_node(node_fn("two", |_: &Value| Value::update().value(10)))
            .add_edge(START, "one")
            .add_edge("one", "two")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("t").with_durability(durability);
        let mut labels = HashMap::new();
        let mut label = |c: Option<&stategraph::checkpoint::CheckpointConfig>| match c {
            None => "None".to_owned(),
            Some(c) => {
                let id = c.checkpoint_id.clone().expect("a checkpoint id");
                let n = labels.len();
                labels.entry(id).or_insert_with(|| format!("c{n}")).clone()
            }
        };
        let mut lines = Vec::new();
        for _run in 0..2 {
            let events: Vec<_> = graph
                .stream(Value::update(), &config, StreamMode::Checkpoints)
                .collect()
                .await;
            for event in events {
                let StreamEvent::Checkpoint(c) = event.unwrap() else {
                    panic!("only checkpoint events")
                };
                lines.push(format!(
                    "{} parent {} {} {:?}",
                    label(Some(&c.config)),
                    label(c.parent_config.as_ref()),
                    c.metadata.step,
                    c.next
                ));
            }
        }
        let history: Vec<String> = graph
            .get_state_history(&config, &ListOptions::default())
            .await
            .unwrap()
            .iter()
            .map(|s| {
                format!(
                    "{} <- {}",
                    label(Some(&s.config)),
                    label(s.parent_config.as_ref())
                )
            })
            .collect();
        let expected: &[&str] = if durability == Durability::Exit {
            &[
                "c0 parent None -1 [\"__start__\"]",
                "c1 parent None 0 [\"one\"]",
                "c2 parent None 1 [\"two\"]",
                "c3 parent None 2 []",
                "c4 parent None 3 [\"__start__\"]",
                "c5 parent None 4 [\"one\"]",
                "c6 parent None 5 [\"two\"]",
                "c7 parent None 6 []",
            ]
        } else {
            &[
                "c0 parent None -1 [\"__start__\"]",
                "c1 parent c0 0 [\"one\"]",
                "c2 parent c1 1 [\"two\"]",
                "c3 parent c2 2 []",
                "c4 parent c3 3 [\"__start__\"]",
                "c5 parent c4 4 [\"one\"]",
                "c6 parent c5 5 [\"two\"]",
                "c7 parent c6 6 []",
            ]
        };
        assert_eq!(lines, expected, "{durability:?}");
        let expected_history: Vec<&str> = if durability == Durability::Exit {
            vec!["c7 <- c3", "c3 <- None"]
        } else {
            vec![
                "c7 <- c6",
                "c6 <- c5",
                "c5 <- c4",
                "c4 <- c3",
                "c3 <- c2",
                "c2 <- c1",
                "c1 <- c0",
                "c0 <- None",
            ]
        };
        assert_eq!(history, expected_history, "{durability:?}");
    }
}

/// `debug` mode: LangGraph's `checkpoint`, `task` and `task_result` events in
/// its order, each with its step; with `checkpoints` and `tasks` asked for too,
/// each event comes as it is, then wrapped. LangGraph 1.2.22, the graph above
/// (`one` then `two`) with a saver, `stream_mode="debug"` in every durability
/// mode (`step type name-or-next`, `parent` set or not), printed:
///
/// ```text
/// -1 checkpoint ['__start__'] parent False
/// 0 checkpoint ['one']  parent False (exit) / True (async, sync)
/// 1 task one
/// 1 task_result one
/// 1 checkpoint ['two']  parent False (exit) / True (async, sync)
/// 2 task two
/// 2 task_result two
/// 2 checkpoint []       parent False (exit) / True (async, sync)
/// ```
///
/// and with `stream_mode=["checkpoints", "tasks", "debug"]`, each
/// `checkpoints` / `tasks` chunk right before its `debug` twin. Without a
/// checkpointer: `1 task one`, `1 task_result one`, `2 task two`,
/// `2 task_result two`.
#[tokio::test]
async fn the_debug_mode_wraps_checkpoint_and_task_events_in_langgraph_order() {
    use futures::StreamExt;
    fn describe(event: &StreamEvent<Value>) -> String {
        match event {
            StreamEvent::Checkpoint(c) => format!(
                "checkpoint {:?} parent {}",
                c.next,
                c.parent_config.is_some()
            ),
            StreamEvent::TaskStart { name, .. } => format!("task {name}"),
            StreamEvent::TaskResult { name, error, .. } => {
                format!("task_result {name} error={error:?}")
            }
            StreamEvent::Debug { step, event } => format!("debug {step} {}", describe(event)),
            other => format!("{:?}", other.mode()),
        }
    }
    let build = || {
        StateGraph::<Value>::new()
            .add_node(node_fn("one", |_: &Value| Value::update().value(1)))
            .add_node(node_fn("two", |_: &Value| Value::update().value(10)))
            .add_edge(START, "one")
            .add_edge("one", "two")
    };
    for durability in [Durability::Exit, Durability::Async, Durability::Sync] {
        let graph = build().compile_with(InMemorySaver::new()).unwrap();
        let config = RunConfig::thread("t").with_durability(durability);
        let events: Vec<String> = graph
            .stream(Value::update(), &config, StreamMode::Debug)
            .map(|e| describe(&e.unwrap()))
            .collect()
            .await;
        let stored = durability != Durability::Exit;
        assert_eq!(
            events,
            [
                "debug -1 checkpoint [\"__start__\"] parent false".to_owned(),
                format!("debug 0 checkpoint [\"one\"] parent {stored}"),
                "debug 1 task one".to_owned(),
                "debug 1 task_result one error=None".to_owned(),
                format!("debug 1 checkpoint [\"two\"] parent {stored}"),
                "debug 2 task two".to_owned(),
                "debug 2 task_result two error=None".to_owned(),
                format!("debug 2 checkpoint [] parent {stored}"),
            ],
            "{durability:?}"
        );
    }

    let graph = build().compile_with(InMemorySaver::new()).unwrap();
    let events: Vec<String> = graph
        .stream(
            Value::update(),
            &RunConfig::thread("both"),
            [
                StreamMode::Checkpoints,
                StreamMode::Tasks,
                StreamMode::Debug,
            ],
        )
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "checkpoint [\"__start__\"] parent false",
            "debug -1 checkpoint [\"__start__\"] parent false",
            "checkpoint [\"one\"] parent true",
            "debug 0 checkpoint [\"one\"] parent true",
            "task one",
            "debug 1 task one",
            "task_result one error=None",
            "debug 1 task_result one error=None",
            "checkpoint [\"two\"] parent true",
            "debug 1 checkpoint [\"two\"] parent true",
            "task two",
            "debug 2 task two",
            "task_result two error=None",
            "debug 2 task_result two error=None",
            "checkpoint [] parent true",
            "debug 2 checkpoint [] parent true",
        ]
    );

    let graph = build().compile().unwrap();
    let events: Vec<String> = graph
        .stream(Value::update(), &RunConfig::new(), StreamMode::Debug)
        .map(|e| describe(&e.unwrap()))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "debug 1 task one",
            "debug 1 task_result one error=None",
            "debug 2 task two",
            "debug 2 task_result two error=None",
        ]
    );
}

/// A task that completes while its sibling still runs is stored at once, with its
/// routing writes (`branch:to:…`), under durability `sync` and `async`: the
/// sibling itself sees the rows in the saver before it returns. Under `exit`,
/// nothing but the final checkpoint is stored.
mod stored_as_they_complete {
    use super::concat;
    use stategraph::checkpoint::{CheckpointConfig, Checkpointer, InMemorySaver, ListOptions};
    use stategraph::prelude::*;
    use stategraph::Durability;
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
    struct Log {
        #[reducer(concat)]
        log: Vec<String>,
    }

    /// `fast` and `slow` run in one step; `fast` routes to `after` with a
    /// conditional edge. `slow` returns once the saver holds `fast`'s writes (when
    /// `wait` is set; it gives up after 20 s and says so in the state).
    fn graph(saver: Arc<dyn Checkpointer>, wait: bool) -> CompiledGraph<Log> {
        let probe = Arc::clone(&saver);
        StateGraph::<Log>::new()
            .add_node(async_node_fn("fast", |_: Arc<Log>, _ctx: Context| async {
                tokio::task::yield_now().await;
                Log::update().log(vec!["fast".to_owned()])
            }))
            .add_node(async_node_fn("slow", move |_: Arc<Log>, _ctx: Context| {
                let probe = Arc::clone(&probe);
                async move {
                    tokio::task::yield_now().await;
                    let mut seen = "slow".to_owned();
                    if wait {
                        seen = "slow: fast's writes never appeared".to_owned();
                        for _ in 0..4000 {
                            if fast_is_stored(&*probe).await {
                                seen = "slow".to_owned();
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                    Log::update().log(vec![seen])
                }
            }))
            .add_node(node_fn("after", |_: &Log| {
                Log::update().log(vec!["after".to_owned()])
            }))
            .add_edge(START, "fast")
            .add_edge(START, "slow")
            .add_conditional_edges("fast", |_: &Log| "after")
            .compile_with(saver)
            .unwrap()
    }

    /// Whether the latest checkpoint of thread `t` has `fast`'s update and route
    /// among its pending writes.
    async fn fast_is_stored(saver: &dyn Checkpointer) -> bool {
        let Ok(Some(tuple)) = saver.get_tuple(&CheckpointConfig::thread("t")).await else {
            return false;
        };
        let has = |channel: &str, value: &str| {
            tuple
                .pending_writes
                .iter()
                .any(|w| w.channel == channel && w.value.as_str() == value)
        };
        has("log", r#"["fast"]"#) && has("branch:to:after", "null")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn under_sync_and_async_while_the_sibling_still_runs() {
        for durability in [Durability::Sync, Durability::Async] {
            let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
            let app = graph(saver, true);
            let config = RunConfig::thread("t").with_durability(durability);
            let out = app.invoke(Log::update(), &config).await.unwrap();
            assert_eq!(out.log, ["fast", "slow", "after"], "{durability:?}");
        }
    }

    /// A run aborted while `slow` is still running (it waits forever), after
    /// `fast` completed and was stored: resuming the thread runs only `slow`
    /// (and the step after), never `fast` again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_aborted_run_resumes_running_only_the_unfinished_task() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        for durability in [Durability::Sync, Durability::Async] {
            let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
            let calls: Arc<[AtomicUsize; 3]> = Arc::default();
            let block = Arc::new(AtomicBool::new(true));
            let (c_fast, c_slow, c_after) = (Arc::clone(&calls), Arc::clone(&calls), calls.clone());
            let blocked = Arc::clone(&block);
            let app = StateGraph::<Log>::new()
                .add_node(async_node_fn("fast", move |_: Arc<Log>, _ctx: Context| {
                    c_fast[0].fetch_add(1, Ordering::SeqCst);
                    async {
                        tokio::task::yield_now().await;
                        Log::update().log(vec!["fast".to_owned()])
                    }
                }))
                .add_node(async_node_fn("slow", move |_: Arc<Log>, _ctx: Context| {
                    c_slow[1].fetch_add(1, Ordering::SeqCst);
                    let block = blocked.load(Ordering::SeqCst);
                    async move {
                        tokio::task::yield_now().await;
                        if block {
                            std::future::pending::<()>().await;
                        }
                        Log::update().log(vec!["slow".to_owned()])
                    }
                }))
                .add_node(node_fn("after", move |_: &Log| {
                    c_after[2].fetch_add(1, Ordering::SeqCst);
                    Log::update().log(vec!["after".to_owned()])
                }))
                .add_edge(START, "fast")
                .add_edge(START, "slow")
                .add_conditional_edges("fast", |_: &Log| "after")
                .compile_with(Arc::clone(&saver))
                .unwrap();
            let config = RunConfig::thread("t").with_durability(durability);
            let run = {
                let (app, config) = (app.clone(), config.clone());
                tokio::spawn(async move { app.invoke(Log::update(), &config).await })
            };
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while !fast_is_stored(&*saver).await {
                assert!(std::time::Instant::now() < deadline, "{durability:?}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            run.abort();
            assert!(run.await.unwrap_err().is_cancelled());
            block.store(false, Ordering::SeqCst);
            let out = app.invoke(None, &config).await.unwrap();
            assert_eq!(out.log, ["fast", "slow", "after"], "{durability:?}");
            let counts: Vec<usize> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
            assert_eq!(counts, [1, 2, 1], "fast, slow, after ({durability:?})");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn not_under_exit() {
        let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
        let app = graph(Arc::clone(&saver), false);
        let config = RunConfig::thread("t").with_durability(Durability::Exit);
        let out = app.invoke(Log::update(), &config).await.unwrap();
        assert_eq!(out.log, ["fast", "slow", "after"]);
        let stored = saver
            .list(
                Some(&CheckpointConfig::thread("t")),
                &ListOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(stored.len(), 1, "only the final checkpoint");
        assert!(stored.iter().all(|t| t.pending_writes.is_empty()));
    }
}

mod stored_data_the_graph_cannot_place {
    //! What a thread stored that the graph reading it cannot place is an error
    //! naming it, never silently dropped or replaced by a default.
    use super::*;
    use stategraph::checkpoint::{CheckpointError, Checkpointer};

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Before {
        #[reducer(add)]
        x: i64,
        #[reducer(add)]
        y: i64,
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct After {
        #[reducer(add)]
        x: i64,
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pending_write_to_a_channel_the_graph_does_not_have_is_an_error() {
        let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
        // `a` completes and its write to `y` is kept as a pending write while its
        // sibling `b` fails.
        let before = StateGraph::<Before>::new()
            .add_node(node_fn("a", |_: &Before| Before::update().y(1)))
            .add_node(async_node_fn("b", |_: Arc<Before>, _| async {
                tokio::task::yield_now().await;
                Err::<BeforeUpdate, _>(NodeError::msg("down"))
            }))
            .add_edge(START, "a")
            .add_edge(START, "b")
            .compile_with(Arc::clone(&saver))
            .unwrap();
        let thread = RunConfig::thread("t");
        before.invoke(Before::update(), &thread).await.unwrap_err();

        // The same nodes, in a graph whose state no longer has `y`.
        let after = StateGraph::<After>::new()
            .add_node(node_fn("a", |_: &After| After::update().x(1)))
            .add_node(node_fn("b", |_: &After| After::update().x(10)))
            .add_edge(START, "a")
            .add_edge(START, "b")
            .compile_with(Arc::clone(&saver))
            .unwrap();
        let err = after.invoke(None, &thread).await.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, GraphError::Checkpoint(CheckpointError::Corrupt { thread_id, .. }) if thread_id == "t")
                && text.contains("to `y`")
                && text.contains("no channel `y`"),
            "{text}"
        );
        // Nothing was run or stored in its place.
        let history = saver
            .list(
                Some(&stategraph::checkpoint::CheckpointConfig::thread("t")),
                &ListOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(
            history.len(),
            2,
            "input and __start__, as the failed run left them"
        );
    }
}

mod checkpoints_cost_what_changed {
    //! A superstep's checkpoint lists the channels that hold something, not
    //! every channel the thread ever wrote: a long chain stores a few entries
    //! per step, and reads back (history, resume, `update_state`) as before.
    use super::*;
    use stategraph::checkpoint::{CheckpointConfig, Checkpointer};

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Chain {
        step: u64,
    }

    fn chain(n: usize, saver: Arc<dyn Checkpointer>) -> CompiledGraph<Chain> {
        let mut graph = StateGraph::<Chain>::new();
        for i in 0..n {
            graph = graph.add_node(node_fn(format!("n{i}"), move |_: &Chain| {
                Chain::update().step(i as u64 + 1)
            }));
        }
        graph = graph.add_edge(START, "n0");
        for i in 1..n {
            graph = graph.add_edge(format!("n{}", i - 1), format!("n{i}"));
        }
        graph.compile_with(saver).unwrap()
    }

    #[tokio::test]
    async fn a_long_chains_checkpoints_stay_small_and_read_back_whole() {
        let n = 2000;
        let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
        let app = chain(n, Arc::clone(&saver));
        let thread = RunConfig::thread("t").with_durability(Durability::Sync);
        let out = app.invoke(Chain::update(), &thread).await.unwrap();
        assert_eq!(out.step, n as u64);
        let all = saver
            .list(
                Some(&CheckpointConfig::thread("t")),
                &ListOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(all.len(), n + 2);
        // Each checkpoint: the field, the next node's branch, the last node's
        // (it ran last: `update_state` is attributed to it) and `__start__` at
        // first — never thousands.
        let widest = all
            .iter()
            .map(|t| t.checkpoint.channel_versions.len() + t.checkpoint.versions_seen.len())
            .max()
            .unwrap();
        assert!(widest <= 6, "a checkpoint lists {widest} entries");
        // The middle of the chain reads back whole, and runs on from there.
        let middle = &all[n / 2];
        let state = app
            .get_state(&RunConfig::at_checkpoint(&middle.config))
            .await
            .unwrap();
        let at = state.values.step as usize;
        assert_eq!(state.next, [format!("n{at}")]);
        let forked = app
            .invoke(None, &RunConfig::at_checkpoint(&middle.config))
            .await
            .unwrap();
        assert_eq!(forked.step, n as u64);
        // An update without `as_node` is attributed to the node that ran last.
        let config = app
            .update_state(&thread, Chain::update().step(7), None)
            .await
            .unwrap();
        let after = app
            .get_state(&RunConfig::at_checkpoint(&config))
            .await
            .unwrap();
        assert_eq!(after.values.step, 7);
        assert!(after.next.is_empty(), "{:?}", after.next);
    }

    #[tokio::test]
    async fn a_long_chain_on_sqlite_grows_the_file_linearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chain.sqlite");
        let mut sizes = Vec::new();
        for n in [500, 1000, 2000] {
            let saver = stategraph::sqlite::SqliteSaver::open(&path).await.unwrap();
            let app = chain(n, Arc::new(saver));
            let thread = RunConfig::thread(format!("t{n}")).with_durability(Durability::Sync);
            app.invoke(Chain::update(), &thread).await.unwrap();
            // Dropped, the saver closes its connection: SQLite then moves the
            // log into the file and removes it.
            drop(app);
            let wal = dir.path().join("chain.sqlite-wal");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while wal.exists() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the saver never closed"
                );
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            sizes.push(std::fs::metadata(&path).unwrap().len());
        }
        // Bytes added by the 1000- and the 2000-step run, per step: the same
        // order (quadratic growth would quadruple it).
        let per_step_1000 = (sizes[1] - sizes[0]) as f64 / 1000.0;
        let per_step_2000 = (sizes[2] - sizes[1]) as f64 / 2000.0;
        assert!(
            per_step_2000 < per_step_1000 * 1.8 && per_step_2000 < 4096.0,
            "{per_step_1000:.0} then {per_step_2000:.0} bytes per step ({sizes:?})"
        );
    }
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Pair {
    first: u32,
    second: u32,
}

/// Under durability `async` the checkpoint of a step is stored while the next
/// step runs. A run that fails in that next step (here: two writes to a field
/// without a reducer) returns only once that checkpoint is stored, so the
/// thread shows it at once and the next run continues from it.
///
/// Both tasks' writes are stored with it, so the latest snapshot, which applies
/// them, fails as the step did (LangGraph 1.2.22's `get_state` raises the same
/// `InvalidUpdateError`); the checkpoint itself reads as stored.
#[tokio::test]
async fn a_failed_run_returns_after_the_checkpoint_it_was_storing() {
    let app = StateGraph::<Pair>::new()
        .add_node(node_fn("first", |_: &Pair| Pair::update().first(1)))
        .add_node(node_fn("left", |_: &Pair| Pair::update().second(1)))
        .add_node(node_fn("right", |_: &Pair| Pair::update().second(2)))
        .add_edge(START, "first")
        .add_edge("first", "left")
        .add_edge("first", "right")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("async").with_durability(Durability::Async);
    let err = app.invoke(Pair::update(), &config).await.unwrap_err();
    assert!(matches!(err, GraphError::InvalidUpdate(_)), "{err}");
    let latest = app.get_state(&config).await.unwrap_err();
    assert!(matches!(latest, GraphError::InvalidUpdate(_)), "{latest}");
    let history = app
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    let snapshot = &history[0];
    assert_eq!(snapshot.values.first, 1);
    assert_eq!(snapshot.next, ["left", "right"]);
    assert!(snapshot.tasks.iter().all(|t| t.result.is_some()));
}

mod appended_lists_store_what_they_add {
    //! With the in-memory saver, a list field whose reducer reports what it
    //! kept (`add_messages`, or any reducer calling `report_kept_prefix`) is
    //! stored as the items a step appended: a long thread's stored bytes grow
    //! with what it adds, and every read (latest state, history, a checkpoint
    //! of the past, a fork from it) still sees whole values.
    use super::*;
    use stategraph::agents::{Message, MessagesState};
    use stategraph::channels::report_kept_prefix;
    use stategraph::checkpoint::{CheckpointConfig, Checkpointer};

    fn chat(saver: Arc<InMemorySaver>) -> CompiledGraph<MessagesState> {
        StateGraph::<MessagesState>::new()
            .add_node(node_fn("assistant", |s: &MessagesState| {
                let text = format!("answer {} {}", s.messages.len(), "x".repeat(300));
                MessagesState::update().messages(vec![Message::ai(text)])
            }))
            .add_edge(START, "assistant")
            .compile_with(saver as Arc<dyn Checkpointer>)
            .unwrap()
    }

    async fn turns(app: &CompiledGraph<MessagesState>, thread: &RunConfig, n: usize) {
        for i in 0..n {
            let question = Message::human(format!("question {i} {}", "q".repeat(300)));
            let update = MessagesState::update().messages(vec![question]);
            app.invoke(update, thread).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_chat_threads_stored_bytes_grow_linearly_and_read_back_whole() {
        let saver = Arc::new(InMemorySaver::new());
        let app = chat(Arc::clone(&saver));
        let thread = RunConfig::thread("chat").with_durability(Durability::Sync);
        turns(&app, &thread, 100).await;
        let at_100 = saver.stored_bytes();
        turns(&app, &thread, 100).await;
        let at_200 = saver.stored_bytes();
        // Rewriting the list at every checkpoint would make this ~4x.
        assert!(
            at_200 * 10 < at_100 * 25,
            "stored {at_100} bytes after 100 turns, {at_200} after 200"
        );
        let last = app.get_state(&thread).await.unwrap().values.messages;
        assert_eq!(last.len(), 400);
        // Every checkpoint reads back whole: each holds a prefix of the last
        // list (the input checkpoint of a turn, one more message each step).
        let history = app
            .get_state_history(&thread, &ListOptions::default())
            .await
            .unwrap();
        assert_eq!(history.len(), 600);
        for snapshot in &history {
            let m = &snapshot.values.messages;
            assert_eq!(m[..], last[..m.len()]);
        }
        // A fork from the middle goes on from that checkpoint's list.
        let middle = &history[300];
        let kept = middle.values.messages.len();
        let fork = app
            .invoke(
                MessagesState::update().messages(vec![Message::human("fork")]),
                &RunConfig::at_checkpoint(&middle.config).with_durability(Durability::Sync),
            )
            .await
            .unwrap();
        assert_eq!(fork.messages[..kept], last[..kept]);
        assert_eq!(fork.messages[kept].text(), "fork");
        assert_eq!(fork.messages.len(), kept + 2);
    }

    #[tokio::test]
    async fn replaced_and_removed_messages_are_stored_as_they_are() {
        let saver = Arc::new(InMemorySaver::new());
        let app = chat(Arc::clone(&saver));
        let thread = RunConfig::thread("edit").with_durability(Durability::Sync);
        turns(&app, &thread, 5).await;
        let before = app.get_state(&thread).await.unwrap().values.messages;
        // Replace the second message by id, remove the fourth, then go on.
        let (second, fourth) = (
            before[1].id().unwrap().to_owned(),
            before[3].id().unwrap().to_owned(),
        );
        let edit = vec![
            Message::ai("edited").with_id(second.clone()),
            Message::remove(fourth.clone()),
        ];
        app.update_state(&thread, MessagesState::update().messages(edit), None)
            .await
            .unwrap();
        turns(&app, &thread, 2).await;
        let after = app.get_state(&thread).await.unwrap().values.messages;
        assert_eq!(after.len(), 10 - 1 + 4);
        assert_eq!(after[1].text(), "edited");
        assert_eq!(after[1].id(), Some(second.as_str()));
        assert!(after.iter().all(|m| m.id() != Some(fourth.as_str())));
        assert_eq!(after[0], before[0]);
        assert_eq!(after[2], before[2]);
        assert_eq!(after[3..9], before[4..]);
        // The saver's own reads agree with the state: every stored list of the
        // thread (all but the first checkpoint's, made before the input)
        // decodes.
        let all = saver
            .list(
                Some(&CheckpointConfig::thread("edit")),
                &ListOptions::default(),
            )
            .await
            .unwrap();
        let stored = all
            .iter()
            .filter_map(|t| t.checkpoint.channel_values.get("messages"));
        assert_eq!(stored.clone().count(), all.len() - 1);
        assert!(stored
            .into_iter()
            .all(|b| b.decode::<Vec<Message>>().is_ok()));
    }

    fn extend(mut a: Vec<u32>, b: Vec<u32>) -> Vec<u32> {
        report_kept_prefix(a.len());
        a.extend(b);
        a
    }

    /// Reports keeping more items than it was given: the checkpoint stores
    /// the whole list instead of trusting it.
    fn overclaims(mut a: Vec<u32>, b: Vec<u32>) -> Vec<u32> {
        report_kept_prefix(a.len() + 10);
        a.extend(b);
        a
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Numbers {
        #[reducer(extend)]
        good: Vec<u32>,
        #[reducer(overclaims)]
        bad: Vec<u32>,
    }

    #[tokio::test]
    async fn a_reducer_of_our_own_reports_what_it_kept() {
        let saver = Arc::new(InMemorySaver::new());
        let app = StateGraph::<Numbers>::new()
            .add_node(node_fn("count", |s: &Numbers| {
                let n = s.good.len() as u32;
                Numbers::update().good(vec![n]).bad(vec![n])
            }))
            .add_edge(START, "count")
            .compile_with(Arc::clone(&saver) as Arc<dyn Checkpointer>)
            .unwrap();
        let thread = RunConfig::thread("n").with_durability(Durability::Sync);
        for _ in 0..20 {
            app.invoke(Numbers::update(), &thread).await.unwrap();
        }
        let state = app.get_state(&thread).await.unwrap().values;
        let expected: Vec<u32> = (0..20).collect();
        assert_eq!(state.good, expected);
        assert_eq!(state.bad, expected);
        let history = app
            .get_state_history(&thread, &ListOptions::default())
            .await
            .unwrap();
        for snapshot in history {
            let v = snapshot.values;
            assert_eq!(v.good, expected[..v.good.len()]);
            assert_eq!(v.bad, v.good);
        }
    }
}

mod shared_lists_and_compressed_values {
    //! `channels::extend` on lists shared by reference (`Arc<Vec<Arc<_>>>`)
    //! stores what each step appended, and the in-memory saver's compressed
    //! values read back as the same state (latest, history, a fork).
    use super::*;
    use stategraph::channels::extend;
    use stategraph::checkpoint::Checkpointer;

    type Item = Arc<serde_json::Value>;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Shared {
        #[reducer(extend)]
        events: Arc<Vec<Item>>,
        #[reducer(extend)]
        lines: Vec<String>,
    }

    /// A document of ~5 KB that repeats itself (compressible), numbered.
    fn document(n: usize) -> Item {
        Arc::new(serde_json::json!({
            "n": n,
            "body": format!("paragraph {n} ").repeat(400),
        }))
    }

    fn app(saver: Arc<InMemorySaver>) -> CompiledGraph<Shared> {
        StateGraph::<Shared>::new()
            .add_node(node_fn("add", |s: &Shared| {
                let n = s.events.len();
                // The node writes the list it read (shared, as Python's
                // `as_list = val`) and one new item.
                let mut more = vec![document(n)];
                more.extend(s.events.last().cloned());
                Shared::update()
                    .events(Arc::new(more))
                    .lines(vec![format!("line {n}")])
            }))
            .add_edge(START, "add")
            .compile_with(saver as Arc<dyn Checkpointer>)
            .unwrap()
    }

    async fn run(
        saver: &Arc<InMemorySaver>,
        thread: &RunConfig,
        turns: usize,
    ) -> CompiledGraph<Shared> {
        let app = app(Arc::clone(saver));
        for _ in 0..turns {
            app.invoke(Shared::update(), thread).await.unwrap();
        }
        app
    }

    /// The events after `turns` runs of `add` on a thread that started with
    /// `first` events.
    fn expected(first: usize, turns: usize) -> Vec<serde_json::Value> {
        let mut out: Vec<serde_json::Value> = (0..first).map(|n| (*document(n)).clone()).collect();
        for _ in 0..turns {
            let last = out.last().cloned();
            out.push((*document(out.len())).clone());
            out.extend(last);
        }
        out
    }

    #[tokio::test]
    async fn a_shared_list_stores_its_appends_and_reads_back_whole() {
        let thread = RunConfig::thread("s").with_durability(Durability::Sync);
        let (plain, packed) = (
            Arc::new(InMemorySaver::new().with_compression(None)),
            Arc::new(InMemorySaver::new()),
        );
        let mut stored = Vec::new();
        for saver in [&plain, &packed] {
            let app = run(saver, &thread, 20).await;
            let at_20 = saver.stored_bytes();
            let app2 = run(saver, &thread, 20).await;
            let at_40 = saver.stored_bytes();
            // Whole copies at every checkpoint would make this ~4x.
            assert!(at_40 * 10 < at_20 * 25, "{at_20} then {at_40} bytes");
            stored.push(at_40);
            let state = app2.get_state(&thread).await.unwrap().values;
            let want = expected(0, 40);
            let got: Vec<serde_json::Value> = state.events.iter().map(|v| (**v).clone()).collect();
            assert_eq!(got, want);
            assert_eq!(state.lines.len(), 40);
            let history = app
                .get_state_history(&thread, &ListOptions::default())
                .await
                .unwrap();
            // Three checkpoints per run: before the input, after it, after `add`.
            assert_eq!(history.len(), 120);
            for snapshot in &history {
                let events = &snapshot.values.events;
                let got: Vec<serde_json::Value> = events.iter().map(|v| (**v).clone()).collect();
                assert_eq!(got, want[..got.len()]);
                assert_eq!(
                    snapshot.values.lines[..],
                    state.lines[..snapshot.values.lines.len()]
                );
            }
            // A fork from the middle goes on from that checkpoint's lists.
            let middle = &history[41];
            let kept = middle.values.events.len();
            let fork = app
                .invoke(
                    Shared::update(),
                    &RunConfig::at_checkpoint(&middle.config).with_durability(Durability::Sync),
                )
                .await
                .unwrap();
            let got: Vec<serde_json::Value> = fork.events.iter().map(|v| (**v).clone()).collect();
            assert_eq!(got[..kept], want[..kept]);
            assert_eq!(got.len(), kept + 2);
        }
        // The same checkpoints with the appended items compressed (the
        // documents repeat themselves); the newest list, kept whole to be
        // extended in place, and the whole copies shared with it stay plain.
        assert!(
            stored[1] * 10 < stored[0] * 9,
            "plain {} compressed {}",
            stored[0],
            stored[1]
        );
    }

    #[tokio::test]
    async fn a_large_value_stored_whole_reads_back_from_its_compression() {
        // Durability `exit` on a new thread: one checkpoint, every list
        // stored whole.
        let thread = RunConfig::thread("exit").with_durability(Durability::Exit);
        let (plain, packed) = (
            Arc::new(InMemorySaver::new().with_compression(None)),
            Arc::new(InMemorySaver::new()),
        );
        let mut states = Vec::new();
        for saver in [&plain, &packed] {
            let app = app(Arc::clone(saver));
            let input = Shared::update().events(Arc::new((0..30).map(document).collect()));
            app.invoke(input, &thread).await.unwrap();
            let snapshot = app.get_state(&thread).await.unwrap();
            let raw = saver
                .get_tuple(&snapshot.config)
                .await
                .unwrap()
                .unwrap()
                .checkpoint
                .channel_values;
            states.push((saver.stored_bytes(), raw, snapshot.values));
        }
        let (plain_bytes, plain_raw, plain_state) = &states[0];
        let (packed_bytes, packed_raw, packed_state) = &states[1];
        assert!(
            packed_bytes * 4 < *plain_bytes,
            "{packed_bytes} against {plain_bytes}"
        );
        // The same JSON text comes back, byte for byte.
        assert_eq!(plain_raw, packed_raw);
        assert_eq!(plain_state.events, packed_state.events);
        let got: Vec<serde_json::Value> =
            packed_state.events.iter().map(|v| (**v).clone()).collect();
        assert_eq!(got, expected(30, 1));
    }
}

mod a_threads_next_run_starts_where_the_last_left_it {
    //! A thread's next run in the same process starts from the state its last
    //! run left in memory, not from decoding its checkpoint again (a long
    //! thread's turn costs what it adds); whenever the latest checkpoint is
    //! not the one that run stored, it decodes the checkpoint as before.
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// How many `Log`s this test thread decoded.
        static DECODED: Cell<usize> = const { Cell::new(0) };
    }

    fn decoded() -> usize {
        DECODED.with(Cell::get)
    }

    #[derive(Clone, Debug, Default, Serialize, PartialEq)]
    struct Log(Vec<String>);

    impl<'de> Deserialize<'de> for Log {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            DECODED.with(|c| c.set(c.get() + 1));
            Vec::<String>::deserialize(d).map(Log)
        }
    }

    fn join(mut a: Log, b: Log) -> Log {
        a.0.extend(b.0);
        a
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Turns {
        #[reducer(join)]
        log: Log,
        /// Never stored: empty again whenever the thread is read back.
        #[channel(untracked)]
        client: String,
    }

    fn app(saver: Arc<InMemorySaver>) -> CompiledGraph<Turns> {
        StateGraph::<Turns>::new()
            .add_node(node_fn("turn", |s: &Turns| {
                let line = format!("turn {} client={:?}", s.log.0.len(), s.client);
                Turns::update()
                    .log(Log(vec![line]))
                    .client("live".to_owned())
            }))
            .add_edge(START, "turn")
            .compile_with(saver as Arc<dyn stategraph::checkpoint::Checkpointer>)
            .unwrap()
    }

    fn lines(state: &Turns) -> Vec<&str> {
        state.log.0.iter().map(String::as_str).collect()
    }

    #[tokio::test]
    async fn without_decoding_and_with_what_a_read_back_would_drop_dropped() {
        let saver = Arc::new(InMemorySaver::new());
        let app = app(Arc::clone(&saver));
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let thread = RunConfig::thread(format!("{durability:?}")).with_durability(durability);
            // A new thread's run keeps nothing (many threads run once); the
            // second run decodes the checkpoint and keeps its end state.
            let before = decoded();
            app.invoke(Turns::update(), &thread).await.unwrap();
            app.invoke(Turns::update(), &thread).await.unwrap();
            assert!(
                decoded() > before,
                "{durability:?}: the second run decoded nothing"
            );
            let before = decoded();
            let mut out = None;
            for _ in 0..3 {
                out = Some(app.invoke(Turns::update(), &thread).await.unwrap());
            }
            assert_eq!(decoded(), before, "{durability:?}: a run decoded the log");
            // The untracked field is empty at each new run, as after a read back.
            let out = out.unwrap();
            let expected: Vec<String> = (0..5).map(|i| format!(r#"turn {i} client="""#)).collect();
            assert_eq!(lines(&out), expected, "{durability:?}");
            assert_eq!(out.client, "live");
            let stored = app.get_state(&thread).await.unwrap().values;
            assert_eq!(stored.log, out.log);
            assert_eq!(stored.client, "");
        }
    }

    #[tokio::test]
    async fn and_a_checkpoint_stored_by_anything_else_is_decoded() {
        let saver = Arc::new(InMemorySaver::new());
        let (ours, theirs) = (app(Arc::clone(&saver)), app(Arc::clone(&saver)));
        let thread = RunConfig::thread("shared").with_durability(Durability::Sync);
        ours.invoke(Turns::update(), &thread).await.unwrap();
        ours.invoke(Turns::update(), &thread).await.unwrap();
        // Another compiled graph (another process, say) runs a turn.
        theirs.invoke(Turns::update(), &thread).await.unwrap();
        let before = decoded();
        let out = ours.invoke(Turns::update(), &thread).await.unwrap();
        assert!(
            decoded() > before,
            "the other graph's checkpoint was not read"
        );
        assert_eq!(out.log.0.len(), 4);
        // `update_state` stores a checkpoint of its own.
        ours.update_state(
            &thread,
            Turns::update().log(Log(vec!["edited".into()])),
            None,
        )
        .await
        .unwrap();
        let before = decoded();
        let out = ours.invoke(Turns::update(), &thread).await.unwrap();
        assert!(decoded() > before, "the updated checkpoint was not read");
        assert_eq!(lines(&out)[4..], ["edited", r#"turn 5 client="""#]);
        // Time travel: the checkpoint named is the first turn's.
        let history = ours
            .get_state_history(&thread, &ListOptions::default())
            .await
            .unwrap();
        let first = history
            .iter()
            .rev()
            .find(|s| s.values.log.0.len() == 1)
            .unwrap();
        let fork = ours
            .invoke(
                Turns::update(),
                &RunConfig::at_checkpoint(&first.config).with_durability(Durability::Sync),
            )
            .await
            .unwrap();
        assert_eq!(lines(&fork), [r#"turn 0 client="""#, r#"turn 1 client="""#]);
    }
}

/// The sources and steps of a thread's checkpoints, oldest first.
async fn sources(saver: &InMemorySaver, thread: &str) -> Vec<(CheckpointSource, i64)> {
    use stategraph::checkpoint::{CheckpointConfig, Checkpointer};
    let mut listed = saver
        .list(
            Some(&CheckpointConfig::thread(thread)),
            &ListOptions::default(),
        )
        .await
        .unwrap();
    listed.reverse();
    listed
        .iter()
        .map(|t| (t.metadata.source, t.metadata.step))
        .collect()
}

/// Under `sync`, the `input` checkpoint is stored together with the
/// checkpoint of the `__start__` step after it (no node runs between the
/// two), and both before the first node runs; a breakpoint before that node
/// stores both too (docs/semantics.md §2.10).
#[tokio::test]
async fn under_sync_the_input_checkpoint_is_stored_before_any_node_runs() {
    let saver = Arc::new(InMemorySaver::new());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (looking, record) = (Arc::clone(&saver), Arc::clone(&seen));
    let build = |breakpoint: bool| {
        let (looking, record) = (Arc::clone(&looking), Arc::clone(&record));
        let graph = StateGraph::<Value>::new()
            .add_node(async_node_fn("look", move |_: Arc<Value>, _| {
                let (saver, record) = (Arc::clone(&looking), Arc::clone(&record));
                async move {
                    let stored = sources(&saver, "sync-input").await;
                    record.lock().unwrap().push(stored);
                    Value::update().value(1)
                }
            }))
            .add_edge(START, "look");
        let graph = if breakpoint {
            graph.interrupt_before("look")
        } else {
            graph
        };
        graph
            .compile_with(Arc::clone(&saver) as Arc<dyn stategraph::checkpoint::Checkpointer>)
            .unwrap()
    };
    let config = RunConfig::thread("sync-input").with_durability(Durability::Sync);
    build(false)
        .invoke(Value::update().value(1), &config)
        .await
        .unwrap();
    assert_eq!(
        seen.lock().unwrap().clone(),
        vec![vec![
            (CheckpointSource::Input, -1),
            (CheckpointSource::Loop, 0)
        ]],
        "the node finds the input checkpoint and `__start__`'s stored"
    );
    assert_eq!(
        sources(&saver, "sync-input").await,
        vec![
            (CheckpointSource::Input, -1),
            (CheckpointSource::Loop, 0),
            (CheckpointSource::Loop, 1)
        ]
    );

    let paused = RunConfig::thread("sync-paused").with_durability(Durability::Sync);
    let out = build(true)
        .invoke(Value::update().value(1), &paused)
        .await
        .unwrap();
    assert!(out.breakpoint.is_some(), "{out:?}");
    assert_eq!(
        sources(&saver, "sync-paused").await,
        vec![(CheckpointSource::Input, -1), (CheckpointSource::Loop, 0)],
        "a run that stops before its first node stores both"
    );
}

/// What a run hands to its guard's release (`RunGuard::storing`): the
/// `(source, step)` of each checkpoint, or `None` when it hands nothing.
mod handed_to_the_release {
    use super::*;
    use crate::hooked_saver::HookedSaver;
    use stategraph::checkpoint::{Checkpointer, RunGuard};
    use std::sync::Mutex;

    type Handed = Arc<Mutex<Vec<Option<Vec<(CheckpointSource, i64)>>>>>;

    fn app(fails: bool) -> (CompiledGraph<Value>, Arc<InMemorySaver>, Handed) {
        let inner = Arc::new(InMemorySaver::new());
        let handed = Handed::default();
        let record = Arc::clone(&handed);
        // The guard records what it is handed and stores it.
        let saver = HookedSaver::new(Arc::clone(&inner)).guard(move |inner| {
            let handed = Arc::clone(&record);
            RunGuard::storing(move |last| async move {
                let Some((parent, puts)) = last else {
                    handed.lock().unwrap().push(None);
                    return Ok(());
                };
                let steps = puts
                    .iter()
                    .map(|p| (p.metadata.source, p.metadata.step))
                    .collect();
                handed.lock().unwrap().push(Some(steps));
                inner.put_chain(&parent, puts).await.map(drop)
            })
        });
        let app = StateGraph::<Value>::new()
            .add_node(node_fn(
                "one",
                move |_: &Value| -> Result<ValueUpdate, ConnectionError> {
                    if fails {
                        Err(ConnectionError)
                    } else {
                        Ok(Value::update().value(1))
                    }
                },
            ))
            .add_edge(START, "one")
            .compile_with(saver)
            .unwrap();
        (app, inner, handed)
    }

    /// Under `sync` the run's last checkpoint is stored by the release (one
    /// call for a saver that can); under `exit` the one checkpoint too; under
    /// `async` everything was stored in the run (docs/semantics.md §2.10).
    #[tokio::test]
    async fn a_runs_last_checkpoint_is_stored_with_the_release_of_its_thread() {
        use CheckpointSource::{Input, Loop};
        for (durability, handed_last, history) in [
            (
                Durability::Sync,
                Some(vec![(Loop, 1)]),
                vec![(Input, -1), (Loop, 0), (Loop, 1)],
            ),
            (Durability::Exit, Some(vec![(Loop, 1)]), vec![(Loop, 1)]),
            (
                Durability::Async,
                None,
                vec![(Input, -1), (Loop, 0), (Loop, 1)],
            ),
        ] {
            let (app, saver, handed) = app(false);
            let config = RunConfig::thread("t").with_durability(durability);
            let out = app.invoke(Value::update().value(1), &config).await.unwrap();
            assert_eq!(out.value, 2);
            assert_eq!(*handed.lock().unwrap(), vec![handed_last], "{durability:?}");
            assert_eq!(sources(&saver, "t").await, history, "{durability:?}");
            assert_eq!(app.get_state(&config).await.unwrap().values.value, 2);
        }
    }

    /// Under `sync`, a `checkpoints` event of a checkpoint that a node follows
    /// or that ends the run comes once that checkpoint is stored (as
    /// LangGraph's, whose event follows the put it waited for), also when the
    /// release stores it and takes its time (here: it yields once first).
    #[tokio::test]
    async fn under_sync_the_last_checkpoints_event_follows_its_put() {
        use futures::StreamExt;
        let inner = Arc::new(InMemorySaver::new());
        let saver = HookedSaver::new(Arc::clone(&inner)).guard(|inner| {
            RunGuard::storing(move |last| async move {
                tokio::task::yield_now().await;
                match last {
                    Some((parent, puts)) => inner.put_chain(&parent, puts).await.map(drop),
                    None => Ok(()),
                }
            })
        });
        let app = StateGraph::<Value>::new()
            .add_node(node_fn("one", |_: &Value| Value::update().value(1)))
            .add_edge(START, "one")
            .compile_with(saver)
            .unwrap();
        let config = RunConfig::thread("events").with_durability(Durability::Sync);
        let mut stream = app.stream(Value::update().value(1), &config, StreamMode::Checkpoints);
        let mut steps = Vec::new();
        while let Some(event) = stream.next().await {
            let StreamEvent::Checkpoint(c) = event.unwrap() else {
                panic!("only checkpoint events")
            };
            steps.push(c.metadata.step);
            if c.metadata.step >= 0 {
                let stored = inner.get_tuple(&c.config).await.unwrap();
                assert!(
                    stored.is_some(),
                    "step {}: event before its put",
                    c.metadata.step
                );
            }
        }
        assert_eq!(steps, [-1, 0, 1]);
    }

    /// A run that fails stores what it has before it lets the thread go: the
    /// release is handed nothing.
    #[tokio::test]
    async fn a_failed_run_stores_its_checkpoints_before_the_release() {
        let (app, saver, handed) = app(true);
        let config = RunConfig::thread("t").with_durability(Durability::Sync);
        let failed = app.invoke(Value::update().value(1), &config).await;
        assert!(failed.is_err());
        assert_eq!(*handed.lock().unwrap(), vec![None]);
        assert_eq!(
            sources(&saver, "t").await,
            vec![(CheckpointSource::Input, -1), (CheckpointSource::Loop, 0)]
        );
    }
}

/// A caller that stops reading a run's stream (drops it: the run is
/// cancelled) keeps what the stream showed it: the thread then reads the
/// state of the last values event it got, whatever the durability, as
/// LangGraph's does (its loop stores the current checkpoint on exit, or
/// waits for the save it started).
/// A run cancelled while a subgraph ran in one of its tasks lets its thread
/// go only after the subgraph has stored what it made: the subgraph writes
/// through the run's lease, and a write after the release would be refused
/// (PostgreSQL's fence).
mod a_cancelled_subgraph {
    use super::*;
    use crate::hooked_saver::HookedSaver;
    use futures::StreamExt;
    use stategraph::checkpoint::RunGuard;
    use std::sync::Mutex;
    use std::time::Duration;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Count {
        #[reducer(std::ops::Add::add)]
        n: u32,
    }

    /// Logs "released" when dropped: a run's guard let go, whether released
    /// or dropped (a cancelled run with nothing of its own to store drops it).
    struct Released(Arc<Mutex<Vec<&'static str>>>);

    impl Drop for Released {
        fn drop(&mut self) {
            self.0.lock().unwrap().push("released");
        }
    }

    /// A saver that holds every put in a subgraph's namespace until `gate`
    /// has permits, and `log`s "subgraph stored" after each and "released"
    /// when a run lets its thread go.
    fn logged(
        log: &Arc<Mutex<Vec<&'static str>>>,
        gate: &Arc<tokio::sync::Semaphore>,
    ) -> HookedSaver {
        let (stored, released) = (Arc::clone(log), Arc::clone(log));
        HookedSaver::new(Arc::new(InMemorySaver::new()))
            .gate_nested_puts(Arc::clone(gate), move || {
                stored.lock().unwrap().push("subgraph stored")
            })
            .guard(move |_| {
                let released = Released(Arc::clone(&released));
                RunGuard::new(move || async move { drop(released) })
            })
    }

    /// `one`, then `wait`, which signals `started` and never completes.
    fn waiting(started: &Arc<tokio::sync::Semaphore>) -> CompiledGraph<Count> {
        let started = Arc::clone(started);
        StateGraph::<Count>::new()
            .add_node(node_fn("one", |_: &Count| Count::update().n(1)))
            .add_node(stategraph::async_node_fn(
                "wait",
                move |_: Arc<Count>, _ctx| {
                    started.add_permits(1);
                    async move {
                        std::future::pending::<()>().await;
                        Count::update()
                    }
                },
            ))
            .add_edge(START, "one")
            .add_edge("one", "wait")
            .compile()
            .unwrap()
    }

    /// Streams `app` under `durability` (`exit`: each level stores its
    /// current checkpoint when cancelled) until `started` has `waits`
    /// permits, and drops the stream.
    async fn drop_when_started(
        app: &CompiledGraph<Count>,
        started: &tokio::sync::Semaphore,
        waits: u32,
        durability: Durability,
    ) {
        let thread = RunConfig::thread("t").with_durability(durability);
        let mut stream = app.stream(Count::update(), &thread, StreamMode::Values);
        tokio::select! {
            permits = started.acquire_many(waits) => drop(permits.unwrap()),
            event = stream.next() => panic!("the run ended early: {event:?}"),
        }
        drop(stream);
    }

    /// Waits (up to 20 s) until `log` holds `len` entries, and returns them.
    async fn logged_entries(log: &Mutex<Vec<&'static str>>, len: usize) -> Vec<&'static str> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while log.lock().unwrap().len() < len && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        log.lock().unwrap().clone()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_before_the_thread_is_let_go() {
        let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let started = Arc::new(tokio::sync::Semaphore::new(0));
        let app = StateGraph::<Count>::new()
            .add_node(stategraph::Subgraph::new("sub", waiting(&started)))
            .add_edge(START, "sub")
            .compile_with(logged(&log, &gate))
            .unwrap();
        drop_when_started(&app, &started, 1, Durability::Exit).await;
        assert_eq!(
            *log.lock().unwrap(),
            Vec::<&str>::new(),
            "the thread was let go before the subgraph stored"
        );
        gate.add_permits(100);
        assert_eq!(
            logged_entries(&log, 2).await,
            ["subgraph stored", "released"]
        );
    }

    /// `one`, then `block`, which sleeps 1 ms (so that it runs on in a tokio
    /// task of its own), signals `started` and blocks its worker until
    /// `blocked` receives (deliberately: the runtime drops the task only
    /// after that), and then never completes.
    fn blocking(
        started: &Arc<tokio::sync::Semaphore>,
        blocked: std::sync::mpsc::Receiver<()>,
    ) -> CompiledGraph<Count> {
        blocking_logged(started, blocked, None)
    }

    /// [`blocking`], whose `block` logs "block dropped" to `dropped` (when
    /// given) as its future is dropped.
    fn blocking_logged(
        started: &Arc<tokio::sync::Semaphore>,
        blocked: std::sync::mpsc::Receiver<()>,
        dropped: Option<Arc<Mutex<Vec<&'static str>>>>,
    ) -> CompiledGraph<Count> {
        /// Logs "block dropped" when dropped.
        struct OnDrop(Option<Arc<Mutex<Vec<&'static str>>>>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                if let Some(log) = &self.0 {
                    log.lock().unwrap().push("block dropped");
                }
            }
        }
        let started = Arc::clone(started);
        let blocked = Arc::new(Mutex::new(blocked));
        StateGraph::<Count>::new()
            .add_node(node_fn("one", |_: &Count| Count::update().n(1)))
            .add_node(stategraph::async_node_fn(
                "block",
                move |_: Arc<Count>, _ctx| {
                    let (started, blocked) = (Arc::clone(&started), Arc::clone(&blocked));
                    let on_drop = OnDrop(dropped.clone());
                    async move {
                        let _on_drop = on_drop;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        started.add_permits(1);
                        // Another run's `block` waiting on the receiver
                        // does not wait here too (its worker would block).
                        if let Ok(blocked) = blocked.try_lock() {
                            let _ = blocked.recv();
                        }
                        std::future::pending::<()>().await;
                        Count::update()
                    }
                },
            ))
            .add_edge(START, "one")
            .add_edge("one", "block")
            .compile()
            .unwrap()
    }

    /// After `stored` puts in a subgraph's namespace, the thread is not let
    /// go while `block` holds its task; once it is let go, the last put is
    /// stored and then the thread is let go.
    async fn waits_for_the_blocked_task(
        log: &Mutex<Vec<&'static str>>,
        gate: &tokio::sync::Semaphore,
        unblock: std::sync::mpsc::Sender<()>,
        stored: usize,
    ) {
        gate.add_permits(100);
        assert_eq!(
            logged_entries(log, stored).await,
            vec!["subgraph stored"; stored]
        );
        // Room for a release that did not wait (the failure this looks for).
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            *log.lock().unwrap(),
            vec!["subgraph stored"; stored],
            "the thread was let go while a subgraph's task was still to store"
        );
        unblock.send(()).unwrap();
        let mut all = vec!["subgraph stored"; stored + 1];
        all.push("released");
        assert_eq!(logged_entries(log, stored + 2).await, all);
    }

    /// A semaphore with no permits yet.
    fn closed() -> Arc<tokio::sync::Semaphore> {
        Arc::new(tokio::sync::Semaphore::new(0))
    }

    /// `a` ([`waiting`]) and `b` ([`blocking`]) in one step, on a
    /// [`logged`] saver.
    fn two_subgraphs(
        log: &Arc<Mutex<Vec<&'static str>>>,
        gate: &Arc<tokio::sync::Semaphore>,
        started: &Arc<tokio::sync::Semaphore>,
        blocked: std::sync::mpsc::Receiver<()>,
    ) -> CompiledGraph<Count> {
        StateGraph::<Count>::new()
            .add_node(stategraph::Subgraph::new("a", waiting(started)))
            .add_node(stategraph::Subgraph::new("b", blocking(started, blocked)))
            .add_edge(START, "a")
            .add_edge(START, "b")
            .compile_with(logged(log, gate))
            .unwrap()
    }

    /// Two subgraphs waiting in one step run as tokio tasks of their own,
    /// which the runtime drops after the root's cancellation began (`b`'s
    /// only once its node lets its worker go): the root waits for those
    /// tasks, and then for the stores their runs made.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_tasks_of_their_own_stores_before_the_thread_is_let_go() {
        let (log, gate, started) = (Arc::default(), closed(), closed());
        let (unblock, blocked) = std::sync::mpsc::channel();
        let app = two_subgraphs(&log, &gate, &started, blocked);
        drop_when_started(&app, &started, 2, Durability::Exit).await;
        waits_for_the_blocked_task(&log, &gate, unblock, 1).await;
    }

    /// A run with nothing of its own left to store (durability `sync`) whose
    /// step had tasks of its own running lets its thread go only once the
    /// runtime dropped those tasks (a subgraph in one would store then).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_nothing_to_store_waits_for_its_tasks() {
        let (log, gate, started) = (Arc::default(), closed(), closed());
        let (unblock, blocked) = std::sync::mpsc::channel();
        let app = two_subgraphs(&log, &gate, &started, blocked);
        gate.add_permits(100);
        drop_when_started(&app, &started, 2, Durability::Sync).await;
        let before = log.lock().unwrap().clone();
        assert!(
            !before.contains(&"released"),
            "the thread was let go while `b`'s task ran"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            *log.lock().unwrap(),
            before,
            "the thread was let go while `b`'s task ran"
        );
        unblock.send(()).unwrap();
        let mut all = before.clone();
        all.push("released");
        assert_eq!(logged_entries(&log, before.len() + 1).await, all);
    }

    /// A saver whose guard holds nothing (`RunGuard::none`, as a saver that
    /// does not implement `begin_run` gives): a run cancelled with nothing
    /// of its own to store keeps the thread, in this process, until the
    /// tasks it aborted have ended. The next run of the thread starts only
    /// then.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_a_guard_holding_nothing_keeps_the_thread_until_its_tasks_end() {
        let (started, log) = (closed(), Arc::<Mutex<Vec<&'static str>>>::default());
        let (unblock, blocked) = std::sync::mpsc::channel::<()>();
        let puts = Arc::clone(&log);
        let saver = HookedSaver::new(Arc::new(InMemorySaver::new()))
            .on_put(move |_| puts.lock().unwrap().push("put"));
        let app = StateGraph::<Count>::new()
            .add_node(stategraph::Subgraph::new("a", waiting(&started)))
            .add_node(stategraph::Subgraph::new(
                "b",
                blocking_logged(&started, blocked, Some(Arc::clone(&log))),
            ))
            .add_edge(START, "a")
            .add_edge(START, "b")
            .compile_with(saver)
            .unwrap();
        drop_when_started(&app, &started, 2, Durability::Sync).await;
        let before = log.lock().unwrap().len();
        let next = {
            let app = app.clone();
            tokio::spawn(async move {
                let thread = RunConfig::thread("t").with_durability(Durability::Sync);
                app.invoke(Count::update(), &thread).await
            })
        };
        // Room for a next run that did not wait (the failure this looks for).
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            log.lock().unwrap()[before..],
            [] as [&str; 0],
            "the next run started while the cancelled run's task ran"
        );
        // `block` goes on (its receive fails) to a point where the runtime
        // drops its task; the next run starts after that.
        drop(unblock);
        let after = logged_entries(&log, before + 2).await;
        assert_eq!(after[before..before + 2], ["block dropped", "put"]);
        next.abort();
    }

    /// The fourth level of nesting runs in a tokio task of its own, dropped
    /// only once its node lets its worker go, after the three levels above it
    /// stored: the root still waits for it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn four_levels_deep_stores_before_the_thread_is_let_go() {
        let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let started = Arc::new(tokio::sync::Semaphore::new(0));
        let (unblock, blocked) = std::sync::mpsc::channel();
        let mut graph = blocking(&started, blocked);
        for level in ["l3", "l2", "l1"] {
            graph = StateGraph::<Count>::new()
                .add_node(node_fn("one", |_: &Count| Count::update().n(1)))
                .add_node(stategraph::Subgraph::new(level, graph))
                .add_edge(START, "one")
                .add_edge("one", level)
                .compile()
                .unwrap();
        }
        let app = StateGraph::<Count>::new()
            .add_node(stategraph::Subgraph::new("l0", graph))
            .add_edge(START, "l0")
            .compile_with(logged(&log, &gate))
            .unwrap();
        drop_when_started(&app, &started, 1, Durability::Exit).await;
        waits_for_the_blocked_task(&log, &gate, unblock, 3).await;
    }
}

mod a_dropped_stream {
    use super::*;
    use futures::StreamExt;
    use stategraph::checkpoint::Checkpointer;
    use std::time::Duration;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Count {
        #[reducer(std::ops::Add::add)]
        n: u32,
    }

    /// `one` then `two`, each adding 1; `ones` counts the runs of `one`.
    fn app(saver: Arc<dyn Checkpointer>, ones: Arc<AtomicUsize>) -> CompiledGraph<Count> {
        StateGraph::<Count>::new()
            .add_node(node_fn("one", move |_: &Count| {
                ones.fetch_add(1, Ordering::SeqCst);
                Count::update().n(1)
            }))
            .add_node(node_fn("two", |_: &Count| Count::update().n(1)))
            .add_edge(START, "one")
            .add_edge("one", "two")
            .compile_with(saver)
            .unwrap()
    }

    /// Streams a run of `app` on thread `t` and drops its stream at the
    /// values event with `n == stop_at`.
    async fn drop_at(app: &CompiledGraph<Count>, thread: &RunConfig, stop_at: u32) {
        let mut stream = app.stream(Count::update(), thread, StreamMode::Values);
        loop {
            match stream.next().await {
                Some(Ok(StreamEvent::Values(state))) if state.n == stop_at => break,
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("the run failed: {e}"),
                None => panic!("the run ended before n = {stop_at}"),
            }
        }
        drop(stream);
    }

    /// [`drop_at`], then what the thread reads (`n`, `next`) once the saver
    /// has stored what the run handed it (within 20 s).
    async fn read_after_dropping_at(
        saver: Arc<dyn Checkpointer>,
        durability: Durability,
        stop_at: u32,
    ) -> (u32, Vec<String>) {
        let app = app(saver, Arc::default());
        let thread = RunConfig::thread("t").with_durability(durability);
        drop_at(&app, &thread, stop_at).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let state = app.get_state(&thread).await.unwrap();
            let read = (
                state.values.n,
                state.next.iter().map(|n| n.to_string()).collect(),
            );
            if state.values.n == stop_at || tokio::time::Instant::now() >= deadline {
                return read;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn keeps_what_it_showed(saver: impl Fn() -> Arc<dyn Checkpointer>) {
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            assert_eq!(
                read_after_dropping_at(saver(), durability, 1).await,
                (1, vec!["two".to_owned()]),
                "{durability:?}, dropped after the first step"
            );
            assert_eq!(
                read_after_dropping_at(saver(), durability, 2).await,
                (2, vec![]),
                "{durability:?}, dropped after the last step"
            );
        }
    }

    /// A run of the thread started right after the drop (resuming it) waits
    /// for the cancelled run to finish storing, rather than failing with
    /// `ThreadBusy`, and continues from what the stream showed: `one` is not
    /// run again.
    async fn the_next_run_continues_from_it(saver: impl Fn() -> Arc<dyn Checkpointer>) {
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let ones = Arc::new(AtomicUsize::new(0));
            let app = app(saver(), Arc::clone(&ones));
            let thread = RunConfig::thread("t").with_durability(durability);
            drop_at(&app, &thread, 1).await;
            let out = app.invoke(None, &thread).await.unwrap();
            assert_eq!(out.n, 2, "{durability:?}");
            assert_eq!(
                ones.load(Ordering::SeqCst),
                1,
                "{durability:?}: `one` ran again"
            );
        }
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Log {
        #[reducer(concat)]
        log: Vec<String>,
    }

    /// `first`, then `fast` and `slow` in one step; `slow` waits until
    /// `release` holds a permit. `runs` names every node run.
    fn parallel(
        saver: Arc<dyn Checkpointer>,
        runs: Arc<std::sync::Mutex<Vec<&'static str>>>,
        release: Arc<tokio::sync::Semaphore>,
    ) -> CompiledGraph<Log> {
        let ran = move |name: &'static str| {
            let runs = Arc::clone(&runs);
            move || runs.lock().unwrap().push(name)
        };
        let (first, fast, slow) = (ran("first"), ran("fast"), ran("slow"));
        StateGraph::<Log>::new()
            .add_node(node_fn("first", move |_: &Log| {
                first();
                Log::update().log(vec!["first".to_owned()])
            }))
            .add_node(node_fn("fast", move |_: &Log| {
                fast();
                Log::update().log(vec!["fast".to_owned()])
            }))
            .add_node(stategraph::async_node_fn(
                "slow",
                move |_: Arc<Log>, _ctx| {
                    let (slow, release) = (slow.clone(), Arc::clone(&release));
                    async move {
                        let _permit = release.acquire().await.unwrap();
                        slow();
                        Log::update().log(vec!["slow".to_owned()])
                    }
                },
            ))
            .add_edge(START, "first")
            .add_edge("first", "fast")
            .add_edge("first", "slow")
            .compile_with(saver)
            .unwrap()
    }

    /// A run dropped while `slow` waits, after its sibling `fast` completed,
    /// keeps `fast`'s writes under every durability (LangGraph's `exit`
    /// stores its pending writes when its run is cancelled): the thread shows
    /// `fast`'s result with `slow` next, and resuming it runs `slow` alone.
    async fn keeps_a_completed_sibling(saver: impl Fn() -> Arc<dyn Checkpointer>) {
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let runs = Arc::new(std::sync::Mutex::new(Vec::new()));
            let release = Arc::new(tokio::sync::Semaphore::new(0));
            let app = parallel(saver(), Arc::clone(&runs), Arc::clone(&release));
            let thread = RunConfig::thread("t").with_durability(durability);
            let mut stream = app.stream(Log::update(), &thread, StreamMode::Values);
            // The stream drives the run: polled until `slow` waits (it cannot
            // complete without a permit), after `fast` completed.
            while runs.lock().unwrap().len() < 2 {
                let next = tokio::time::timeout(Duration::from_millis(20), stream.next()).await;
                if let Ok(event) = next {
                    event.expect("the run ended early").unwrap();
                }
            }
            drop(stream);
            assert_eq!(*runs.lock().unwrap(), ["first", "fast"], "{durability:?}");
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            let state = loop {
                let state = app.get_state(&thread).await.unwrap();
                if state.values.log.len() == 2 || tokio::time::Instant::now() >= deadline {
                    break state;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            assert_eq!(state.values.log, ["first", "fast"], "{durability:?}");
            let next: Vec<String> = state.next.iter().map(|n| n.to_string()).collect();
            assert_eq!(next, ["slow"], "{durability:?}");
            // As LangGraph's snapshot: both tasks, `fast` with its result.
            let tasks: Vec<(&str, bool)> = state
                .tasks
                .iter()
                .map(|t| (t.name.as_str(), t.result.is_some()))
                .collect();
            assert_eq!(tasks, [("fast", true), ("slow", false)], "{durability:?}");
            runs.lock().unwrap().clear();
            release.add_permits(1);
            let out = app.invoke(None, &thread).await.unwrap();
            assert_eq!(out.log, ["first", "fast", "slow"], "{durability:?}");
            assert_eq!(*runs.lock().unwrap(), ["slow"], "{durability:?}: ran again");
        }
    }

    /// Without a tokio runtime (another executor drives the run), a saver
    /// that stores at once (in memory) or queues its work (SQLite) still
    /// stores what a dropped stream showed.
    #[test]
    fn without_a_tokio_runtime() {
        use futures::executor::block_on;
        let dir = tempfile::tempdir().unwrap();
        let mut file = 0;
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            for stop_at in [1, 2] {
                file += 1;
                let path = dir.path().join(format!("no-tokio-{file}.sqlite"));
                let sqlite = block_on(stategraph::sqlite::SqliteSaver::open(&path)).unwrap();
                let savers: [(&str, Arc<dyn Checkpointer>); 2] = [
                    ("memory", Arc::new(InMemorySaver::new())),
                    ("sqlite", Arc::new(sqlite)),
                ];
                for (name, saver) in savers {
                    let app = app(saver, Arc::default());
                    let thread = RunConfig::thread("t").with_durability(durability);
                    block_on(drop_at(&app, &thread, stop_at));
                    let state = block_on(app.get_state(&thread)).unwrap();
                    assert_eq!(
                        state.values.n, stop_at,
                        "{name}, {durability:?}, dropped at {stop_at}"
                    );
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_memory() {
        keeps_what_it_showed(|| Arc::new(InMemorySaver::new())).await;
        the_next_run_continues_from_it(|| Arc::new(InMemorySaver::new())).await;
        keeps_a_completed_sibling(|| Arc::new(InMemorySaver::new())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let count = AtomicUsize::new(0);
        let path = |i: usize| dir.path().join(format!("dropped-{i}.sqlite"));
        let mut savers = Vec::new();
        for i in 0..12 {
            savers.push(Arc::new(
                stategraph::sqlite::SqliteSaver::open(&path(i))
                    .await
                    .unwrap(),
            ));
        }
        let saver = || {
            let i = count.fetch_add(1, Ordering::Relaxed);
            Arc::clone(&savers[i]) as Arc<dyn Checkpointer>
        };
        keeps_what_it_showed(saver).await;
        the_next_run_continues_from_it(saver).await;
        keeps_a_completed_sibling(saver).await;
    }
}
