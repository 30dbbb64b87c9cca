//! The workloads, each built exactly as WORKLOADS.md describes, through the public API.

mod chain;
mod chat;
mod checkpoint_cost;
mod fanout;
mod functional;
mod interrupt_resume;
mod invoke;
mod react_agent;
mod sendfan;
mod seq;
mod store;
mod store_sqlite;
mod wide_state;

use crate::harness::Workload;
use futures::StreamExt;
use stategraph::checkpoint::InMemorySaver;
use stategraph::{CompiledGraph, RunConfig, State, StreamEvent, StreamMode};
use std::sync::Arc;

/// Workload names, in the order of WORKLOADS.md (those implemented so far).
pub const NAMES: &[&str] = &[
    "seq_1000",
    "fanout_100",
    "fanout_100_ckpt",
    "wide_state_25x300",
    "wide_state_25x300_ckpt",
    "react_agent_100",
    "react_agent_100_ckpt",
    "sendfan_10000",
    "interrupt_resume_1000",
    "invoke_2000",
    "invoke_2000_ckpt",
    "checkpoint_cost_memory",
    "checkpoint_cost_sqlite",
    "chain_10000",
    "chain_10000_ckpt_memory",
    "chain_10000_ckpt_sqlite",
    "functional_tasks_1000",
    "functional_tasks_1000_ckpt_memory",
    "functional_fanout_1000",
    "functional_fanout_1000_ckpt_memory",
    "store_put_10k_memory",
    "store_put_10k_sqlite",
    "store_search_10k_memory",
    "store_search_10k_sqlite",
    "chat_1000_turns_sync_memory",
    "chat_1000_turns_sync_sqlite",
];

pub fn build(name: &str) -> Option<Workload> {
    match name {
        "seq_1000" => Some(seq::build(1000)),
        "fanout_100" => Some(fanout::build(100, false)),
        "fanout_100_ckpt" => Some(fanout::build(100, true)),
        "wide_state_25x300" => Some(wide_state::build(300, None)),
        "wide_state_25x300_ckpt" => Some(wide_state::build(300, Some(InMemorySaver::new()))),
        "react_agent_100" => Some(react_agent::build(100, None)),
        "react_agent_100_ckpt" => Some(react_agent::build(100, Some(InMemorySaver::new()))),
        // The same with a saver that keeps every value as plain JSON text
        // (without compression; run only by name).
        "wide_state_25x300_ckpt_plain" => Some(wide_state::build(300, Some(plain()))),
        "react_agent_100_ckpt_plain" => Some(react_agent::build(100, Some(plain()))),
        "sendfan_10000" => Some(sendfan::build(10_000)),
        "interrupt_resume_1000" => Some(interrupt_resume::build(1000)),
        "invoke_2000" => Some(invoke::build(false)),
        "invoke_2000_ckpt" => Some(invoke::build(true)),
        "checkpoint_cost_memory" => Some(checkpoint_cost::build(false)),
        "checkpoint_cost_sqlite" => Some(checkpoint_cost::build(true)),
        "chain_10000" => Some(chain::build(10_000, chain::Saver::None)),
        "chain_10000_ckpt_memory" => Some(chain::build(10_000, chain::Saver::Memory)),
        "chain_10000_ckpt_sqlite" => Some(chain::build(10_000, chain::Saver::Sqlite)),
        "functional_tasks_1000" => Some(functional::build(1000, false, false)),
        "functional_tasks_1000_ckpt_memory" => Some(functional::build(1000, false, true)),
        "functional_fanout_1000" => Some(functional::build(1000, true, false)),
        "functional_fanout_1000_ckpt_memory" => Some(functional::build(1000, true, true)),
        "store_put_10k_memory" => Some(store::build_put()),
        "store_search_10k_memory" => Some(store::build_search()),
        "store_put_10k_sqlite" => Some(store_sqlite::build_put()),
        "store_search_10k_sqlite" => Some(store_sqlite::build_search()),
        // Chains and chats of other lengths, to see how the cost grows (run
        // only by name; chat_1000_turns_sync_* is one of them).
        _ => sized_chain(name)
            .map(|(n, saver)| chain::build(n, saver))
            .or_else(|| chat::parse(name).map(|(n, saver)| chat::build(n, saver))),
    }
}

/// `chain_<n>`, `chain_<n>_ckpt_memory`, `chain_<n>_ckpt_sqlite`.
fn sized_chain(name: &str) -> Option<(usize, chain::Saver)> {
    let rest = name.strip_prefix("chain_")?;
    let (n, saver) = match rest.split_once('_') {
        None => (rest, chain::Saver::None),
        Some((n, "ckpt_memory")) => (n, chain::Saver::Memory),
        Some((n, "ckpt_sqlite")) => (n, chain::Saver::Sqlite),
        Some(_) => return None,
    };
    n.parse().ok().filter(|&n| n > 0).map(|n| (n, saver))
}

/// Whether `name` is a workload of another size or variant, run only by name
/// (see [`build`]).
pub fn is_sized(name: &str) -> bool {
    sized_chain(name).is_some() || chat::parse(name).is_some() || PLAIN.contains(&name)
}

/// The `_ckpt` workloads' variants with an uncompressed in-memory saver.
const PLAIN: &[&str] = &["wide_state_25x300_ckpt_plain", "react_agent_100_ckpt_plain"];

/// An in-memory saver that keeps values uncompressed.
fn plain() -> InMemorySaver {
    InMemorySaver::new().with_compression(None)
}

/// A multi-threaded runtime with one worker per core (harness rule 2).
pub fn runtime() -> tokio::runtime::Runtime {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start the tokio runtime: {e}"))
}

/// The directory of this process's databases for workload `what`, under one
/// root per process (created by the workload, removed by [`remove_scratch`]).
pub fn scratch_dir(what: &str) -> std::path::PathBuf {
    scratch_root().join(what)
}

fn scratch_root() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("stategraph-bench-{}", std::process::id()))
}

/// Removes every workload's databases of this process (after its runs: a
/// chat run on SQLite leaves ~1 GB).
pub fn remove_scratch() {
    let root = scratch_root();
    match std::fs::remove_dir_all(&root) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            eprintln!("could not remove {}: {e}", root.display());
        }
        _ => {}
    }
}

/// A unique thread id per run (harness rule 4).
pub fn run_config() -> RunConfig {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    RunConfig::thread(format!("bench-{n}"))
        .with_recursion_limit(1_000_000_000)
        .with_durability(stategraph::Durability::Exit)
}

/// Consumes the values stream of one run: the last state and the number of chunks.
pub async fn stream_values<S: State>(
    graph: &CompiledGraph<S>,
    input: S::Update,
) -> Result<(Arc<S>, usize), String> {
    let mut stream = graph.stream(
        stategraph::GraphInput::update(input),
        &run_config(),
        StreamMode::Values,
    );
    let mut last = None;
    let mut chunks = 0;
    while let Some(event) = stream.next().await {
        match event.map_err(|e| e.to_string())? {
            StreamEvent::Values(state) => {
                chunks += 1;
                last = Some(state);
            }
            _ => return Err("an event of another mode".to_owned()),
        }
    }
    last.map(|s| (s, chunks))
        .ok_or_else(|| "no values chunk".to_owned())
}
