//! The graphs the Python SDK suite (tests/sdk/) drives, served on the address
//! given as the first argument, with the database given as the second — a
//! SQLite file, or a `postgres://` URL for the PostgreSQL backend — (and, with
//! `auth` as the third, API keys `k-alice` and `k-bob`).
//!
//! The same graphs, in Python, are in tests/sdk/graphs.py: the suite runs
//! against LangGraph's own server too, to keep the two in step.
//!
//! - `agent`: `model` echoes the last message (and writes a custom event and a
//!   message chunk).
//! - `hitl`: `model`, then `review`, which asks a question with `interrupt`.
//! - `slow`: `model` after a 300 ms pause, so runs overlap (cancellation,
//!   multitask strategies).

use graph_server::{ApiKeys, Server};
use stategraph::prelude::*;
use std::time::Duration;

fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// `messages: Annotated[list, operator.add]`, `count: Annotated[int, operator.add]`.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct S {
    #[reducer(append)]
    messages: Vec<String>,
    #[reducer(std::ops::Add::add)]
    count: i64,
}

#[node]
fn model(s: &S, ctx: &Context) -> SUpdate {
    ctx.write_custom(stategraph::json!({"progress": "thinking"}));
    let last = s.messages.last().cloned().unwrap_or_default();
    ctx.write_message_chunk(
        stategraph::json!({"type": "AIMessageChunk", "content": format!("echo: {last}")}),
    );
    S::update().messages(vec![format!("echo: {last}")]).count(1)
}

#[node]
fn review(_: &S, ctx: &Context) -> Result<SUpdate, NodeError> {
    let answer: String = ctx.interrupt(stategraph::json!({"question": "ok?"}))?;
    Ok(S::update().messages(vec![format!("review: {answer}")]))
}

#[node]
async fn slow(s: &S) -> SUpdate {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let last = s.messages.last().cloned().unwrap_or_default();
    S::update().messages(vec![format!("slow: {last}")]).count(1)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:2099".into());
    let db = args.next().unwrap_or_else(|| "sdk_server.db".into());
    // `auth` as the third argument: API keys `k-alice` and `k-bob`.
    let auth = args.next().as_deref() == Some("auth");
    let agent = StateGraph::<S>::new()
        .add_node(model)
        .add_edge(START, model)
        .compile()?;
    let hitl = StateGraph::<S>::new()
        .add_node(model)
        .add_node(review)
        .add_edge(START, model)
        .add_edge(model, review)
        .compile()?;
    let slow_graph = StateGraph::<S>::new()
        .add_node(slow)
        .add_edge(START, slow)
        .compile()?;
    let mut server = Server::new()
        .assistant_with_schema("agent", agent)
        .assistant_with_schema("hitl", hitl)
        .assistant_with_schema("slow", slow_graph);
    server = if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        server.postgres(db)
    } else {
        server.database(db)
    };
    if auth {
        server = server.authenticator(ApiKeys::new().key("k-alice", "alice").key("k-bob", "bob"));
    }
    server.serve(&addr).await?;
    Ok(())
}
