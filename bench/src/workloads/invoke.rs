//! `invoke_2000` and `invoke_2000_ckpt`: `interrupt_resume_1000` without its
//! interrupt, to show what its invocations cost before any checkpoint.
//!
//! Its graph (`START → ask → done → END`, two optional string fields), with
//! `ask` writing its reply at once, is invoked 2000 times (as many invocations
//! as interrupt_resume_1000 has), each on a new thread:
//! - `invoke_2000`: without a saver. The engine's fixed cost of a run (load
//!   nothing, three supersteps, store nothing), the floor under each of
//!   interrupt_resume_1000's invocations.
//! - `invoke_2000_ckpt`: with the in-memory saver, durability exit (one
//!   checkpoint stored per invocation).
//!
//! bench/anchor.py has the Python side.

use super::interrupt_resume::{graph, Ask};
use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use stategraph::checkpoint::{Checkpointer, InMemorySaver};
use std::sync::Arc;

const INVOCATIONS: usize = 2000;

pub fn build(saver: bool) -> Workload {
    let memory = Arc::new(InMemorySaver::new());
    let builder = graph(false);
    let graph = if saver {
        builder.compile_with(Arc::clone(&memory) as Arc<dyn Checkpointer>)
    } else {
        builder.compile()
    }
    .unwrap_or_else(|e| panic!("invoke graph: {e}"));
    let rt = runtime();
    let workload = Workload::new(
        move || {
            rt.block_on(async {
                let mut bad = Vec::new();
                for k in 0..INVOCATIONS {
                    let out = graph
                        .invoke(Ask::update(), &run_config())
                        .await
                        .map_err(|e| format!("invocation {k}: {e}"))?;
                    if out.reply.as_deref() != Some("a") || out.answer.as_deref() != Some("a") {
                        bad.push(format!("invocation {k}: {out:?}"));
                    }
                }
                Ok(bad)
            })
        },
        |bad: Vec<String>| {
            expect(bad.is_empty(), || {
                format!("{} wrong results, first: {}", bad.len(), bad[0])
            })
        },
    );
    if saver {
        workload.with_stored(crate::harness::memory_stored(memory))
    } else {
        workload
    }
}
