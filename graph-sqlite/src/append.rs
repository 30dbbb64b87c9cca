//! The append layout ([`SqliteSaverBuilder::append_layout`]): a list channel
//! that only grew is stored as the items it appended, in a `checkpoint_blobs`
//! row of type [`APPENDED`] whose text names the version it extends, and read
//! back whole by following those links to a whole value.
//!
//! The row's text is a JSON object: `base` (the version it extends), `keep`
//! (how many items of that value it keeps), `chain` (the bytes of items
//! appended since the last whole value, this row's included), `whole` (that
//! whole value's size) and `items` (the appended items, a JSON array). Once
//! `chain` would pass `whole`, the value is stored whole again (compaction), so
//! a thread's bytes grow linearly with what it appends and a read follows at
//! most as many links as it takes to append one whole value's worth of bytes.
//!
//! [`SqliteSaverBuilder::append_layout`]: crate::SqliteSaverBuilder::append_layout

use crate::decode::{typed_to_blob, Stored};
use crate::{storage, storage_msg};
use graph_core::checkpoint::rows::{EMPTY, JSON};
use graph_core::checkpoint::{Append, Blob, CheckpointError};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The `type` of a `checkpoint_blobs` row holding appended items.
pub(crate) const APPENDED: &str = "stategraph_append";

/// The text of an [`APPENDED`] row.
#[derive(Serialize, Deserialize)]
struct AppendedRow<'a> {
    #[serde(borrow)]
    base: &'a str,
    keep: usize,
    chain: usize,
    whole: usize,
    #[serde(borrow)]
    items: &'a RawValue,
}

/// Where a channel's versions live.
pub(crate) struct ChannelKey<'a> {
    pub(crate) thread_id: &'a str,
    pub(crate) checkpoint_ns: &'a str,
    pub(crate) channel: &'a str,
}

impl ChannelKey<'_> {
    fn corrupt(&self, why: impl std::fmt::Display) -> CheckpointError {
        storage_msg(format!(
            "thread `{}`, channel `{}`: {why}; the stored appended values are damaged, \
             delete the thread (or restore the database from a backup)",
            self.thread_id, self.channel
        ))
    }

    /// The stored `(type, text)` of `version`.
    fn fetch(
        &self,
        conn: &Connection,
        version: &str,
    ) -> Result<Option<(String, Option<String>)>, CheckpointError> {
        conn.prepare_cached(
            "SELECT type, CAST(blob AS TEXT) FROM checkpoint_blobs \
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version = ?4",
        )
        .and_then(|mut s| {
            s.query_row(
                params![self.thread_id, self.checkpoint_ns, self.channel, version],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })
        .map_err(|e| {
            storage(
                format!(
                    "reading version `{version}` of channel `{}` of thread `{}`",
                    self.channel, self.thread_id
                ),
                e,
            )
        })
    }

    /// The whole value of a row of type [`APPENDED`] with text `text`.
    pub(crate) fn resolve(&self, conn: &Connection, text: &str) -> Result<Blob, CheckpointError> {
        // The chain of appends back to a whole value, newest first.
        let mut chain: Vec<(usize, String)> = Vec::new();
        let mut row: AppendedRow<'_> = serde_json::from_str(text).map_err(|e| self.corrupt(e))?;
        let mut owned: String;
        let whole = loop {
            chain.push((row.keep, row.items.get().to_owned()));
            let Some((type_, base)) = self.fetch(conn, row.base)? else {
                return Err(self.corrupt(format!(
                    "version `{}`, which a later version appends to, is not stored",
                    row.base
                )));
            };
            let base = base.unwrap_or_default();
            match type_.as_str() {
                APPENDED => {
                    owned = base;
                    row = serde_json::from_str(&owned).map_err(|e| self.corrupt(e))?;
                }
                EMPTY => {
                    return Err(self.corrupt(format!(
                        "version `{}` is empty, and a later one appends to it",
                        row.base
                    )))
                }
                _ => break (type_, base),
            }
        };
        let (type_, text) = whole;
        let whole = if type_ == JSON {
            text
        } else {
            // A value another writer stored in another encoding.
            let blob =
                typed_to_blob(Some(&type_), Stored::Text(&text)).map_err(|e| self.corrupt(e))?;
            blob.as_str().to_owned()
        };
        let mut items = array_items(&whole).map_err(|e| self.corrupt(e))?;
        let mut bytes = whole.len();
        for (keep, appended) in chain.iter().rev() {
            if *keep > items.len() {
                return Err(self.corrupt(format!(
                    "an append keeps {keep} items of a value that has {}",
                    items.len()
                )));
            }
            items.truncate(*keep);
            items.extend(array_items(appended).map_err(|e| self.corrupt(e))?);
            bytes += appended.len();
        }
        Blob::from_json(join_items(items, bytes)).map_err(|e| self.corrupt(e))
    }

    /// The `(type, text)` of the row that stores `append`: its items, or the
    /// whole value once the items appended since the last whole one would pass
    /// that value's size.
    pub(crate) fn row_for(
        &self,
        conn: &Connection,
        append: &Append,
    ) -> Result<(&'static str, String), CheckpointError> {
        let base = append.base.as_str();
        let Some((type_, text)) = self.fetch(conn, base)? else {
            return Err(CheckpointError::InvalidInput(format!(
                "version `{base}` of channel `{}`, which a put appends to, is not stored",
                self.channel
            )));
        };
        let text = text.unwrap_or_default();
        let (chain, whole) = match type_.as_str() {
            APPENDED => {
                let row: AppendedRow<'_> =
                    serde_json::from_str(&text).map_err(|e| self.corrupt(e))?;
                (row.chain, row.whole)
            }
            _ => (0, text.len()),
        };
        let added = append.items.as_str().len();
        if chain + added > whole {
            let value = match type_.as_str() {
                APPENDED => self.resolve(conn, &text)?,
                EMPTY => {
                    return Err(CheckpointError::InvalidInput(format!(
                        "version `{base}` of channel `{}` is empty; a put cannot append to it",
                        self.channel
                    )))
                }
                _ => {
                    typed_to_blob(Some(&type_), Stored::Text(&text)).map_err(|e| self.corrupt(e))?
                }
            };
            let mut items = array_items(value.as_str()).map_err(|e| self.corrupt(e))?;
            if append.keep > items.len() {
                return Err(CheckpointError::InvalidInput(format!(
                    "an append to channel `{}` keeps {} items of a value that has {}",
                    self.channel,
                    append.keep,
                    items.len()
                )));
            }
            items.truncate(append.keep);
            let appended = array_items(append.items.as_str())
                .map_err(|e| CheckpointError::InvalidInput(format!("the appended items: {e}")))?;
            items.extend(appended);
            return Ok((JSON, join_items(items, value.as_str().len() + added)));
        }
        let row = AppendedRow {
            base,
            keep: append.keep,
            chain: chain + added,
            whole,
            items: serde_json::from_str(append.items.as_str())
                .map_err(|e| CheckpointError::InvalidInput(format!("the appended items: {e}")))?,
        };
        let text = serde_json::to_string(&row)
            .map_err(|e| storage_msg(format!("encoding appended items: {e}")))?;
        Ok((APPENDED, text))
    }
}

/// The items of a JSON array, as the text of each.
fn array_items(text: &str) -> Result<Vec<&RawValue>, String> {
    serde_json::from_str(text).map_err(|e| format!("a stored list is not a JSON array: {e}"))
}

/// A JSON array of `items`.
fn join_items<'a>(items: impl IntoIterator<Item = &'a RawValue>, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity + 2);
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.get());
    }
    out.push(']');
    out
}
