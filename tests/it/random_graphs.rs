//! Property tests over random graphs (issue 7 §5): whatever the shape (DAGs with
//! plain and join edges, with or without a cycle back to the start), the timing
//! of the tasks and where a failure happens, the final state is the same, and a
//! failed run resumed from its checkpoint ends exactly like a run that never
//! failed — every completed task's writes are there once, nothing is lost or
//! duplicated.

use proptest::prelude::*;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::NodeOutput;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Trace {
    #[reducer(concat)]
    log: Vec<String>,
}

/// A random DAG: node `j > 0` has predecessors among `0..j` (plain edges) and may
/// wait for all of a set of them (a join edge, `add_edge([..], nj)`); every node
/// has at least one of the two, so each runs. Node 0 follows START. Each node may
/// also fan out `Send`s to a worker.
#[derive(Debug, Clone)]
struct Shape {
    preds: Vec<BTreeSet<usize>>,
    /// The sources of node `j`'s join edge (none, or two or more).
    joins: Vec<BTreeSet<usize>>,
    sends: Vec<u8>,
    /// How many times each node yields to the scheduler before it answers.
    yields: Vec<u8>,
    /// How many times the last node loops back to the first (a cycle), 0 for none.
    loops: usize,
}

fn shape() -> impl Strategy<Value = Shape> {
    (2usize..8).prop_flat_map(|n| {
        let preds = (1..n)
            .map(|j| proptest::collection::btree_set(0..j, 1..=j.min(3)))
            .collect::<Vec<_>>();
        // Node j >= 2 may join two or more of its predecessors, and then may
        // have no plain edge at all.
        let joins = (1..n)
            .map(|j| {
                if j < 2 {
                    Just(BTreeSet::new()).boxed()
                } else {
                    prop_oneof![
                        2 => Just(BTreeSet::new()),
                        1 => proptest::collection::btree_set(0..j, 2..=j.min(4)),
                    ]
                    .boxed()
                }
            })
            .collect::<Vec<_>>();
        (
            preds,
            joins,
            proptest::collection::vec(any::<bool>(), n),
            proptest::collection::vec(0u8..3, n),
            proptest::collection::vec(0u8..4, n),
            0usize..3,
        )
            .prop_map(|(mut preds, mut joins, join_only, sends, yields, loops)| {
                preds.insert(0, BTreeSet::new());
                joins.insert(0, BTreeSet::new());
                for (j, only) in join_only.into_iter().enumerate() {
                    if only && !joins[j].is_empty() {
                        preds[j].clear();
                    }
                }
                Shape {
                    preds,
                    joins,
                    sends,
                    yields,
                    loops,
                }
            })
    })
}

/// Fails the first time it is asked for `node`, when armed.
#[derive(Default)]
struct Faults {
    node: Option<usize>,
    fired: AtomicBool,
    calls: AtomicUsize,
    /// Node executions that completed (returned their writes).
    completed: AtomicUsize,
}

impl Faults {
    fn trip(&self, node: usize) -> bool {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.node == Some(node) && !self.fired.swap(true, Ordering::SeqCst)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("injected failure")]
struct Injected;

fn build(shape: &Shape, faults: Arc<Faults>, saver: bool) -> CompiledGraph<Trace> {
    let mut graph = StateGraph::<Trace>::new().add_node(async_node_fn(
        "worker",
        |item: Arc<String>, _ctx: Context| async move {
            tokio::task::yield_now().await;
            Trace::update().log(vec![format!("worker({item})")])
        },
    ));
    for (i, (&sends, &yields)) in shape.sends.iter().zip(&shape.yields).enumerate() {
        let faults = Arc::clone(&faults);
        graph = graph.add_node(async_node_fn(
            format!("n{i}"),
            move |_: Arc<Trace>, _ctx: Context| {
                let faults = Arc::clone(&faults);
                async move {
                    for _ in 0..yields {
                        tokio::task::yield_now().await;
                    }
                    if faults.trip(i) {
                        return Err(Injected);
                    }
                    faults.completed.fetch_add(1, Ordering::SeqCst);
                    let mut out =
                        NodeOutput::new().with_update(Trace::update().log(vec![format!("n{i}")]));
                    for k in 0..sends {
                        out = out
                            .with_send(stategraph::Send::to_named("worker", format!("n{i}.{k}")));
                    }
                    Ok(out)
                }
            },
        ));
    }
    graph = graph.add_edge(START, "n0");
    if shape.loops > 0 {
        // A cycle: the last node sends the run back to the first, `loops` times.
        let last = format!("n{}", shape.preds.len() - 1);
        let (name, loops) = (last.clone(), shape.loops);
        graph = graph.add_conditional_edges(last, move |t: &Trace| {
            if t.log.iter().filter(|x| **x == name).count() <= loops {
                "n0"
            } else {
                END
            }
        });
    }
    for (j, preds) in shape.preds.iter().enumerate() {
        for &i in preds {
            graph = graph.add_edge(format!("n{i}"), format!("n{j}"));
        }
    }
    for (j, sources) in shape.joins.iter().enumerate() {
        if !sources.is_empty() {
            let sources: Vec<String> = sources.iter().map(|i| format!("n{i}")).collect();
            graph = graph.add_edge(sources, format!("n{j}"));
        }
    }
    if saver {
        graph.compile_with(InMemorySaver::new()).unwrap()
    } else {
        graph.compile().unwrap()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_final_state_does_not_depend_on_timing_or_a_saver(shape in shape()) {
        let rt = runtime();
        let plain = build(&shape, Arc::default(), false);
        let first = rt.block_on(plain.invoke(Trace::update(), &RunConfig::new().with_recursion_limit(200))).unwrap();
        let second = rt.block_on(plain.invoke(Trace::update(), &RunConfig::new().with_recursion_limit(200))).unwrap();
        prop_assert_eq!(&first.log, &second.log);
        let saved = build(&shape, Arc::default(), true);
        let third = rt
            .block_on(saved.invoke(Trace::update(), &RunConfig::thread("t").with_recursion_limit(200)))
            .unwrap();
        prop_assert_eq!(&first.log, &third.log);
        // Every node ran at least once, in a DAG where each has a path from START.
        for i in 0..shape.preds.len() {
            let name = format!("n{}", i);
            prop_assert!(first.log.contains(&name));
        }
    }

    #[test]
    fn a_failed_run_resumed_ends_like_a_run_that_never_failed(
        shape in shape(),
        victim in any::<prop::sample::Index>(),
    ) {
        let rt = runtime();
        let clean_faults = Arc::new(Faults::default());
        let clean = build(&shape, Arc::clone(&clean_faults), false);
        let expected = rt.block_on(clean.invoke(Trace::update(), &RunConfig::new().with_recursion_limit(200))).unwrap();

        let victim = victim.index(shape.preds.len());
        let faults = Arc::new(Faults { node: Some(victim), ..Faults::default() });
        let app = build(&shape, Arc::clone(&faults), true);
        let config = RunConfig::thread("t").with_recursion_limit(200);
        let err = rt.block_on(app.invoke(Trace::update(), &config)).unwrap_err();
        let is_victim = matches!(&err, GraphError::NodeFailed { node, .. } if *node == format!("n{}", victim));
        prop_assert!(is_victim, "{}", err);
        let resumed = rt.block_on(app.invoke(None, &config)).unwrap();
        prop_assert_eq!(&resumed.log, &expected.log);
        // The checkpoint agrees with the returned state.
        let stored = rt.block_on(app.get_state(&config)).unwrap();
        prop_assert_eq!(&stored.values.log, &expected.log);
        prop_assert!(stored.next.is_empty());
        // Every task that completed ran once: the failed run's completed tasks were
        // restored on resume, not run again.
        prop_assert_eq!(
            faults.completed.load(Ordering::SeqCst),
            clean_faults.completed.load(Ordering::SeqCst)
        );
    }
}
