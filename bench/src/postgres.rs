//! Checkpoints per second on PostgreSQL with 1, 4 and 16 threads running at once
//! (issue 9, part 6): each thread runs a graph of `STEPS` supersteps with
//! durability `sync`, so every superstep is one `put` the run waits for.
//!
//! These workloads need a server: `STATEGRAPH_BENCH_PG_URL` names it (e.g. the one
//! `scripts/test.sh` starts, or `postgres://postgres@127.0.0.1:5432/postgres`).
//! They are not in the default list (so `--quick` in CI needs no server); run
//! them with `--only postgres_ckpt_c1,postgres_ckpt_c4,postgres_ckpt_c16`.

use crate::harness::{expect, Workload};
use crate::workloads::runtime;
use graph_postgres::PostgresSaver;
use serde::{Deserialize, Serialize};
use stategraph::{Command, Durability, Goto, RunConfig, State, StateGraph, START};
use std::sync::Arc;
use std::time::Instant;

/// The opt-in workloads of this file.
pub const NAMES: &[&str] = &["postgres_ckpt_c1", "postgres_ckpt_c4", "postgres_ckpt_c16"];

const URL_VAR: &str = "STATEGRAPH_BENCH_PG_URL";
const STEPS: u64 = 100;

fn add(a: u64, b: u64) -> u64 {
    a + b
}

/// A small agent-like state: a counter that changes every step and a payload
/// that never does (so each put writes one blob).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Loop {
    #[reducer(add)]
    step: u64,
    payload: String,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Next {
    Tick,
    #[goto(end)]
    Done,
}

#[stategraph::node]
fn tick(s: &Loop) -> Command<Next> {
    let next = if s.step + 1 >= STEPS {
        Next::Done
    } else {
        Next::Tick
    };
    Command::goto(next).update(Loop::update().step(1))
}

/// A thread no earlier run used, in this process or another one on the same
/// database.
fn fresh_thread() -> RunConfig {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    RunConfig::thread(format!("pg-bench-{}-{started}-{n}", std::process::id()))
        .with_recursion_limit(STEPS + 10)
        .with_durability(Durability::Sync)
}

pub fn build(name: &str) -> Option<Workload> {
    let concurrency: usize = match name {
        "postgres_ckpt_c1" => 1,
        "postgres_ckpt_c4" => 4,
        "postgres_ckpt_c16" => 16,
        _ => return None,
    };
    let url = match std::env::var(URL_VAR) {
        Ok(url) => url,
        Err(_) => panic!(
            "{name} needs a PostgreSQL server: set {URL_VAR} (e.g. \
             postgres://postgres@127.0.0.1:5432/postgres)"
        ),
    };
    let rt = Arc::new(runtime());
    let graph = rt.block_on(async {
        let saver = PostgresSaver::builder(&url)
            .map(|b| b.max_connections(concurrency.max(4)))
            .unwrap_or_else(|e| panic!("{URL_VAR}: {e}"))
            .connect()
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {URL_VAR}={url}: {e}"));
        StateGraph::<Loop>::new()
            .add_node(tick)
            .add_edge(START, tick)
            .compile_with(saver)
            .unwrap_or_else(|e| panic!("postgres_ckpt graph: {e}"))
    });
    let input = Loop::update().payload("p".repeat(1024));
    let (check_rt, check_graph) = (Arc::clone(&rt), graph.clone());
    let name = name.to_owned();
    Some(Workload::new(
        move || {
            let t0 = Instant::now();
            let configs: Vec<_> = (0..concurrency).map(|_| fresh_thread()).collect();
            let outs = rt.block_on(futures::future::join_all(
                configs.iter().map(|c| graph.invoke(input.clone(), c)),
            ));
            let elapsed = t0.elapsed().as_secs_f64();
            let mut steps = Vec::new();
            for out in outs {
                steps.push(out.map_err(|e| e.to_string())?.step);
            }
            // Per thread: the input checkpoint, one per superstep, and the last one.
            let checkpoints = concurrency as f64 * (STEPS + 2) as f64;
            eprintln!(
                "{name}: {checkpoints} checkpoints in {:.1} ms: {:.0} checkpoints/s",
                elapsed * 1e3,
                checkpoints / elapsed
            );
            Ok((steps, configs))
        },
        move |(steps, configs)| {
            expect(steps.iter().all(|s| *s == STEPS), || {
                format!("steps={steps:?}")
            })?;
            let history = check_rt
                .block_on(check_graph.get_state_history(&configs[0], &Default::default()))
                .map_err(|e| e.to_string())?;
            expect(history.len() as u64 == STEPS + 2, || {
                format!("{} checkpoints", history.len())
            })
        },
    ))
}
