//! `chain_10000` and `chain_10000_ckpt_{memory,sqlite}`: a chain of 10 000 nodes,
//! each writing one small field, without a saver and with one at durability
//! `sync` (a checkpoint per superstep). A superstep's checkpoint must cost what
//! the step changed, not the size of the graph: with a saver the chain stays
//! within a small factor of the chain without one, and the stored bytes grow
//! linearly with the number of steps.

use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{node_fn, Durability, RunConfig, State, StateGraph, END, START};
use std::sync::Arc;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chain {
    name: String,
    step: u64,
}

/// Where a chain keeps its checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saver {
    None,
    Memory,
    Sqlite,
}

pub fn build(n: usize, saver: Saver) -> Workload {
    let mut graph = StateGraph::<Chain>::new();
    for i in 0..n {
        let step = i as u64 + 1;
        graph = graph.add_node(node_fn(format!("node_{i}"), move |_: &Chain| {
            Chain::update().step(step)
        }));
    }
    graph = graph.add_edge(START, "node_0");
    for i in 1..n {
        graph = graph.add_edge(format!("node_{}", i - 1), format!("node_{i}"));
    }
    graph = graph.add_edge(format!("node_{}", n - 1), END);
    let rt = Arc::new(runtime());
    let dir = super::scratch_dir("chain");
    let db = dir.join("chain.db");
    let db_path = db.clone();
    let memory = std::sync::Arc::new(stategraph::checkpoint::InMemorySaver::new());
    let graph = rt
        .block_on(async {
            match saver {
                Saver::None => graph.compile(),
                Saver::Memory => graph.compile_with(std::sync::Arc::clone(&memory)
                    as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>),
                Saver::Sqlite => {
                    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("bench dir: {e}"));
                    let saver = stategraph::sqlite::SqliteSaver::open(&db)
                        .await
                        .unwrap_or_else(|e| panic!("sqlite: {e}"));
                    graph.compile_with(saver)
                }
            }
        })
        .unwrap_or_else(|e| panic!("chain graph: {e}"));
    let (check_rt, check_graph) = (Arc::clone(&rt), graph.clone());
    let workload = Workload::new(
        move || {
            let config = run_config().with_durability(Durability::Sync);
            let out = rt
                .block_on(graph.invoke(Chain::update().name("chain".into()), &config))
                .map_err(|e| e.to_string())?;
            Ok((out.into_state(), config))
        },
        move |(state, config)| {
            expect(state.step == n as u64 && state.name == "chain", || {
                format!("final state {state:?}")
            })?;
            if saver == Saver::None {
                return Ok(());
            }
            // Counted from the saver's rows; two of them read back whole (a
            // snapshot of each of 10 002 checkpoints would cost more than the run).
            let Some(saver) = check_graph.checkpointer() else {
                return Err("the graph has no saver".to_owned());
            };
            let thread = stategraph::checkpoint::CheckpointConfig::thread(
                config.thread_id().unwrap_or_default(),
            );
            let all = check_rt
                .block_on(saver.list(Some(&thread), &Default::default()))
                .map_err(|e| e.to_string())?;
            // The input, `__start__`, then one per node.
            expect(all.len() == n + 2, || {
                format!("{} checkpoints, expected {}", all.len(), n + 2)
            })?;
            let last = check_rt
                .block_on(check_graph.get_state(&config))
                .map_err(|e| e.to_string())?;
            expect(last.values.step == n as u64 && last.next.is_empty(), || {
                format!(
                    "the last checkpoint holds {:?}, next {:?}",
                    last.values, last.next
                )
            })?;
            let middle = check_rt
                .block_on(check_graph.get_state(&RunConfig::at_checkpoint(&all[n / 2].config)))
                .map_err(|e| e.to_string())?;
            let at = middle.values.step as usize;
            expect(
                at == n - n / 2 && middle.next == [format!("node_{at}")],
                || {
                    format!(
                        "checkpoint {} holds step {at}, next {:?}",
                        n / 2,
                        middle.next
                    )
                },
            )
        },
    );
    match saver {
        Saver::None => workload,
        Saver::Memory => workload.with_stored(crate::harness::memory_stored(memory)),
        Saver::Sqlite => workload.with_stored(crate::harness::sqlite_stored(db_path)),
    }
}
