//! Map-reduce with `Send`: one task per item, each with its own typed input.
//!
//! The router after START returns one `send(summarize, chunk)` per chunk of a
//! document. `summarize` takes a `Chunk`, not the graph state; passing anything else
//! to `send(summarize, ...)` does not compile. All tasks run in the same superstep,
//! concurrently, and their results are appended in Send order (not completion
//! order), so the run is deterministic. A final node reduces the partial results.
//!
//! Run it with `cargo run --example map_reduce`.

use stategraph::prelude::*;

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
    words: Vec<String>,
}

/// Map: summarise one chunk (here: its longest word).
#[node]
async fn summarize(chunk: &Chunk) -> DocumentUpdate {
    // Stand-in for an LLM call of varying latency.
    tokio::time::sleep(std::time::Duration::from_millis(
        5 * (3 - chunk.index as u64 % 3),
    ))
    .await;
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
    words
        .chunks(4)
        .enumerate()
        .map(|(index, words)| {
            send(
                summarize,
                Chunk {
                    index,
                    words: words.to_vec(),
                },
            )
        })
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), GraphError> {
    let app = StateGraph::<Document>::new()
        .add_node(summarize)
        .add_node(reduce)
        .add_conditional_edges(START, split)
        .add_edge(summarize, reduce)
        .compile()?;

    let text = "graphs of typed nodes keep agent workflows honest because the compiler \
                checks every edge before anything runs in production";
    let doc = app
        .invoke(Document::update().text(text.into()), &RunConfig::new())
        .await?;
    println!("{}", doc.report);
    Ok(())
}
