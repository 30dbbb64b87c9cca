//! `sendfan_10000`: one step fanning out to n `Send`s.

use super::{runtime, stream_values};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{node, send, State, StateGraph, END, START};

fn concat(mut a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct FanState {
    #[reducer(concat)]
    out: Vec<u64>,
}

#[node]
fn work(i: u64) -> FanStateUpdate {
    FanState::update().out(vec![i])
}

pub fn build(n: u64) -> Workload {
    let graph = StateGraph::<FanState>::new()
        .add_node(work)
        .add_conditional_edges(START, move |_: &FanState| {
            (0..n).map(|i| send(work, i)).collect::<Vec<_>>()
        })
        .add_edge(work, END)
        .compile()
        .unwrap_or_else(|e| panic!("sendfan graph: {e}"));
    let rt = runtime();
    Workload::new(
        move || rt.block_on(stream_values(&graph, FanState::update().out(vec![]))),
        move |(last, chunks)| {
            expect(last.out.len() == n as usize, || {
                format!("len(out)={}", last.out.len())
            })?;
            expect(
                last.out.iter().enumerate().all(|(i, v)| *v == i as u64),
                || "out is not 0..n-1 in Send order".to_owned(),
            )?;
            expect(chunks == 2, || {
                format!("{chunks} values chunks, expected 2")
            })
        },
    )
}
