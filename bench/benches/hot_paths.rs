//! Microbenchmarks of the engine's hot paths, through the public API:
//! channel updates per kind, one superstep writing a 100-field state, preparing and
//! running 10,000 pending Sends, and encoding/decoding a 1 MB checkpoint.
//!
//! `cargo bench -p stategraph-bench --bench hot_paths`

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use serde::{Deserialize, Serialize};
use stategraph::channels::{
    BinaryOperatorAggregate, ChannelCell, EphemeralValue, LastValue, ReducerWrite, Topic,
    TopicWrite,
};
use stategraph::checkpoint::InMemorySaver;
use stategraph::{node, node_fn, send, Durability, RunConfig, State, StateGraph, START};
use stategraph_bench::{with_field, Wide100};

fn add(a: u64, b: u64) -> u64 {
    a + b
}

fn channels(c: &mut Criterion) {
    let mut group = c.benchmark_group("channel_update");
    group.bench_function("last_value/1_write", |b| {
        let mut cell = ChannelCell::new(LastValue::<u64>::new("x"));
        b.iter(|| cell.update([black_box(7u64)]).unwrap())
    });
    group.bench_function("binop/10_writes", |b| {
        let mut cell = ChannelCell::new(BinaryOperatorAggregate::new(
            "x",
            add as fn(u64, u64) -> u64,
        ));
        b.iter(|| {
            cell.update((0..10u32).map(|i| ReducerWrite::Value(u64::from(i))))
                .unwrap()
        })
    });
    group.bench_function("topic/10_writes", |b| {
        let mut cell = ChannelCell::new(Topic::<u64>::new("x"));
        b.iter(|| {
            cell.update((0..10u32).map(|i| TopicWrite::One(u64::from(i))))
                .unwrap()
        })
    });
    group.bench_function("ephemeral/write_then_clear", |b| {
        let mut cell = ChannelCell::new(EphemeralValue::<u64>::new("x"));
        b.iter(|| {
            cell.update([1u64]).unwrap();
            cell.update(std::iter::empty()).unwrap()
        })
    });
    group.finish();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

fn superstep_100_fields(c: &mut Criterion) {
    let rt = runtime();
    let graph = StateGraph::<Wide100>::new()
        .add_node(node_fn("write_all", |s: &Wide100| {
            (0..100).fold(Wide100::update().step(s.step + 1), |u, i| {
                with_field(u, i, "v".to_owned())
            })
        }))
        .add_edge(START, "write_all")
        .compile()
        .unwrap();
    c.bench_function("superstep/apply_100_field_update", |b| {
        b.iter(|| {
            rt.block_on(graph.invoke(Wide100::update(), &RunConfig::new()))
                .unwrap()
        })
    });
}

fn concat(mut a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Fan {
    #[reducer(concat)]
    out: Vec<u64>,
}

#[node]
fn work(i: u64) -> FanUpdate {
    Fan::update().out(vec![i])
}

fn sends_10k(c: &mut Criterion) {
    let rt = runtime();
    let graph = StateGraph::<Fan>::new()
        .add_node(work)
        .add_conditional_edges(START, |_: &Fan| {
            (0..10_000u64).map(|i| send(work, i)).collect::<Vec<_>>()
        })
        .compile()
        .unwrap();
    let mut group = c.benchmark_group("sends");
    group.sample_size(20);
    group.bench_function("prepare_and_run_10k", |b| {
        b.iter(|| {
            rt.block_on(graph.invoke(Fan::update(), &RunConfig::new()))
                .unwrap()
        })
    });
    group.finish();
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Blob {
    data: Vec<String>,
}

fn checkpoint_1mb(c: &mut Criterion) {
    let rt = runtime();
    let graph = StateGraph::<Blob>::new()
        .add_node(node_fn("noop", |_: &Blob| ()))
        .add_edge(START, "noop")
        .compile_with(InMemorySaver::new())
        .unwrap();
    // ~1 MB: 1,000 strings of 1 KiB.
    let input = Blob::update().data(vec!["x".repeat(1024); 1000]);
    let thread = RunConfig::thread("encoded").with_durability(Durability::Exit);
    rt.block_on(graph.invoke(input.clone(), &thread)).unwrap();
    let mut group = c.benchmark_group("checkpoint_1mb");
    group.sample_size(20);
    let mut n = 0u64;
    group.bench_function("encode_and_put", |b| {
        b.iter_batched(
            || {
                n += 1;
                RunConfig::thread(format!("t{n}")).with_durability(Durability::Exit)
            },
            |config| rt.block_on(graph.invoke(input.clone(), &config)).unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("get_and_decode", |b| {
        b.iter(|| rt.block_on(graph.get_state(&thread)).unwrap())
    });
    group.finish();
}

criterion_group!(
    hot_paths,
    channels,
    superstep_100_fields,
    sends_10k,
    checkpoint_1mb
);
criterion_main!(hot_paths);
