//! `chat_<n>_turns_sync_{memory,sqlite,sqlite_append,postgres,postgres_append}`
//! (`chat_1000_turns_sync_memory` and `_sqlite` listed; other turns,
//! `_sqlite_append` and `_postgres_append`, the SQL savers' opt-in append
//! layouts that Python cannot read, and `_postgres`, by name; the Postgres
//! ones need a server named by `STATEGRAPH_BENCH_PG_URL`, as the
//! `postgres_ckpt_*` workloads): one thread, `n` invokes, each adding a user
//! message and the assistant's answer (~400 bytes each) to a `MessagesState`
//! (`add_messages`), at durability `sync`. A long thread must cost what each
//! turn adds: total time and stored bytes growing linearly with the turns.

use super::runtime;
use crate::harness::{expect, memory_stored, sqlite_file_bytes, Workload};
use stategraph::agents::{Message, MessagesState};
use stategraph::checkpoint::{CheckpointConfig, InMemorySaver};
use stategraph::{node_fn, Durability, RunConfig, StateGraph, END, START};
use std::sync::Arc;

/// Where the thread keeps its checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saver {
    Memory,
    Sqlite,
    /// SQLite with `append_layout(true)`.
    SqliteAppend,
    /// PostgreSQL (`STATEGRAPH_BENCH_PG_URL`), LangGraph's layout.
    Postgres,
    /// PostgreSQL with `append_layout(true)`.
    PostgresAppend,
}

/// The server of the Postgres variants.
const PG_URL_VAR: &str = "STATEGRAPH_BENCH_PG_URL";

/// A message of ~400 bytes, different for each turn and side.
pub fn text(side: &str, turn: usize) -> String {
    let head = format!("{side} turn {turn}: ");
    let filler = "the quick brown fox jumps over the lazy dog. ";
    let mut s = head;
    while s.len() < 400 {
        s.push_str(filler);
    }
    s.truncate(400);
    s
}

/// `chat_<n>_turns_sync_memory` / `_sqlite` / `_sqlite_append`.
pub fn parse(name: &str) -> Option<(usize, Saver)> {
    let rest = name.strip_prefix("chat_")?;
    let (n, saver) = rest.split_once("_turns_sync_")?;
    let saver = match saver {
        "memory" => Saver::Memory,
        "sqlite" => Saver::Sqlite,
        "sqlite_append" => Saver::SqliteAppend,
        "postgres" => Saver::Postgres,
        "postgres_append" => Saver::PostgresAppend,
        _ => return None,
    };
    n.parse().ok().filter(|&n| n > 0).map(|n| (n, saver))
}

/// The graph: `START -> assistant -> END`.
fn graph() -> StateGraph<MessagesState> {
    StateGraph::<MessagesState>::new()
        .add_node(node_fn("assistant", |s: &MessagesState| {
            // The turn, from the number of messages: one user message each.
            let turn = s.messages.len() / 2;
            MessagesState::update().messages(vec![Message::ai(text("assistant", turn))])
        }))
        .add_edge(START, "assistant")
        .add_edge("assistant", END)
}

pub fn build(turns: usize, saver: Saver) -> Workload {
    let rt = Arc::new(runtime());
    let dir = super::scratch_dir("chat");
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let inputs: Vec<String> = (0..turns).map(|i| text("user", i)).collect();
    let (check_rt, check_runs) = (Arc::clone(&rt), Arc::clone(&runs));
    let (check_dir, stored_dir, stored_runs) = (dir.clone(), dir.clone(), Arc::clone(&runs));
    // One in-memory saver (a new thread per run); a new database per run.
    let memory = Arc::new(InMemorySaver::new());
    let memory_app = graph()
        .compile_with(Arc::clone(&memory) as Arc<dyn stategraph::checkpoint::Checkpointer>)
        .unwrap_or_else(|e| panic!("chat graph: {e}"));
    let mut memory_bytes = memory_stored(memory);
    // One Postgres saver (a new thread per run), connected once.
    let postgres = match saver {
        Saver::Postgres | Saver::PostgresAppend => {
            Some(rt.block_on(postgres_saver(saver == Saver::PostgresAppend)))
        }
        _ => None,
    };
    let postgres_app = postgres.clone().map(|saver| {
        graph()
            .compile_with(saver)
            .unwrap_or_else(|e| panic!("chat graph: {e}"))
    });
    let thread_prefix = format!("chat-{}-{}", std::process::id(), fastrand::u32(..));
    let (run_prefix, stored_prefix) = (thread_prefix.clone(), thread_prefix);
    let stored_rt = Arc::clone(&rt);
    let workload = Workload::new(
        move || {
            let run = runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let app = rt.block_on(async {
                match saver {
                    Saver::Memory => Ok(memory_app.clone()),
                    Saver::Sqlite | Saver::SqliteAppend => {
                        std::fs::create_dir_all(&dir).map_err(|e| graph_err(&e))?;
                        let db = dir.join(format!("chat-{run}.db"));
                        let _ = std::fs::remove_file(&db);
                        let saver = stategraph::sqlite::SqliteSaver::builder(&db)
                            .append_layout(saver == Saver::SqliteAppend)
                            .open()
                            .await
                            .map_err(|e| graph_err(&e))?;
                        graph().compile_with(saver)
                    }
                    Saver::Postgres | Saver::PostgresAppend => match &postgres_app {
                        Some(app) => Ok(app.clone()),
                        None => Err(graph_err(&"no Postgres saver")),
                    },
                }
            });
            let app = app.map_err(|e| e.to_string())?;
            let config =
                RunConfig::thread(format!("{run_prefix}-{run}")).with_durability(Durability::Sync);
            let mut last = None;
            for input in &inputs {
                let update = MessagesState::update().messages(vec![Message::human(input.clone())]);
                let out = rt
                    .block_on(app.invoke(update, &config))
                    .map_err(|e| e.to_string())?;
                last = Some(out.into_state());
            }
            Ok((app, config, last))
        },
        move |(app, config, last)| {
            let Some(last) = last else {
                return Err("no turn ran".to_owned());
            };
            let m = &last.messages;
            expect(m.len() == 2 * turns, || format!("{} messages", m.len()))?;
            for (i, pair) in m.chunks(2).enumerate() {
                expect(
                    pair[0].text() == text("user", i) && pair[1].text() == text("assistant", i),
                    || format!("turn {i}: {:?}", pair),
                )?;
            }
            let Some(saver) = app.checkpointer() else {
                return Err("the graph has no saver".to_owned());
            };
            let thread = CheckpointConfig::thread(config.thread_id().unwrap_or_default());
            // Counted a page at a time: every listed checkpoint holds its
            // whole list, and all of them at once would be gigabytes.
            let (mut count, mut before, mut middle_config) = (0, None, None);
            loop {
                let options = stategraph::checkpoint::ListOptions {
                    before: before.clone(),
                    limit: Some(100),
                    ..Default::default()
                };
                let page = check_rt
                    .block_on(saver.list(Some(&thread), &options))
                    .map_err(|e| e.to_string())?;
                let Some(last) = page.last() else { break };
                before = last.config.checkpoint_id.as_ref().map(ToString::to_string);
                if count <= 3 * turns / 2 && 3 * turns / 2 < count + page.len() {
                    middle_config = Some(page[3 * turns / 2 - count].config.clone());
                }
                count += page.len();
            }
            // Per turn: the input, `__start__`'s step, the assistant's step.
            expect(count == 3 * turns, || {
                format!("{count} checkpoints, expected {}", 3 * turns)
            })?;
            let Some(middle_config) = middle_config else {
                return Err("no checkpoint in the middle of the thread".to_owned());
            };
            let snapshot = check_rt
                .block_on(app.get_state(&config))
                .map_err(|e| e.to_string())?;
            expect(snapshot.values.messages == *m, || {
                "get_state differs from the last output".to_owned()
            })?;
            // Time travel: the middle turn's input checkpoint holds its turns.
            let middle = check_rt
                .block_on(app.get_state(&RunConfig::at_checkpoint(&middle_config)))
                .map_err(|e| e.to_string())?;
            let k = middle.values.messages.len();
            expect(k > 0 && middle.values.messages[..] == m[..k], || {
                format!("the middle checkpoint holds {k} messages")
            })?;
            remove_old(
                check_runs.load(std::sync::atomic::Ordering::Relaxed),
                &check_dir,
            );
            Ok(())
        },
    );
    workload.with_stored(move || match saver {
        Saver::Memory => memory_bytes(),
        Saver::Sqlite | Saver::SqliteAppend => {
            let run = stored_runs.load(std::sync::atomic::Ordering::Relaxed);
            sqlite_file_bytes(&stored_dir.join(format!("chat-{}.db", run.saturating_sub(1))))
        }
        Saver::Postgres | Saver::PostgresAppend => {
            let run = stored_runs.load(std::sync::atomic::Ordering::Relaxed);
            let thread = format!("{stored_prefix}-{}", run.saturating_sub(1));
            match &postgres {
                Some(saver) => stored_rt.block_on(postgres_bytes(saver, &thread)),
                None => 0,
            }
        }
    })
}

/// A saver on `STATEGRAPH_BENCH_PG_URL`.
async fn postgres_saver(append_layout: bool) -> graph_postgres::PostgresSaver {
    let url = std::env::var(PG_URL_VAR).unwrap_or_else(|_| {
        panic!(
            "the chat_*_postgres workloads need a PostgreSQL server: set {PG_URL_VAR} (e.g. \
             postgres://postgres@127.0.0.1:5432/postgres)"
        )
    });
    graph_postgres::PostgresSaver::builder(&url)
        .unwrap_or_else(|e| panic!("{PG_URL_VAR}: {e}"))
        .append_layout(append_layout)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {PG_URL_VAR}={url}: {e}"))
}

/// The bytes of `thread`'s rows (values, checkpoints and writes).
async fn postgres_bytes(saver: &graph_postgres::PostgresSaver, thread: &str) -> u64 {
    let Ok(client) = saver.pool().get().await else {
        return 0;
    };
    let row = client
        .query_one(
            "SELECT ((SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs \
                      WHERE thread_id = $1) \
                   + (SELECT coalesce(sum(octet_length(checkpoint::text) \
                      + octet_length(metadata::text)), 0) FROM checkpoints WHERE thread_id = $1) \
                   + (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes \
                      WHERE thread_id = $1))::int8",
            &[&thread],
        )
        .await;
    row.ok()
        .and_then(|r| r.try_get::<_, i64>(0).ok())
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

fn graph_err(e: &dyn std::fmt::Display) -> stategraph::GraphError {
    stategraph::GraphError::Checkpoint(stategraph::checkpoint::CheckpointError::Storage(
        e.to_string().into(),
    ))
}

/// Removes the databases of finished runs (only the last is kept).
fn remove_old(runs: usize, dir: &std::path::Path) {
    for run in 0..runs.saturating_sub(1) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dir.join(format!("chat-{run}.db{suffix}")));
        }
    }
}
