//! `interrupt_resume_1000`: 1000 threads, each paused at an interrupt and resumed.

use super::{run_config, runtime};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{node_fn, Command, Context, NodeError, State, StateGraph, END, START};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(super) struct Ask {
    pub(super) reply: Option<String>,
    pub(super) answer: Option<String>,
}

/// The workload's graph, `START → ask → done → END`: `ask` pauses at
/// `interrupt("q")` and replies with the resume value, or (without
/// `interrupts`, for the `invoke_2000` workloads) replies `"a"` at once;
/// `done` copies the reply to `answer`.
pub(super) fn graph(interrupts: bool) -> StateGraph<Ask> {
    StateGraph::<Ask>::new()
        .add_node(node_fn(
            "ask",
            move |_: &Ask, ctx: &Context| -> Result<AskUpdate, NodeError> {
                let reply: String = if interrupts {
                    ctx.interrupt("q")?
                } else {
                    "a".to_owned()
                };
                Ok(Ask::update().reply(Some(reply)))
            },
        ))
        .add_node(node_fn("done", |s: &Ask| {
            Ask::update().answer(s.reply.clone())
        }))
        .add_edge(START, "ask")
        .add_edge("ask", "done")
        .add_edge("done", END)
}

pub fn build(threads: usize) -> Workload {
    let memory = std::sync::Arc::new(stategraph::checkpoint::InMemorySaver::new());
    let graph = graph(true)
        .compile_with(std::sync::Arc::clone(&memory)
            as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>)
        .unwrap_or_else(|e| panic!("interrupt_resume graph: {e}"));
    let rt = runtime();
    let workload = Workload::new(
        move || {
            rt.block_on(async {
                let mut bad = Vec::new();
                for k in 0..threads {
                    let config = run_config();
                    let first = graph
                        .invoke(Ask::update(), &config)
                        .await
                        .map_err(|e| format!("thread {k}, first invoke: {e}"))?;
                    let second = graph
                        .invoke(Command::resume("a"), &config)
                        .await
                        .map_err(|e| format!("thread {k}, resume: {e}"))?;
                    let paused = first.state == Ask::default()
                        && first.interrupts.len() == 1
                        && first.interrupts[0].value == "q";
                    let resumed = !second.is_interrupted()
                        && second.reply.as_deref() == Some("a")
                        && second.answer.as_deref() == Some("a");
                    if !(paused && resumed) {
                        bad.push(format!("thread {k}: {first:?} then {second:?}"));
                    }
                }
                Ok(bad)
            })
        },
        move |bad: Vec<String>| {
            expect(bad.is_empty(), || {
                format!(
                    "{} threads with wrong results, first: {}",
                    bad.len(),
                    bad[0]
                )
            })
        },
    );
    workload.with_stored(crate::harness::memory_stored(memory))
}
