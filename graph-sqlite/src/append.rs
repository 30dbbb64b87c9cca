//! The append layout ([`SqliteSaverBuilder::append_layout`]): a list channel
//! that only grew is stored as the items it appended, in a `checkpoint_blobs`
//! row of type [`APPENDED`] whose text names the version it extends, and read
//! back whole by following those links to a whole value. The rows' format, the
//! rule for storing a value whole again and the cache of newest values are
//! graph-core's [`appended`](graph_core::checkpoint::appended), shared with
//! the Postgres saver; this module fetches and stores the rows.
//!
//! Each saver (one connection) keeps a [`Heads`] cache of the newest whole
//! value of each appended channel it read or wrote: reading a thread's latest
//! checkpoint returns it without assembling anything, and the next append
//! extends it in place, so a turn of a long chat costs what it appended.
//!
//! [`SqliteSaverBuilder::append_layout`]: crate::SqliteSaverBuilder::append_layout

use crate::decode::{typed_to_blob, Stored};
use crate::{storage, storage_msg};
use graph_core::checkpoint::appended::{
    self, AppendError, AppendedRow, Head, Heads, NewRow, RowFacts, APPENDED,
};
use graph_core::checkpoint::rows::{EMPTY, JSON};
use graph_core::checkpoint::{Append, Blob, ChannelVersion, CheckpointError, SharedStr};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension};
use std::sync::{Mutex, MutexGuard};

/// The cache of a saver's connection. A job that panicked while holding it
/// may have left an entry half-changed: the cache is then emptied.
pub(crate) fn lock(heads: &Mutex<Heads>) -> MutexGuard<'_, Heads> {
    match heads.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            guard.clear();
            guard
        }
    }
}

/// Where a channel's versions live.
pub(crate) struct ChannelKey<'a> {
    pub(crate) thread_id: &'a str,
    pub(crate) checkpoint_ns: &'a str,
    pub(crate) channel: &'a SharedStr,
}

impl ChannelKey<'_> {
    fn corrupt(&self, why: impl std::fmt::Display) -> CheckpointError {
        storage_msg(format!(
            "thread `{}`, channel `{}`: {why}; the stored appended values are damaged, \
             delete the thread (or restore the database from a backup)",
            self.thread_id, self.channel
        ))
    }

    /// The stored `(type, blob)` of `version`.
    fn fetch(
        &self,
        conn: &Connection,
        version: &str,
    ) -> Result<Option<(Option<String>, SqlValue)>, CheckpointError> {
        conn.prepare_cached(
            "SELECT type, blob FROM checkpoint_blobs \
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND channel = ?3 AND version = ?4",
        )
        .and_then(|mut s| {
            s.query_row(
                params![
                    self.thread_id,
                    self.checkpoint_ns,
                    self.channel.as_str(),
                    version
                ],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })
        .map_err(|e| self.read_error(version, e))
    }

    fn read_error(&self, version: &str, e: rusqlite::Error) -> CheckpointError {
        storage(
            format!(
                "reading version `{version}` of channel `{}` of thread `{}`",
                self.channel, self.thread_id
            ),
            e,
        )
    }

    /// The facts of `version`'s row for an append to it: `None` if it is not
    /// stored.
    fn facts(&self, conn: &Connection, version: &str) -> Result<Option<RowFacts>, CheckpointError> {
        let Some((type_, stored)) = self.fetch(conn, version)? else {
            return Ok(None);
        };
        match type_.as_deref() {
            Some(APPENDED) => {
                let text = sql_text(&stored).map_err(|e| self.corrupt(e))?;
                AppendedRow::parse(text)
                    .map(|row| Some(row.facts()))
                    .map_err(|e| self.corrupt(e))
            }
            Some(EMPTY) => Err(CheckpointError::InvalidInput(format!(
                "version `{version}` of channel `{}` is empty; a put cannot append to it",
                self.channel
            ))),
            Some(JSON) => {
                let text = sql_text(&stored).map_err(|e| self.corrupt(e))?;
                RowFacts::of_whole(text)
                    .map(Some)
                    .map_err(|e| self.refused(e))
            }
            // A whole value in another encoding: its items are not counted.
            _ => {
                let bytes = match &stored {
                    SqlValue::Text(t) => t.len(),
                    SqlValue::Blob(b) => b.len(),
                    _ => 0,
                };
                Ok(Some(RowFacts::whole(bytes, None)))
            }
        }
    }

    /// The whole value of `version`, whose row is of type [`APPENDED`] with
    /// text `text`: from the cache, or assembled from the chain of rows back
    /// to a whole value (and then cached).
    pub(crate) fn resolve(
        &self,
        conn: &Connection,
        heads: &mut Heads,
        version: &str,
        text: &str,
    ) -> Result<Blob, CheckpointError> {
        if let Some(value) = heads.get(
            self.thread_id,
            self.checkpoint_ns,
            self.channel.as_str(),
            version,
        ) {
            return Ok(value);
        }
        let head = self.assemble(conn, version, text)?;
        let value = head.value.clone();
        heads.offer(self.thread_id, self.checkpoint_ns, self.channel, head);
        Ok(value)
    }

    /// Assembles `version` (row text `text`) from its chain.
    fn assemble(
        &self,
        conn: &Connection,
        version: &str,
        text: &str,
    ) -> Result<Head, CheckpointError> {
        let newest = AppendedRow::parse(text).map_err(|e| self.corrupt(e))?;
        let facts = newest.facts();
        // The links back to a whole value, newest first: (keep, items).
        let mut links: Vec<(usize, String)> = vec![(newest.keep, newest.items.get().to_owned())];
        let mut base = newest.base.into_owned();
        let whole = loop {
            let Some((type_, stored)) = self.fetch(conn, &base)? else {
                return Err(self.corrupt(format!(
                    "version `{base}`, which a later version appends to, is not stored"
                )));
            };
            match type_.as_deref() {
                Some(APPENDED) => {
                    let text = sql_text(&stored).map_err(|e| self.corrupt(e))?;
                    let row = AppendedRow::parse(text).map_err(|e| self.corrupt(e))?;
                    links.push((row.keep, row.items.get().to_owned()));
                    base = row.base.into_owned();
                }
                Some(EMPTY) => {
                    return Err(self.corrupt(format!(
                        "version `{base}` is empty, and a later one appends to it"
                    )))
                }
                // A whole value, in whichever encoding its writer used.
                _ => {
                    break typed_to_blob(type_.as_deref(), stored_of(&stored))
                        .map_err(|e| self.corrupt(e))?
                }
            }
        };
        let (text, items) = appended::assemble(
            whole.as_str(),
            links
                .iter()
                .rev()
                .map(|(keep, items)| (*keep, items.as_str())),
        )
        .map_err(|e| self.corrupt(e))?;
        Ok(Head::assembled(version.into(), text, items, facts))
    }

    /// The row that stores `append` as version `version`: its items, or the
    /// whole value once the items appended since the last whole one would pass
    /// that value's size. The base's value comes from the cache (taken out of
    /// it: the caller puts the new head back once the put is committed) or its
    /// chain.
    pub(crate) fn row_for(
        &self,
        conn: &Connection,
        heads: &mut Heads,
        version: &ChannelVersion,
        append: &Append,
    ) -> Result<NewRow, CheckpointError> {
        let base = append.base.as_str();
        let head = heads.take(
            self.thread_id,
            self.checkpoint_ns,
            self.channel.as_str(),
            base,
        );
        let Some(facts) = self.facts(conn, base)? else {
            return Err(CheckpointError::InvalidInput(format!(
                "version `{base}` of channel `{}`, which a put appends to, is not stored",
                self.channel
            )));
        };
        let head =
            match appended::next_row(facts, head, version, append).map_err(|e| self.refused(e))? {
                Ok(row) => return Ok(row),
                Err(head) => head,
            };
        // Stored whole: the base's whole value, extended.
        let head = match head {
            Some(head) => head,
            None => self.whole_head(conn, base, facts)?,
        };
        appended::whole_row(head, version, append).map_err(|e| self.refused(e))
    }

    /// The head of stored version `base` (whose row has `facts`).
    fn whole_head(
        &self,
        conn: &Connection,
        base: &str,
        facts: RowFacts,
    ) -> Result<Head, CheckpointError> {
        let Some((type_, stored)) = self.fetch(conn, base)? else {
            return Err(self.corrupt(format!("version `{base}` is no longer stored")));
        };
        if type_.as_deref() == Some(APPENDED) {
            let text = sql_text(&stored).map_err(|e| self.corrupt(e))?;
            return self.assemble(conn, base, text);
        }
        let value =
            typed_to_blob(type_.as_deref(), stored_of(&stored)).map_err(|e| self.corrupt(e))?;
        Head::new(base.into(), value, facts).map_err(|e| self.corrupt(e))
    }

    /// An append that cannot extend its base: the caller's mistake when the
    /// items are not a list or keep more than the base has.
    fn refused(&self, e: AppendError) -> CheckpointError {
        match e {
            AppendError::Row(_) => self.corrupt(e),
            AppendError::NotAList {
                what: "a stored value",
                ..
            } => CheckpointError::InvalidInput(format!(
                "channel `{}` of thread `{}` is appended to, and its stored value is not a \
                 list: {e}",
                self.channel, self.thread_id
            )),
            _ => CheckpointError::InvalidInput(format!(
                "an append to channel `{}` of thread `{}`: {e}",
                self.channel, self.thread_id
            )),
        }
    }
}

fn stored_of(value: &SqlValue) -> Stored<'_> {
    Stored::from(value)
}

/// The text of a stored row (TEXT, or a BLOB of UTF-8).
fn sql_text(value: &SqlValue) -> Result<&str, String> {
    match value {
        SqlValue::Text(t) => Ok(t),
        SqlValue::Blob(b) => {
            std::str::from_utf8(b).map_err(|e| format!("an appended row is not UTF-8: {e}"))
        }
        _ => Err("an appended row holds no text".to_owned()),
    }
}
