//! insta snapshots of a graph's drawing and of a thread's history, with ids and
//! timestamps normalised so that the snapshot is the same on every run.
//!
//! ```no_run
//! use stategraph::prelude::*;
//! use stategraph::checkpoint::{InMemorySaver, ListOptions};
//! use stategraph::{assert_graph_snapshot, assert_history_snapshot};
//!
//! #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
//! struct Count {
//!     n: u32,
//! }
//!
//! #[node]
//! fn bump(c: &Count) -> CountUpdate {
//!     Count::update().n(c.n + 1)
//! }
//!
//! #[tokio::test]
//! async fn the_history_is_pinned() -> Result<(), GraphError> {
//!     let app = StateGraph::<Count>::new()
//!         .add_node(bump)
//!         .add_edge(START, bump)
//!         .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))?;
//!     assert_graph_snapshot!(app); // snapshots/<crate>__<test>.snap
//!
//!     let config = RunConfig::thread("t");
//!     app.invoke(Count::update(), &config).await?;
//!     let history = app.get_state_history(&config, &ListOptions::default()).await?;
//!     assert_history_snapshot!("bump_history", history);
//!     Ok(())
//! }
//! ```
//!
//! The snapshots live in `snapshots/` beside the test file, as insta keeps
//! them; review a new or changed one with `cargo insta review` (or run with
//! `INSTA_UPDATE=always` and read the diff) before committing it.

use graph_core::{CompiledGraph, State, StateSnapshot};
use std::collections::HashMap;
use std::fmt::{Debug, Write};

// The macro alone, not the crate: a re-exported crate makes rustc print
// `std::string::String` for `String` in users' error messages (src/lib.rs).
#[doc(hidden)]
pub use insta::assert_snapshot as __assert_snapshot;

/// Snapshots a compiled graph's Mermaid drawing (`draw_mermaid`) with insta:
/// `assert_graph_snapshot!(app)`, or `assert_graph_snapshot!("name", app)`.
#[macro_export]
macro_rules! assert_graph_snapshot {
    ($graph:expr $(,)?) => {{
        let drawing = $crate::testing::snapshot::graph_text(&$graph);
        $crate::testing::snapshot::__assert_snapshot!(drawing)
    }};
    ($name:expr, $graph:expr $(,)?) => {{
        let drawing = $crate::testing::snapshot::graph_text(&$graph);
        $crate::testing::snapshot::__assert_snapshot!($name, drawing)
    }};
}

/// Snapshots a thread's history (the `Vec<StateSnapshot<S>>` of
/// `get_state_history`, newest first) with insta, as
/// [`history_text`](crate::testing::snapshot::history_text) writes it:
/// `assert_history_snapshot!(history)`, or `assert_history_snapshot!("name", history)`.
#[macro_export]
macro_rules! assert_history_snapshot {
    ($history:expr $(,)?) => {{
        let history = $crate::testing::snapshot::history_text(&$history);
        $crate::testing::snapshot::__assert_snapshot!(history)
    }};
    ($name:expr, $history:expr $(,)?) => {{
        let history = $crate::testing::snapshot::history_text(&$history);
        $crate::testing::snapshot::__assert_snapshot!($name, history)
    }};
}

/// The text [`assert_graph_snapshot!`](crate::assert_graph_snapshot) pins: the
/// graph's Mermaid drawing.
pub fn graph_text<S: State, C: ?Sized + 'static>(graph: &CompiledGraph<S, C>) -> String {
    graph.draw_mermaid()
}

/// The text [`assert_history_snapshot!`](crate::assert_history_snapshot) pins:
/// each checkpoint (step, source, `next`, values as pretty `Debug`, tasks with
/// their results, errors and interrupts), every id (checkpoint, task,
/// interrupt, and any UUID or 32-hex-digit id inside the values) replaced by
/// `<id N>`, numbered in order of first appearance, and timestamps by `<ts>`.
pub fn history_text<S>(history: &[StateSnapshot<S>]) -> String
where
    S: State + Debug,
    S::Update: Debug,
{
    let mut out = String::new();
    for snapshot in history {
        let meta = snapshot
            .metadata
            .as_ref()
            .map(|m| format!("step {} ({:?})", m.step, m.source))
            .unwrap_or_else(|| "no metadata".to_owned());
        let _ = writeln!(
            out,
            "checkpoint {} {meta}{}",
            snapshot.config.checkpoint_id.as_deref().unwrap_or("-"),
            snapshot
                .parent_config
                .as_ref()
                .and_then(|p| p.checkpoint_id.as_deref())
                .map(|p| format!(", parent {p}"))
                .unwrap_or_default(),
        );
        if snapshot.created_at.is_some() {
            out.push_str("  created: <ts>\n");
        }
        let _ = writeln!(out, "  next: {:?}", snapshot.next);
        let _ = writeln!(
            out,
            "  values: {}",
            indent(&format!("{:#?}", snapshot.values), "  ")
        );
        for task in &snapshot.tasks {
            let _ = writeln!(out, "  task {} {}", task.name, task.id);
            if let Some(result) = &task.result {
                let _ = writeln!(
                    out,
                    "    result: {}",
                    indent(&format!("{result:#?}"), "    ")
                );
            }
            if let Some(error) = &task.error {
                let _ = writeln!(out, "    error: {error}");
            }
            for interrupt in &task.interrupts {
                let _ = writeln!(out, "    interrupt {}: {}", interrupt.id, interrupt.value);
            }
        }
    }
    normalize_ids(&out)
}

/// `text` with each line after the first indented by `by`.
fn indent(text: &str, by: &str) -> String {
    text.replace('\n', &format!("\n{by}"))
}

/// Replaces every UUID (`8-4-4-4-12` hex digits) and every run of exactly 32
/// hex digits in `text` with `<id N>`, the same id with the same `N`.
pub fn normalize_ids(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let len = if boundary { id_len(&bytes[i..]) } else { 0 };
        if len == 0 {
            i += 1;
            continue;
        }
        out.push_str(&text[copied..i]);
        let id = &text[i..i + len];
        let next = seen.len() + 1;
        let n = *seen.entry(id).or_insert(next);
        let _ = write!(out, "<id {n}>");
        i += len;
        copied = i;
    }
    out.push_str(&text[copied..]);
    out
}

/// The length of the id at the start of `bytes` (0 when there is none).
fn id_len(bytes: &[u8]) -> usize {
    let hex = |b: &u8| b.is_ascii_hexdigit();
    let ends_at = |n: usize| bytes.get(n).is_none_or(|b| !b.is_ascii_alphanumeric());
    let uuid = bytes.len() >= 36
        && bytes[..36].iter().enumerate().all(|(k, b)| match k {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => hex(b),
        });
    if uuid && ends_at(36) {
        return 36;
    }
    if bytes.len() >= 32 && bytes[..32].iter().all(hex) && ends_at(32) {
        return 32;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::normalize_ids;

    #[test]
    fn ids_are_numbered_by_first_appearance() {
        let text = "a 1ef4f797-8335-6428-8001-8a1503f9b875 b 0123456789abcdef0123456789abcdef \
                    c 1ef4f797-8335-6428-8001-8a1503f9b875 d deadbeef x0123456789abcdef0123456789abcdef";
        assert_eq!(
            normalize_ids(text),
            "a <id 1> b <id 2> c <id 1> d deadbeef x0123456789abcdef0123456789abcdef"
        );
    }
}
