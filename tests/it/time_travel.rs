//! update_state, forks and replays (docs/semantics.md §7.3–§7.6; scenarios 39–40
//! of its appendix A).

use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::NodeUpdate;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Trail {
    #[reducer(concat)]
    value: Vec<String>,
}

fn chain(calls: Arc<AtomicUsize>) -> CompiledGraph<Trail> {
    let (ca, cb) = (Arc::clone(&calls), calls);
    StateGraph::<Trail>::new()
        .add_node(node_fn("node_a", move |_: &Trail| {
            ca.fetch_add(1, Ordering::SeqCst);
            Trail::update().value(vec!["a".into()])
        }))
        .add_node(node_fn("node_b", move |_: &Trail| {
            cb.fetch_add(100, Ordering::SeqCst);
            Trail::update().value(vec!["b".into()])
        }))
        .add_edge(START, "node_a")
        .add_edge("node_a", "node_b")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

async fn history(graph: &CompiledGraph<Trail>, thread: &str) -> Vec<StateSnapshot<Trail>> {
    graph
        .get_state_history(&RunConfig::thread(thread), &ListOptions::default())
        .await
        .unwrap()
}

use stategraph::StateSnapshot;

#[tokio::test]
async fn update_state_forks_and_the_run_continues_from_the_update() {
    let graph = chain(Arc::default());
    let config = RunConfig::thread("t");
    let out = graph.invoke(Trail::update(), &config).await.unwrap();
    assert_eq!(out.value, ["a", "b"]);

    let before_b = history(&graph, "t")
        .await
        .into_iter()
        .find(|s| s.next == ["node_b"])
        .unwrap();
    let forked = graph
        .update_state(
            &RunConfig::at_checkpoint(&before_b.config),
            Trail::update().value(vec!["x".into()]),
            None,
        )
        .await
        .unwrap();
    let snapshot = graph
        .get_state(&RunConfig::at_checkpoint(&forked))
        .await
        .unwrap();
    let meta = snapshot.metadata.clone().unwrap();
    assert_eq!(meta.source, CheckpointSource::Update);
    assert_eq!(meta.step, before_b.metadata.as_ref().unwrap().step + 1);
    assert_eq!(snapshot.values.value, ["a", "x"]);
    assert_eq!(snapshot.next, ["node_b"], "node_a's edge fired again");
    assert_eq!(snapshot.parent_config.as_ref(), Some(&before_b.config));

    let out = graph
        .invoke(None, &RunConfig::at_checkpoint(&forked))
        .await
        .unwrap();
    assert_eq!(out.value, ["a", "x", "b"]);
    // The original branch is still there; the newest state is the fork's.
    let latest = graph.get_state(&config).await.unwrap();
    assert_eq!(latest.values.value, ["a", "x", "b"]);
    assert!(history(&graph, "t")
        .await
        .iter()
        .any(|s| s.values.value == ["a", "b"]));
}

#[tokio::test]
async fn update_state_as_a_named_node_routes_from_that_node() {
    let graph = chain(Arc::default());
    let config = RunConfig::thread("t");
    graph.invoke(Trail::update(), &config).await.unwrap();
    let input = history(&graph, "t")
        .await
        .into_iter()
        .find(|s| s.metadata.as_ref().is_some_and(|m| m.step == -1))
        .unwrap();
    // Pretend node_a ran on the input checkpoint and wrote "z": node_b is next.
    let updated = graph
        .update_state(
            &RunConfig::at_checkpoint(&input.config),
            Trail::update().value(vec!["z".into()]),
            Some("node_a"),
        )
        .await
        .unwrap();
    let snapshot = graph
        .get_state(&RunConfig::at_checkpoint(&updated))
        .await
        .unwrap();
    assert_eq!(
        snapshot.next,
        ["node_b"],
        "the pending __start__ task was dropped"
    );
    let out = graph
        .invoke(None, &RunConfig::at_checkpoint(&updated))
        .await
        .unwrap();
    assert_eq!(out.value, ["z", "b"]);

    let err = graph
        .update_state(&config, Trail::update(), Some("nope"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("Node nope does not exist"),
        "{err}"
    );
}

#[tokio::test]
async fn replaying_an_old_checkpoint_reruns_its_step_on_a_fork() {
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = chain(Arc::clone(&calls));
    let config = RunConfig::thread("t");
    graph.invoke(Trail::update(), &config).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 101);
    let before = history(&graph, "t").await;
    let before_b = before.iter().find(|s| s.next == ["node_b"]).unwrap();

    let out = graph
        .invoke(None, &RunConfig::at_checkpoint(&before_b.config))
        .await
        .unwrap();
    assert_eq!(out.value, ["a", "b"]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        201,
        "node_b ran again, node_a did not"
    );

    let after = history(&graph, "t").await;
    // A fork copy of the replayed checkpoint, then the re-run step's checkpoint.
    assert_eq!(after.len(), before.len() + 2);
    let fork = &after[1];
    let meta = fork.metadata.as_ref().unwrap();
    assert_eq!(meta.source, CheckpointSource::Fork);
    assert_eq!(meta.step, before_b.metadata.as_ref().unwrap().step + 1);
    assert_eq!(fork.next, ["node_b"]);
    assert_eq!(fork.parent_config.as_ref(), Some(&before_b.config));
}

#[tokio::test]
async fn copy_makes_a_sibling_fork_without_changes() {
    let graph = chain(Arc::default());
    let config = RunConfig::thread("t");
    graph.invoke(Trail::update(), &config).await.unwrap();
    let before_b = history(&graph, "t")
        .await
        .into_iter()
        .find(|s| s.next == ["node_b"])
        .unwrap();
    let copy = graph
        .update_state(
            &RunConfig::at_checkpoint(&before_b.config),
            Trail::update(),
            Some("__copy__"),
        )
        .await
        .unwrap();
    let snapshot = graph
        .get_state(&RunConfig::at_checkpoint(&copy))
        .await
        .unwrap();
    assert_eq!(snapshot.values, before_b.values);
    assert_eq!(snapshot.next, before_b.next);
    assert_eq!(
        snapshot.metadata.as_ref().unwrap().source,
        CheckpointSource::Fork
    );
    assert_eq!(
        snapshot.parent_config, before_b.parent_config,
        "a sibling, not a child"
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct FooBaz {
    foo: String,
    baz: String,
}

fn foo_baz() -> CompiledGraph<FooBaz> {
    StateGraph::<FooBaz>::new()
        .add_node(node_fn("a", |_: &FooBaz| {
            FooBaz::update().foo("from a".into())
        }))
        .add_node(node_fn("b", |_: &FooBaz| {
            FooBaz::update().baz("from b".into())
        }))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

#[tokio::test]
async fn bulk_update_state_stores_one_checkpoint_per_superstep() {
    let graph = foo_baz();
    let config = RunConfig::thread("2");
    let last = graph
        .bulk_update_state(
            &config,
            vec![
                vec![NodeUpdate::new(FooBaz::update().foo("updated".into())).as_node("a")],
                vec![NodeUpdate::new(FooBaz::update().baz("new".into())).as_node("b")],
            ],
        )
        .await
        .unwrap();
    let state = graph.get_state(&config).await.unwrap();
    assert_eq!(
        state.values,
        FooBaz {
            foo: "updated".into(),
            baz: "new".into()
        }
    );
    assert_eq!(state.config, last);
    assert_eq!(
        graph
            .get_state_history(&config, &ListOptions::default())
            .await
            .unwrap()
            .len(),
        2
    );

    for (supersteps, message) in [
        (vec![], "No supersteps provided"),
        (vec![vec![]], "No updates provided"),
        (
            vec![vec![
                NodeUpdate::new(FooBaz::update()).as_node("a"),
                NodeUpdate::new(FooBaz::update()),
            ]],
            "as_node is required when applying multiple updates",
        ),
        (
            vec![vec![
                NodeUpdate::new(None).as_node(END),
                NodeUpdate::new(FooBaz::update()).as_node("a"),
            ]],
            "cannot be combined",
        ),
    ] {
        let err = graph
            .bulk_update_state(&RunConfig::thread("3"), supersteps)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
}

#[tokio::test]
async fn update_as_end_finishes_the_pending_step_and_as_input_restarts() {
    let graph = foo_baz();
    let config = RunConfig::thread("t");
    graph.invoke(FooBaz::update(), &config).await.unwrap();
    let before_b = graph
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.next == ["b"])
        .unwrap();

    // END: `b` never runs on this branch. Its writes, stored when it ran
    // (durability `async`), are applied as a completed task's: LangGraph 1.2.22
    // shows `{'foo': 'from a', 'baz': 'from b'}` here too.
    assert!(before_b.tasks[0].result.is_some());
    let ended = graph
        .update_state(&RunConfig::at_checkpoint(&before_b.config), None, Some(END))
        .await
        .unwrap();
    let state = graph
        .get_state(&RunConfig::at_checkpoint(&ended))
        .await
        .unwrap();
    assert!(state.next.is_empty());
    assert_eq!(state.values.baz, "from b");
    assert_eq!(state.metadata.unwrap().source, CheckpointSource::Update);

    // __input__: the values are new input; the graph starts over from __start__.
    let restarted = graph
        .update_state(
            &config,
            FooBaz::update().baz("input".into()),
            Some("__input__"),
        )
        .await
        .unwrap();
    let state = graph
        .get_state(&RunConfig::at_checkpoint(&restarted))
        .await
        .unwrap();
    assert_eq!(state.next, ["__start__"]);
    assert_eq!(state.metadata.unwrap().source, CheckpointSource::Input);
    let out = graph
        .invoke(None, &RunConfig::at_checkpoint(&restarted))
        .await
        .unwrap();
    assert_eq!(out.foo, "from a");
    assert_eq!(out.baz, "from b", "b ran again after the new input");
}

#[tokio::test]
async fn update_checkpoints_record_no_updated_channels() {
    let graph = chain(Arc::default());
    let config = RunConfig::thread("t");
    graph.invoke(Trail::update(), &config).await.unwrap();
    let saver = graph.checkpointer().unwrap();
    let latest = stategraph::checkpoint::CheckpointConfig::thread("t");
    let run_end = saver.get_tuple(&latest).await.unwrap().unwrap();
    assert_eq!(
        run_end.checkpoint.updated_channels.as_deref(),
        Some(&["value".into()][..]),
        "a loop checkpoint lists what its step changed"
    );
    let updated = graph
        .update_state(&config, Trail::update().value(vec!["u".into()]), None)
        .await
        .unwrap();
    let tuple = saver.get_tuple(&updated).await.unwrap().unwrap();
    assert_eq!(tuple.metadata.source, CheckpointSource::Update);
    assert_eq!(tuple.checkpoint.updated_channels, None);
    // Runs continue from such a checkpoint as usual.
    let out = graph.invoke(None, &config).await.unwrap();
    assert_eq!(out.value, ["a", "b", "u"]);
}

/// The three graphs checked against LangGraph 1.2.22: a chain `a → b`; `a`
/// fanning out to `w` with two `Send`s from a conditional edge; `a` sending to
/// `w` twice from its `Command`.
fn paths_graph(kind: &str) -> CompiledGraph<Trail> {
    let graph = StateGraph::<Trail>::new()
        .add_node(node_fn("w", |n: &i32| {
            Trail::update().value(vec![format!("w{n}")])
        }))
        .add_edge(START, "a");
    let graph = match kind {
        "chain" => graph
            .add_node(node_fn("a", |_: &Trail| {
                Trail::update().value(vec!["a".into()])
            }))
            .add_node(node_fn("b", |_: &Trail| {
                Trail::update().value(vec!["b".into()])
            }))
            .add_edge("a", "b"),
        "fan" => graph
            .add_node(node_fn("a", |_: &Trail| {
                Trail::update().value(vec!["a".into()])
            }))
            .add_conditional_edges("a", |_: &Trail| {
                vec![
                    stategraph::Send::to_named("w", 1),
                    stategraph::Send::to_named("w", 2),
                ]
            }),
        _ => graph.add_node(node_fn("a", |_: &Trail| {
            Command::<stategraph::NoGoto, TrailUpdate>::send(stategraph::Send::to_named("w", 1))
                .and_send(stategraph::Send::to_named("w", 2))
                .update(Trail::update().value(vec!["a".into()]))
        })),
    };
    graph.compile_with(InMemorySaver::new()).unwrap()
}

/// Each snapshot as `step next [name path result]`, newest first.
fn describe(snapshots: &[StateSnapshot<Trail>]) -> Vec<String> {
    snapshots
        .iter()
        .map(|s| {
            let step = s.metadata.as_ref().map_or(-9, |m| m.step);
            let tasks: Vec<String> = s
                .tasks
                .iter()
                .map(|t| {
                    let result = t.result.as_ref().map(|updates| {
                        let mut trail = Trail::default();
                        for u in updates {
                            if let Some(
                                stategraph::channels::ReducerWrite::Value(v)
                                | stategraph::channels::ReducerWrite::Overwrite(v),
                            ) = &u.value
                            {
                                trail.value.extend(v.iter().cloned());
                            }
                        }
                        trail.value
                    });
                    format!("{} {} {result:?}", t.name, t.path)
                })
                .collect();
            format!("{step} {:?} {tasks:?}", s.next)
        })
        .collect()
}

/// Python LangGraph 1.2.22 (`InMemorySaver`) prints, for
/// `[(t.name, t.path, t.result) for t in snap.tasks]` of every history entry
/// under durability `sync` and `async` (the chain; the fan-outs differ at
/// steps 1 and 0 only):
///
/// ```text
/// 2 () []
/// 1 ('b',) [('b', ('__pregel_pull', 'b'), {'v': ['b']})]
/// 0 ('a',) [('a', ('__pregel_pull', 'a'), {'v': ['a']})]
/// -1 ('__start__',) [('__start__', ('__pregel_pull', '__start__'), {'v': []})]
/// 1 ('w', 'w') [('w', ('__pregel_push', 0, False), {'v': ['w1']}),
///               ('w', ('__pregel_push', 1, False), {'v': ['w2']})]
/// ```
///
/// and under `exit` only the last checkpoint, `2 () []`. A `Command`'s sends
/// have the same flat paths as a conditional edge's.
#[tokio::test]
async fn history_shows_each_tasks_path_and_result_as_langgraph_does() {
    for kind in ["chain", "fan", "command"] {
        for durability in [
            stategraph::Durability::Sync,
            stategraph::Durability::Async,
            stategraph::Durability::Exit,
        ] {
            let graph = paths_graph(kind);
            let thread = format!("{kind}-{durability:?}");
            let config = RunConfig::thread(thread.as_str()).with_durability(durability);
            let input = Trail::update().value(vec![]);
            graph.invoke(input, &config).await.unwrap();
            let seen = describe(&history(&graph, &thread).await);
            let second = match kind {
                "chain" => r#"1 ["b"] ["b ('__pregel_pull', 'b') Some([\"b\"])"]"#,
                _ => concat!(
                    r#"1 ["w", "w"] ["w ('__pregel_push', 0, False) Some([\"w1\"])", "#,
                    r#""w ('__pregel_push', 1, False) Some([\"w2\"])"]"#
                ),
            };
            let expected: Vec<&str> = match durability {
                stategraph::Durability::Exit => vec!["2 [] []"],
                _ => vec![
                    "2 [] []",
                    second,
                    r#"0 ["a"] ["a ('__pregel_pull', 'a') Some([\"a\"])"]"#,
                    r#"-1 ["__start__"] ["__start__ ('__pregel_pull', '__start__') Some([])"]"#,
                ],
            };
            assert_eq!(seen, expected, "{kind} {durability:?}");
            let latest = graph.get_state(&config).await.unwrap();
            assert!(latest.tasks.is_empty(), "{kind} {durability:?}");
        }
    }
}
