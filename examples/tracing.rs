//! Tracing: the spans a run emits, printed by `tracing-subscriber`.
//!
//! Every run opens a `graph_run` span (with the thread id), each superstep a
//! `superstep` span (step, task count), each task a `task` span (node, task id,
//! step, thread id). Events a node logs inside its task carry all of them, so a
//! log line says which run, step and task it came from. With no subscriber
//! installed, the spans cost nothing measurable.
//!
//! The log goes to stdout, coloured only when stdout is a terminal: piped to a
//! file or another program it is plain text, without ANSI escape codes.
//!
//! Run it with `cargo run --example tracing` (set `RUST_LOG=stategraph=trace`
//! or `RUST_LOG=graph_core=trace` for the engine's own trace events).

use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use std::io::IsTerminal;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::EnvFilter;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Order {
    items: u32,
    total_cents: u64,
}

#[node]
fn price(o: &Order) -> OrderUpdate {
    tracing::info!(items = o.items, "pricing the order");
    Order::update().total_cents(u64::from(o.items) * 1250)
}

#[node]
async fn charge(o: &Order) -> Result<OrderUpdate, NodeError> {
    tracing::info!(total_cents = o.total_cents, "charging the card");
    Ok(Order::update())
}

#[tokio::main]
async fn main() -> Result<(), GraphError> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("debug")),
        )
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .with_ansi(std::io::stdout().is_terminal())
        .init();

    let app = StateGraph::<Order>::new()
        .add_sequence((price, charge))
        .add_edge(START, price)
        .compile_with(InMemorySaver::new())?;
    let out = app
        .invoke(Order::update().items(3), &RunConfig::thread("order-42"))
        .await?;
    tracing::info!(total_cents = out.total_cents, "done");
    Ok(())
}
