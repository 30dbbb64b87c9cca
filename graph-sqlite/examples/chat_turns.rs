//! What a turn of a long chat costs on SQLite, early and late in the thread:
//! `TURNS` invokes on one thread, each adding a user message and the
//! assistant's answer (~400 bytes each) at durability `sync`, then the time
//! per turn of the first and the last tenth of the turns. A turn that costs
//! what it adds takes as long at the end as at the start. Without the
//! verification the bench does, so that instruction counts
//! (`valgrind --tool=callgrind`) measure the turns alone.
//!
//! ```text
//! cargo run --release -p stategraph-sqlite --example chat_turns [TURNS] [append|plain]
//! ```

use graph_sqlite::SqliteSaver;
use stategraph::prelude::*;
use stategraph::Durability;
use std::time::Instant;

type Error = Box<dyn std::error::Error>;

/// Appends `new` to `list`, reporting that it kept every item (as
/// `add_messages` does when it only appends).
fn extend(mut list: Vec<String>, new: Vec<String>) -> Vec<String> {
    stategraph::channels::report_kept_prefix(list.len());
    list.extend(new);
    list
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(extend)]
    messages: Vec<String>,
}

fn message(side: &str, turn: usize) -> String {
    let mut s = format!("{side} turn {turn}: ");
    while s.len() < 400 {
        s.push_str("the quick brown fox jumps over the lazy dog. ");
    }
    s.truncate(400);
    s
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let turns: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let append_layout = args.next().as_deref() != Some("plain");
    let dir = tempfile::tempdir()?;
    let saver = SqliteSaver::builder(dir.path().join("chat.sqlite"))
        .append_layout(append_layout)
        .open()
        .await?;
    let app = StateGraph::<Chat>::new()
        .add_node(node_fn("assistant", |s: &Chat| {
            Chat::update().messages(vec![message("assistant", s.messages.len() / 2)])
        }))
        .add_edge(START, "assistant")
        .add_edge("assistant", END)
        .compile_with(saver)?;
    let thread = RunConfig::thread("chat").with_durability(Durability::Sync);
    let tenth = (turns / 10).max(1);
    let (mut first, mut last) = (0.0, 0.0);
    let start = Instant::now();
    for turn in 0..turns {
        let t0 = Instant::now();
        let out = app
            .invoke(
                Chat::update().messages(vec![message("user", turn)]),
                &thread,
            )
            .await?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        if out.into_state().messages.len() != 2 * turn + 2 {
            return Err(format!("turn {turn}: wrong number of messages").into());
        }
        if turn < tenth {
            first += ms;
        }
        if turn >= turns - tenth {
            last += ms;
        }
    }
    println!(
        "{turns} turns ({} layout): {:.1} ms; per turn {:.3} ms in the first tenth, {:.3} ms in the last",
        if append_layout { "append" } else { "LangGraph's" },
        start.elapsed().as_secs_f64() * 1e3,
        first / tenth as f64,
        last / tenth as f64
    );
    Ok(())
}
