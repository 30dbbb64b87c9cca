//! `chain_10000` and `chain_10000_ckpt_{memory,sqlite}`: a chain of 10 000 nodes,
//! each writing one small field, without a saver and with one at durability
//! `sync` (a checkpoint per superstep). A superstep's checkpoint must cost what
//! the step changed, not the size of the graph: with a saver the chain stays
//! within a small factor of the chain without one, and the stored bytes grow
//! linearly with the number of steps.

use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{Durability, State, StateGraph, END, START};
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
        graph = graph.add_node_fn(format!("node_{i}"), move |_: &Chain| {
            Chain::update().step(step)
        });
    }
    graph = graph.add_edge(START, "node_0");
    for i in 1..n {
        graph = graph.add_edge(format!("node_{}", i - 1), format!("node_{i}"));
    }
    graph = graph.add_edge(format!("node_{}", n - 1), END);
    let rt = Arc::new(runtime());
    let dir = std::env::temp_dir().join(format!("stategraph-chain-{}", std::process::id()));
    let db = dir.join("chain.db");
    let graph = rt
        .block_on(async {
            match saver {
                Saver::None => graph.compile(),
                Saver::Memory => graph.compile_with(stategraph::checkpoint::InMemorySaver::new()),
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
    Workload::new(
        move || {
            let config = run_config().durability(Durability::Sync);
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
            let history = check_rt
                .block_on(check_graph.get_state_history(&config, &Default::default()))
                .map_err(|e| e.to_string())?;
            // The input, `__start__`, then one per node.
            expect(history.len() == n + 2, || {
                format!("{} checkpoints, expected {}", history.len(), n + 2)
            })?;
            let last = &history[0];
            expect(last.values.step == n as u64 && last.next.is_empty(), || {
                format!(
                    "the last checkpoint holds {:?}, next {:?}",
                    last.values, last.next
                )
            })?;
            let middle = &history[n / 2];
            expect(middle.values.step as usize == n - n / 2, || {
                format!("checkpoint {} holds step {}", n / 2, middle.values.step)
            })
        },
    )
}
