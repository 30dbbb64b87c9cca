//! `functional_tasks_1000` and `functional_fanout_1000` (each also
//! `_ckpt_memory`): the Functional API. An entrypoint awaits 1 000 task calls
//! one after another, or calls 1 000 tasks and then awaits them all; each task
//! returns its argument plus one. With the in-memory saver at durability
//! `sync`, each task's result is stored as it finishes. Check: the sum, and
//! with a saver, one stored result per call.

use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use stategraph::func::{entrypoint, task, CompiledEntrypoint, Entrypoint};
use stategraph::{Durability, NodeError};
use std::sync::Arc;

#[task]
fn add_one(i: u64) -> u64 {
    i + 1
}

#[entrypoint]
async fn sequential(count: u64) -> Result<u64, NodeError> {
    let mut total = 0;
    for i in 0..count {
        total += add_one(i).await?;
    }
    Ok(total)
}

#[entrypoint]
async fn fan_out(count: u64) -> Result<u64, NodeError> {
    let calls: Vec<_> = (0..count).map(add_one).collect();
    let results = futures::future::try_join_all(calls).await?;
    Ok(results.into_iter().sum())
}

pub fn build(n: u64, parallel: bool, saver: bool) -> Workload {
    if parallel {
        measure(Entrypoint::new(fan_out), n, saver)
    } else {
        measure(Entrypoint::new(sequential), n, saver)
    }
}

fn measure<F>(entry: Entrypoint<F>, n: u64, saver: bool) -> Workload
where
    F: stategraph::func::EntrypointFn<Input = u64, Output = u64>,
{
    let memory = std::sync::Arc::new(stategraph::checkpoint::InMemorySaver::new());
    let app: CompiledEntrypoint<F> = if saver {
        entry.compile_with(std::sync::Arc::clone(&memory)
            as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>)
    } else {
        entry.compile()
    }
    .unwrap_or_else(|e| panic!("functional workload: {e}"));
    let rt = Arc::new(runtime());
    let (check_rt, check_app) = (Arc::clone(&rt), app.clone());
    let workload = Workload::new(
        move || {
            let config = run_config().with_durability(Durability::Sync);
            let out = rt
                .block_on(app.invoke(n, &config))
                .map_err(|e| e.to_string())?;
            Ok((out.value, config))
        },
        move |(value, config)| {
            expect(value == Some(n * (n + 1) / 2), || format!("sum {value:?}"))?;
            let Some(saver) = check_app.graph().checkpointer() else {
                return Ok(());
            };
            let thread = stategraph::checkpoint::CheckpointConfig::thread(
                config.thread_id().unwrap_or_default(),
            );
            let all = check_rt
                .block_on(saver.list(Some(&thread), &Default::default()))
                .map_err(|e| e.to_string())?;
            let stored = all
                .iter()
                .flat_map(|t| &t.pending_writes)
                .filter(|w| w.channel == "__return__")
                .count();
            expect(stored as u64 == n, || {
                format!("{stored} stored task results, expected {n}")
            })
        },
    );
    if saver {
        workload.with_stored(crate::harness::memory_stored(memory))
    } else {
        workload
    }
}
