//! Map-reduce with `Send`: one task per item, each with its own typed input.
//!
//! The router after START returns one `send(summarize, chunk)` per chunk of a
//! document; it prints the fan-out, in Send order. `summarize` takes a `Chunk`,
//! not the graph state; passing anything else to `send(summarize, ...)` does not
//! compile. All tasks run in the same superstep, concurrently: each waits a
//! different time (the first chunk longest, a stand-in for an LLM call), so they
//! all start before any finishes, they finish in reverse order, and the whole
//! superstep takes about as long as the slowest one, not the sum. Their results
//! are still appended in Send order, not finish order, so the run is
//! deterministic. A final node reduces the partial results.
//!
//! Run it with `cargo run --example map_reduce`.

use stategraph::prelude::*;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

fn append<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Document {
    text: String,
    #[reducer(append)]
    summaries: Vec<String>,
    report: String,
}

/// The input of one map task (serialisable: pending Sends are checkpointed).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Chunk {
    index: usize,
    /// How many chunks there are.
    of: usize,
    words: Vec<String>,
}

impl Chunk {
    /// The stand-in latency: the first chunk waits longest, the last shortest.
    fn latency(&self) -> Duration {
        Duration::from_millis(30 * (self.of - self.index) as u64)
    }
}

/// The order the map tasks finished in (the graph's state cannot tell: it
/// receives their writes in Send order).
static FINISHED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Map: summarise one chunk (here: its longest word).
#[node]
async fn summarize(chunk: &Chunk) -> DocumentUpdate {
    let latency = chunk.latency();
    println!(
        "  chunk {} starts ({} ms)",
        chunk.index,
        latency.as_millis()
    );
    tokio::time::sleep(latency).await;
    let mut finished = FINISHED.lock().unwrap_or_else(PoisonError::into_inner);
    finished.push(chunk.index);
    println!("  chunk {} finishes (#{})", chunk.index, finished.len());
    let longest = chunk
        .words
        .iter()
        .max_by_key(|w| w.len())
        .cloned()
        .unwrap_or_default();
    Document::update().summaries(vec![format!("chunk {}: {longest}", chunk.index)])
}

/// Reduce: join the partial results.
#[node]
fn reduce(doc: &Document) -> DocumentUpdate {
    Document::update().report(doc.summaries.join("\n"))
}

fn split(doc: &Document) -> Vec<stategraph::Send> {
    let words: Vec<String> = doc.text.split_whitespace().map(str::to_owned).collect();
    let chunks: Vec<&[String]> = words.chunks(4).collect();
    println!("fan-out: {} Sends", chunks.len());
    chunks
        .iter()
        .enumerate()
        .map(|(index, words)| {
            println!("  send(summarize, chunk {index}: {})", words.join(" "));
            send(
                summarize,
                Chunk {
                    index,
                    of: chunks.len(),
                    words: words.to_vec(),
                },
            )
        })
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = StateGraph::<Document>::new()
        .add_node(summarize)
        .add_node(reduce)
        .add_conditional_edges(START, split)
        .add_edge(summarize, reduce)
        .compile()?;

    let text = "graphs of typed nodes keep agent workflows honest because the compiler \
                checks every edge before anything runs in production";
    let started = Instant::now();
    let doc = app
        .invoke(Document::update().text(text.into()), &RunConfig::new())
        .await?;
    let elapsed = started.elapsed();

    let finished = FINISHED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let chunks = finished.len();
    let sequential: u64 = (1..=chunks as u64).map(|i| 30 * i).sum();
    println!(
        "\nthe {chunks} map tasks together waited {sequential} ms; the run took {} ms{}",
        elapsed.as_millis(),
        if elapsed.as_millis() < u128::from(sequential) {
            ": they ran concurrently"
        } else {
            ""
        }
    );
    println!("finish order: {finished:?} (shortest wait first)");
    println!("reduced, in Send order:\n{}", doc.report);

    // Whatever order they finished in, the writes were applied in Send order.
    let indices: Vec<String> = (0..chunks).map(|i| format!("chunk {i}: ")).collect();
    assert_eq!(doc.summaries.len(), chunks);
    assert!(doc
        .summaries
        .iter()
        .zip(&indices)
        .all(|(summary, prefix)| summary.starts_with(prefix)));
    Ok(())
}
