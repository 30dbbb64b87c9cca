//! `seq_1000`: a chain of no-op nodes.

use super::{runtime, stream_values};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{node_fn, State, StateGraph, END, START};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Seq {
    value: String,
    #[reducer(concat)]
    items: Vec<String>,
}

pub fn build(n: usize) -> Workload {
    let counter = Arc::new(AtomicUsize::new(0));
    let mut graph = StateGraph::<Seq>::new();
    for i in 0..n {
        let counter = Arc::clone(&counter);
        graph = graph.add_node(node_fn(format!("node_{i}"), move |_: &Seq| {
            let _ = counter.compare_exchange(i, i + 1, Ordering::Relaxed, Ordering::Relaxed);
        }));
    }
    graph = graph.add_edge(START, "node_0");
    for i in 1..n {
        graph = graph.add_edge(format!("node_{}", i - 1), format!("node_{i}"));
    }
    graph = graph.add_edge(format!("node_{}", n - 1), END);
    let graph = graph.compile().unwrap_or_else(|e| panic!("seq graph: {e}"));
    let rt = runtime();
    let runs = Arc::clone(&counter);
    Workload::new(
        move || {
            runs.store(0, Ordering::Relaxed);
            let input = Seq::update().value("seq".into()).items(vec![]);
            let out = rt.block_on(stream_values(&graph, input))?;
            Ok((out, runs.load(Ordering::Relaxed)))
        },
        move |((last, chunks), count)| {
            expect(count == n, || format!("counter={count} expected {n}"))?;
            expect(last.value == "seq" && last.items.is_empty(), || {
                format!("final state {last:?}")
            })?;
            expect(chunks == 1, || {
                format!("{chunks} values chunks, expected 1")
            })
        },
    )
}
