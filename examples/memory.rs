//! Long-term memory: an assistant that remembers what a user told it in one
//! conversation (thread) and uses it in another.
//!
//! Thread 1: Alice says she is vegetarian and lives in Lisbon; the `learn` node
//! stores each fact she states about herself in the store, under
//! `("memories", "alice")`. Thread 2 starts a new conversation with no history;
//! asked for a restaurant, the `respond` node searches the store semantically
//! ("what does the user eat", "where does the user live") and recommends a
//! vegetarian place in Lisbon. Checkpoints (short-term memory) stay with their
//! thread; the store (long-term memory) is shared by all of them.
//!
//! Offline and deterministic: the "model" is a few rules, and the embeddings
//! are `HashEmbeddings`, a hashing embedder that matches shared words (not a
//! language model). For real ones, use `OpenAiChat` and `OpenAiEmbeddings`
//! (feature `openai`).
//!
//! Run it with `cargo run --example memory` (both conversations), or
//! `-- learn` and then, in another process, `-- ask` for one of them; the
//! store is the SQLite file `memory.sqlite` (or the path given after the step:
//! `-- ask /tmp/m.sqlite`).

use serde_json::json;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::sqlite::SqliteStore;
use stategraph::store::{
    HashEmbeddings, IndexConfig, Namespace, SearchOp, Store, StoreConfig, StoreError,
};
use std::sync::Arc;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Turn {
    user: String,
    message: String,
    reply: String,
}

fn memories(user: &str) -> Result<Namespace, StoreError> {
    Namespace::new(["memories", user])
}

/// Stores the facts the user states about themselves: sentences starting
/// with "I'm", "I am", "I live", ... (where an LLM would extract them).
#[node]
async fn learn(turn: &Turn, ctx: &Context) -> Result<TurnUpdate, NodeError> {
    let store = ctx.store()?;
    let ns = memories(&turn.user)?;
    for sentence in turn.message.split(['.', '!', '?']).map(str::trim) {
        let about_me = ["I'm ", "I am ", "I live ", "I have ", "I don't ", "I like "];
        if about_me.iter().any(|p| sentence.starts_with(p)) {
            // The sentence is its own key: saying it again updates it.
            store.put(&ns, sentence, json!({"text": sentence})).await?;
        }
    }
    Ok(Turn::update())
}

const RESTAURANTS: [(&str, &str, bool); 4] = [
    ("Marisqueira Azul", "Lisbon", false),
    ("Jardim Verde", "Lisbon", true),
    ("Tasca do Porto", "Porto", false),
    ("Horta Viva", "Porto", true),
];

/// Answers; for a restaurant, recalls what the user eats and where they live.
#[node]
async fn respond(turn: &Turn, ctx: &Context) -> Result<TurnUpdate, NodeError> {
    if !turn.message.contains("restaurant") {
        return Ok(Turn::update().reply("Noted!".into()));
    }
    let store = ctx.store()?;
    let ns = memories(&turn.user)?;
    let recall = |query: &'static str| {
        let op = SearchOp::new(ns.clone()).query(query).limit(1);
        async move {
            let found = store.search(op).await?;
            let best = found.into_iter().find(|m| m.score.unwrap_or(0.0) > 0.1);
            if let Some(m) = &best {
                let text = m.value["text"].as_str().unwrap_or_default();
                let score = m.score.unwrap_or(0.0);
                println!("  recalled for {query:?}: {text:?} (score {score:.3})");
            }
            Ok::<_, StoreError>(best.and_then(|m| m.value["text"].as_str().map(str::to_owned)))
        }
    };
    let diet = recall("what does the user eat").await?;
    let home = recall("where does the user live").await?;
    let vegetarian = diet.as_deref().is_some_and(|d| d.contains("vegetarian"));
    let city = home
        .as_deref()
        .and_then(|h| h.strip_prefix("I live in "))
        .unwrap_or("Lisbon");
    let (name, _, _) = RESTAURANTS
        .iter()
        .find(|(_, c, veg)| *c == city && (*veg || !vegetarian))
        .copied()
        .unwrap_or(RESTAURANTS[0]);
    let why = if vegetarian { "vegetarian, " } else { "" };
    Ok(Turn::update().reply(format!("Try {name} ({why}in {city}).")))
}

/// The store: a SQLite file, so the memories outlive the process (a second
/// `-- ask` run finds what a `-- learn` run stored). LangGraph's Python
/// `SqliteStore` reads the same file. `InMemoryStore::with_config(config)`
/// would keep them for this process only.
async fn open_store(path: &str, config: StoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    Ok(Arc::new(SqliteStore::open(path, config).await?))
}

async fn say(app: &CompiledGraph<Turn>, thread: &str, message: &str) -> Result<(), GraphError> {
    println!("[thread {thread}] alice: {message}");
    let input = Turn::update().user("alice".into()).message(message.into());
    let out = app.invoke(input, &RunConfig::thread(thread)).await?;
    println!("[thread {thread}] assistant: {}", out.reply);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let step = std::env::args().nth(1).unwrap_or_default();
    let path = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "memory.sqlite".to_owned());
    let index = IndexConfig::new(256, HashEmbeddings::new(256)).fields(["text"])?;
    let store = open_store(&path, StoreConfig::new().index(index)).await?;
    let app = StateGraph::<Turn>::new()
        .add_node(learn)
        .add_node(respond)
        .add_edge(START, "learn")
        .add_edge("learn", "respond")
        .compile_with(
            CompileOptions::new()
                .checkpointer(InMemorySaver::new())
                .store(Arc::clone(&store)),
        )?;

    if step != "ask" {
        say(
            &app,
            "1",
            "Hi! I'm vegetarian and I don't eat meat. I live in Lisbon.",
        )
        .await?;
    }
    if step != "learn" {
        say(&app, "2", "Can you recommend a restaurant for tonight?").await?;
    }
    Ok(())
}
