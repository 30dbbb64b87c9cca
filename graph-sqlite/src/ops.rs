//! The saver's operations, run on the connection's thread.

use crate::append::ChannelKey;
use crate::decode::{typed_to_blob, typed_to_json, DecodeError, Reader, Stored};
use crate::lease::{self, Fence};
use crate::schema::Tables;
use crate::{storage, storage_msg};
use graph_core::checkpoint::appended::{Head, Heads, APPENDED};
use graph_core::checkpoint::rows::{self, RowError, RowKey};
use graph_core::checkpoint::{
    metadata_matches, Append, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointTuple, ListOptions, NameMap, PendingWrite, Retention, SharedStr,
    StepPut,
};
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// One row of `checkpoint_rows`, as stored.
struct Row {
    key: RowKey,
    type_: Option<String>,
    checkpoint: SqlValue,
    metadata: SqlValue,
}

const ROW_COLUMNS: &str = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, \
                           type, checkpoint, metadata";

impl Row {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
        Ok(Row {
            key: RowKey {
                thread_id: row.get(0)?,
                checkpoint_ns: row.get(1)?,
                checkpoint_id: row.get(2)?,
                parent_checkpoint_id: row.get(3)?,
            },
            type_: row.get(4)?,
            checkpoint: row.get(5)?,
            metadata: row.get(6)?,
        })
    }

    fn corrupt(&self, what: impl Into<String>, source: DecodeError) -> CheckpointError {
        self.error(RowError::Corrupt {
            what: what.into(),
            source,
        })
    }

    /// `e`, about this row.
    fn error(&self, e: RowError) -> CheckpointError {
        let key = &self.key;
        match e {
            RowError::Corrupt { what, source } => CheckpointError::Corrupt {
                thread_id: key.thread_id.clone(),
                checkpoint_id: key.checkpoint_id.clone(),
                what,
                source,
            },
            RowError::FormatTooNew { found, supported } => CheckpointError::Unsupported(format!(
                "thread `{}`, checkpoint `{}` uses checkpoint format v{found}, but this \
                 graph-sqlite reads up to v{supported}",
                key.thread_id, key.checkpoint_id
            )),
            e @ RowError::Encode { .. } => storage_msg(format!(
                "thread `{}`, checkpoint `{}`: {e}",
                key.thread_id, key.checkpoint_id
            )),
        }
    }

    fn metadata(&self) -> Result<CheckpointMetadata, CheckpointError> {
        let parsed = match &self.metadata {
            SqlValue::Text(t) => rows::read_metadata(t.as_bytes()),
            SqlValue::Blob(b) => rows::read_metadata(b),
            SqlValue::Null => {
                return Err(self.corrupt("the metadata", "the metadata is NULL".into()));
            }
            _ => return Err(self.corrupt("the metadata", "the metadata is not JSON text".into())),
        };
        parsed.map_err(|e| self.error(e))
    }

    /// The checkpoint as stored in the row (values of stategraph's rows live in
    /// `checkpoint_blobs`; Python's rows hold all of them).
    fn checkpoint(&self) -> Result<Checkpoint, CheckpointError> {
        let stored = Stored::from(&self.checkpoint);
        let lenient = |stored| -> Result<Checkpoint, CheckpointDecodeError> {
            let value = typed_to_json(self.type_.as_deref(), stored)?;
            checkpoint_from_json(value)
        };
        let checkpoint = match (self.type_.as_deref(), &self.checkpoint) {
            // The fast path for our own rows; other JSON goes through the lenient
            // reader (integer versions, say).
            (Some("json"), SqlValue::Text(t)) => {
                serde_json::from_str::<Checkpoint>(t).or_else(|_| lenient(stored))
            }
            (Some("msgpack"), _) => msgpack_checkpoint(stored.bytes()),
            _ => lenient(stored),
        };
        let checkpoint = checkpoint.map_err(|e| match e {
            CheckpointDecodeError::Channel(channel, e) => {
                self.corrupt(format!("the value of channel `{channel}`"), e)
            }
            CheckpointDecodeError::Whole(e) => self.corrupt("the checkpoint", e),
        })?;
        rows::check_format(&checkpoint).map_err(|e| self.error(e))?;
        Ok(checkpoint)
    }
}

/// Why a stored checkpoint could not be read: one channel's value, or the rest.
enum CheckpointDecodeError {
    Channel(String, DecodeError),
    Whole(DecodeError),
}

impl From<DecodeError> for CheckpointDecodeError {
    fn from(e: DecodeError) -> Self {
        CheckpointDecodeError::Whole(e)
    }
}

/// A msgpack checkpoint (what Python writes by default), decoding each channel
/// value on its own so an error can name the channel.
fn msgpack_checkpoint(bytes: &[u8]) -> Result<Checkpoint, CheckpointDecodeError> {
    let mut reader = Reader::new(bytes);
    let mut object = serde_json::Map::new();
    for _ in 0..reader.map_len()? {
        let key = reader.key(1)?;
        if key == "channel_values" {
            let mut values = serde_json::Map::new();
            for _ in 0..reader.map_len()? {
                let channel = reader.key(2)?;
                match reader.value(2) {
                    Ok(v) => {
                        values.insert(channel, v);
                    }
                    Err(e) => return Err(CheckpointDecodeError::Channel(channel, e)),
                }
            }
            object.insert(key, Value::Object(values));
        } else {
            let value = reader.value(1)?;
            object.insert(key, value);
        }
    }
    reader.finish()?;
    checkpoint_from_json(Value::Object(object))
}

/// A checkpoint from its JSON form, accepting what LangGraph's Python savers write:
/// integer versions (the base saver's) become zero-padded strings that order the
/// same way, and channel values are any JSON.
fn checkpoint_from_json(mut value: Value) -> Result<Checkpoint, CheckpointDecodeError> {
    let whole = |e: DecodeError| CheckpointDecodeError::Whole(e);
    let Some(object) = value.as_object_mut() else {
        return Err(whole("the checkpoint is not an object".into()));
    };
    let values = match object.remove("channel_values") {
        Some(Value::Object(values)) => values,
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(_) => return Err(whole("channel_values is not an object".into())),
    };
    object.insert(
        "channel_values".to_owned(),
        Value::Object(serde_json::Map::new()),
    );
    if let Some(Value::Object(versions)) = object.get_mut("channel_versions") {
        normalize_versions(versions);
    }
    if let Some(Value::Object(seen)) = object.get_mut("versions_seen") {
        for versions in seen.values_mut() {
            if let Value::Object(versions) = versions {
                normalize_versions(versions);
            }
        }
    }
    let text = serde_json::to_string(&value).map_err(|e| whole(Box::new(e)))?;
    let mut checkpoint: Checkpoint = serde_json::from_str(&text).map_err(|e| whole(Box::new(e)))?;
    for (channel, v) in values {
        match Blob::encode(&v) {
            Ok(blob) => {
                checkpoint.channel_values.insert(channel.into(), blob);
            }
            Err(e) => return Err(CheckpointDecodeError::Channel(channel, Box::new(e))),
        }
    }
    Ok(checkpoint)
}

fn normalize_versions(versions: &mut serde_json::Map<String, Value>) {
    for version in versions.values_mut() {
        if let Some(n) = version.as_u64() {
            *version = Value::String(format!("{n:032}"));
        }
    }
}

impl<'a> From<&'a SqlValue> for Stored<'a> {
    fn from(value: &'a SqlValue) -> Self {
        match value {
            SqlValue::Text(t) => Stored::Text(t),
            SqlValue::Blob(b) => Stored::Bytes(b),
            SqlValue::Null => Stored::Null,
            SqlValue::Integer(_) | SqlValue::Real(_) => Stored::Bytes(&[]),
        }
    }
}

/// Builds the full tuple of a row: values from the blobs at the checkpoint's
/// versions, and the pending writes.
fn load(
    conn: &Connection,
    tables: Tables,
    heads: &mut Heads,
    row: Row,
    metadata: Option<CheckpointMetadata>,
) -> Result<CheckpointTuple, CheckpointError> {
    let metadata = match metadata {
        Some(m) => m,
        None => row.metadata()?,
    };
    let mut checkpoint = row.checkpoint()?;
    let key = &row.key;
    let context = || {
        format!(
            "reading thread `{}`, checkpoint `{}`",
            key.thread_id, key.checkpoint_id
        )
    };
    // A row of ours keeps its values in checkpoint_blobs, one row (of type
    // `empty` for an empty channel) per version it names; Python's rows hold
    // their values inline.
    let values_in_blobs =
        row.type_.as_deref() == Some(rows::JSON) && checkpoint.channel_values.is_empty();
    let mut values: Vec<(String, Option<Blob>)> = Vec::new();
    let mut appended: Vec<(String, String, String)> = Vec::new();
    if tables.blobs && !checkpoint.channel_versions.is_empty() {
        let versions = serde_json::to_string(&checkpoint.channel_versions)
            .map_err(|e| storage_msg(format!("{}: {e}", context())))?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT b.channel, b.type, b.blob, b.version FROM json_each(?1) AS v \
                 CROSS JOIN checkpoint_blobs AS b \
                 ON b.thread_id = ?2 AND b.checkpoint_ns = ?3 \
                 AND b.channel = v.key AND b.version = v.value",
            )
            .map_err(|e| storage(context(), e))?;
        let mut blob_rows = stmt
            .query(params![versions, key.thread_id, key.checkpoint_ns])
            .map_err(|e| storage(context(), e))?;
        while let Some(blob_row) = blob_rows.next().map_err(|e| storage(context(), e))? {
            let channel: String = blob_row.get(0).map_err(|e| storage(context(), e))?;
            let type_: Option<String> = blob_row.get(1).map_err(|e| storage(context(), e))?;
            if type_.as_deref() == Some(rows::EMPTY) {
                values.push((channel, None));
                continue;
            }
            if type_.as_deref() == Some(APPENDED) {
                // Resolved below, once this statement is done.
                let text: String = blob_row.get(2).map_err(|e| storage(context(), e))?;
                let version: String = blob_row.get(3).map_err(|e| storage(context(), e))?;
                appended.push((channel, version, text));
                continue;
            }
            let raw = blob_row.get_ref(2).map_err(|e| storage(context(), e))?;
            let blob = typed_to_blob(type_.as_deref(), Stored::from(raw))
                .map_err(|e| row.corrupt(format!("the value of channel `{channel}`"), e))?;
            values.push((channel, Some(blob)));
        }
    }
    for (channel, version, text) in appended {
        let name = SharedStr::from(channel.as_str());
        let value = ChannelKey {
            thread_id: &key.thread_id,
            checkpoint_ns: &key.checkpoint_ns,
            channel: &name,
        }
        .resolve(conn, heads, &version, &text)?;
        values.push((channel, Some(value)));
    }
    let complete = values_in_blobs && tables.blobs;
    rows::fill_values(&mut checkpoint, &key.checkpoint_ns, values, complete)
        .map_err(|e| row.error(e))?;
    let pending_writes = load_writes(conn, tables, &row)?;
    Ok(row.key.into_tuple(checkpoint, metadata, pending_writes))
}

fn load_writes(
    conn: &Connection,
    tables: Tables,
    row: &Row,
) -> Result<Vec<PendingWrite>, CheckpointError> {
    let context = || {
        format!(
            "reading pending writes of thread `{}`, checkpoint `{}`",
            row.key.thread_id, row.key.checkpoint_id
        )
    };
    // LangGraph's order (`writes_sort_key`): task path, task id, index.
    let order = if tables.task_path {
        "task_path, task_id, idx"
    } else {
        "task_id, idx"
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT task_id, channel, type, value FROM writes \
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3 \
             ORDER BY {order}"
        ))
        .map_err(|e| storage(context(), e))?;
    let mut rows = stmt
        .query(params![
            row.key.thread_id,
            row.key.checkpoint_ns,
            row.key.checkpoint_id
        ])
        .map_err(|e| storage(context(), e))?;
    let mut writes = Vec::new();
    while let Some(w) = rows.next().map_err(|e| storage(context(), e))? {
        let task_id: String = w.get(0).map_err(|e| storage(context(), e))?;
        let channel: String = w.get(1).map_err(|e| storage(context(), e))?;
        let type_: Option<String> = w.get(2).map_err(|e| storage(context(), e))?;
        let raw = w.get_ref(3).map_err(|e| storage(context(), e))?;
        let value = typed_to_blob(type_.as_deref(), Stored::from(raw)).map_err(|e| {
            row.corrupt(
                format!("the pending write of task `{task_id}` to `{channel}`"),
                e,
            )
        })?;
        writes.push(PendingWrite {
            task_id,
            channel,
            value,
        });
    }
    Ok(writes)
}

pub(crate) fn get_tuple(
    conn: &mut Connection,
    tables: Tables,
    heads: &mut Heads,
    config: &CheckpointConfig,
) -> Result<Option<CheckpointTuple>, CheckpointError> {
    let context = || {
        format!(
            "get_tuple of thread `{}`, checkpoint `{}`",
            config.thread_id,
            config.checkpoint_id.as_deref().unwrap_or("(latest)")
        )
    };
    // One read transaction, so the row, its blobs and its writes are one snapshot
    // even if another process writes meanwhile.
    let tx = conn.transaction().map_err(|e| storage(context(), e))?;
    let row = match &config.checkpoint_id {
        Some(id) => tx
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM {} \
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3",
                tables.rows
            ))
            .and_then(|mut s| {
                s.query_row(
                    params![
                        config.thread_id.as_str(),
                        config.checkpoint_ns.as_str(),
                        id.as_str()
                    ],
                    Row::read,
                )
                .optional()
            }),
        None => tx
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM {} \
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 \
                 ORDER BY checkpoint_id DESC LIMIT 1",
                tables.rows
            ))
            .and_then(|mut s| {
                s.query_row(
                    params![config.thread_id.as_str(), config.checkpoint_ns.as_str()],
                    Row::read,
                )
                .optional()
            }),
    }
    .map_err(|e| storage(context(), e))?;
    let tuple = row
        .map(|row| load(&tx, tables, heads, row, None))
        .transpose()?;
    tx.commit().map_err(|e| storage(context(), e))?;
    Ok(tuple)
}

/// A SQL condition that every checkpoint matching `key = value` satisfies (it may
/// let through a few others, e.g. `1` for `true`); the exact test is
/// [`metadata_matches`] on the decoded metadata. `None` when SQL cannot help.
fn metadata_prefilter(key: &str, value: &Value) -> Option<(String, SqlValue)> {
    if key.contains('"') || key.contains('\\') {
        return None;
    }
    let bound = match value {
        Value::String(s) => SqlValue::Text(s.clone()),
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => SqlValue::Integer(i),
            (None, Some(f)) if n.is_f64() => SqlValue::Real(f),
            _ => return None,
        },
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    };
    Some((format!("$.\"{key}\""), bound))
}

pub(crate) fn list(
    conn: &mut Connection,
    tables: Tables,
    heads: &mut Heads,
    config: Option<&CheckpointConfig>,
    options: &ListOptions,
) -> Result<Vec<CheckpointTuple>, CheckpointError> {
    if options.limit == Some(0) {
        return Ok(Vec::new());
    }
    let context = || match config {
        Some(c) => format!("list of thread `{}`", c.thread_id),
        None => "list of all threads".to_owned(),
    };
    let mut wheres: Vec<&str> = Vec::new();
    let mut params: Vec<SqlValue> = Vec::new();
    if let Some(config) = config {
        wheres.push("thread_id = ?");
        params.push(SqlValue::Text(config.thread_id.to_string()));
        wheres.push("checkpoint_ns = ?");
        params.push(SqlValue::Text(config.checkpoint_ns.to_string()));
        if let Some(id) = &config.checkpoint_id {
            wheres.push("checkpoint_id = ?");
            params.push(SqlValue::Text(id.to_string()));
        }
    }
    if let Some(before) = &options.before {
        wheres.push("checkpoint_id < ?");
        params.push(SqlValue::Text(before.clone()));
    }
    for (key, value) in &options.filter {
        if let Some((path, bound)) = metadata_prefilter(key, value) {
            wheres.push("json_extract(CAST(metadata AS TEXT), ?) = ?");
            params.push(SqlValue::Text(path));
            params.push(bound);
        }
    }
    let mut sql = format!("SELECT {ROW_COLUMNS} FROM {}", tables.rows);
    if !wheres.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&wheres.join(" AND "));
    }
    sql.push_str(" ORDER BY checkpoint_id DESC");

    let tx = conn.transaction().map_err(|e| storage(context(), e))?;
    let mut out = Vec::new();
    {
        let mut stmt = tx.prepare(&sql).map_err(|e| storage(context(), e))?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(|e| storage(context(), e))?;
        while let Some(r) = rows.next().map_err(|e| storage(context(), e))? {
            let row = Row::read(r).map_err(|e| storage(context(), e))?;
            let metadata = row.metadata()?;
            if !metadata_matches(&metadata, &options.filter) {
                continue;
            }
            out.push(load(&tx, tables, heads, row, Some(metadata))?);
            if options.limit.is_some_and(|limit| out.len() >= limit) {
                break;
            }
        }
    }
    tx.commit().map_err(|e| storage(context(), e))?;
    Ok(out)
}

/// Stores `puts` as a chain (each the child of the one before, the first of
/// `config.checkpoint_id`) in one transaction: all or none. With `end_lease`,
/// the same transaction ends the run's lease (`fence`'s): the run's last
/// checkpoints and its release in one commit.
pub(crate) fn put_chain(
    conn: &mut Connection,
    heads: &mut Heads,
    config: &CheckpointConfig,
    puts: Vec<StepPut>,
    fence: Option<&Fence>,
    end_lease: bool,
) -> Result<CheckpointConfig, CheckpointError> {
    let Some(last) = puts.last() else {
        return Ok(config.clone());
    };
    let context = put_context(config, &last.checkpoint.id);
    // Encoded before the write lock is taken.
    let mut encoded = Vec::with_capacity(puts.len());
    for put in puts {
        let context = put_context(config, &put.checkpoint.id);
        let rows = rows::put_rows(put.checkpoint, &put.metadata, &put.new_versions)
            .map_err(|e| storage_msg(format!("{context}: {e}")))?;
        encoded.push((rows, put.new_versions, put.appends, put.writes, context));
    }
    let tx = begin_put(conn, fence, &context)?;
    let mut parent = config.clone();
    let mut new_heads = Vec::new();
    for (rows, new_versions, appends, writes, context) in &encoded {
        new_heads.clear();
        let stored = store_put(
            &tx,
            heads,
            &parent,
            rows,
            new_versions,
            appends,
            writes,
            &mut new_heads,
            context,
        )?;
        // The next put of the chain appends to these (the cache is keyed by
        // version: if the transaction rolls back, no put names them).
        for (channel, head) in new_heads.drain(..) {
            heads.insert(&config.thread_id, &config.checkpoint_ns, &channel, head);
        }
        parent = stored;
    }
    if let (true, Some(fence)) = (end_lease, fence) {
        lease::release(&tx, &fence.thread_id, fence.generation)?;
    }
    tx.commit().map_err(|e| storage(context, e))?;
    Ok(parent)
}

fn put_context(config: &CheckpointConfig, checkpoint_id: &str) -> String {
    format!(
        "put of thread `{}`, checkpoint `{checkpoint_id}`",
        config.thread_id
    )
}

/// A put's transaction, holding the write lock, its lease checked.
fn begin_put<'c>(
    conn: &'c mut Connection,
    fence: Option<&Fence>,
    context: &str,
) -> Result<rusqlite::Transaction<'c>, CheckpointError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| storage(context.to_owned(), e))?;
    if let Some(fence) = fence {
        // Dropping the transaction on error rolls it back.
        lease::check(&tx, fence)?;
    }
    Ok(tx)
}

/// One checkpoint's rows, inside the caller's transaction: the step's writes
/// against the parent, the changed channels' blobs, the checkpoint's row.
/// The heads of the channels it appended to go to `new_heads`, for the
/// caller to cache once the transaction commits.
#[allow(clippy::too_many_arguments)]
fn store_put(
    tx: &Connection,
    heads: &mut Heads,
    config: &CheckpointConfig,
    put: &rows::PutRows,
    new_versions: &ChannelVersions,
    appends: &NameMap<Append>,
    writes: &[(String, Vec<(String, Blob)>)],
    new_heads: &mut Vec<(SharedStr, Head)>,
    context: &str,
) -> Result<CheckpointConfig, CheckpointError> {
    let context = || context.to_owned();
    // The step's pending writes, against the parent, in the same transaction.
    for (task_id, rows) in writes {
        store_writes(tx, config, rows, task_id)?;
    }
    // The appended channels' new whole values, cached once the put is committed.
    let inherited = python_parent_values(tx, config)?;
    {
        let mut blob_stmt = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO checkpoint_blobs \
                 (thread_id, checkpoint_ns, channel, version, type, blob) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(|e| storage(context(), e))?;
        for (channel, version, value) in &inherited {
            blob_stmt
                .execute(params![
                    config.thread_id.as_str(),
                    config.checkpoint_ns.as_str(),
                    channel.as_str(),
                    version.as_str(),
                    rows::JSON,
                    value.as_str()
                ])
                .map_err(|e| storage(context(), e))?;
        }
        for (channel, append) in appends.iter() {
            let Some(version) = new_versions.get(channel.as_str()) else {
                return Err(CheckpointError::InvalidInput(format!(
                    "channel `{channel}` appended to, but it has no new version"
                )));
            };
            let row = ChannelKey {
                thread_id: &config.thread_id,
                checkpoint_ns: &config.checkpoint_ns,
                channel,
            }
            .row_for(tx, heads, version, append)?;
            blob_stmt
                .execute(params![
                    config.thread_id.as_str(),
                    config.checkpoint_ns.as_str(),
                    channel.as_str(),
                    version.as_str(),
                    row.type_,
                    row.text
                ])
                .map_err(|e| storage(context(), e))?;
            if let Some(head) = row.head {
                new_heads.push((channel.clone(), head));
            }
        }
        for blob in put
            .blobs
            .iter()
            .filter(|b| !appends.contains_key(&b.channel))
        {
            // A channel stored whole has no newest appended value any more.
            heads.forget(&config.thread_id, &config.checkpoint_ns, &blob.channel);
            // JSON text is stored as TEXT, as Python's saver stores it.
            blob_stmt
                .execute(params![
                    config.thread_id.as_str(),
                    config.checkpoint_ns.as_str(),
                    blob.channel.as_str(),
                    blob.version.as_str(),
                    blob.type_(),
                    blob.value.as_ref().map(Blob::as_str)
                ])
                .map_err(|e| storage(context(), e))?;
        }
        tx.prepare_cached(
            "INSERT OR REPLACE INTO checkpoint_rows \
             (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) \
             VALUES (?1, ?2, ?3, ?4, 'json', ?5, ?6)",
        )
        .and_then(|mut s| {
            s.execute(params![
                config.thread_id.as_str(),
                config.checkpoint_ns.as_str(),
                put.id,
                config.checkpoint_id.as_deref(),
                put.checkpoint,
                put.metadata
            ])
        })
        .map_err(|e| storage(context(), e))?;
    }
    Ok(config.at(put.id.as_str()))
}

/// The values of the put's parent checkpoint when LangGraph's Python saver
/// wrote it: Python keeps every value inside its checkpoint row, not in
/// `checkpoint_blobs`, so a checkpoint stored on top of it (naming the
/// versions of the channels it did not change, or appending to one) needs
/// them as blob rows. `(channel, version, value)`; none for a parent of ours.
fn python_parent_values(
    conn: &Connection,
    config: &CheckpointConfig,
) -> Result<Vec<(SharedStr, SharedStr, Blob)>, CheckpointError> {
    let Some(parent) = &config.checkpoint_id else {
        return Ok(Vec::new());
    };
    let context = || {
        format!(
            "reading the parent checkpoint `{parent}` of a put to thread `{}`",
            config.thread_id
        )
    };
    let sql = format!(
        "SELECT {ROW_COLUMNS} FROM checkpoint_rows \
         WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3 \
         AND (type IS NULL OR type <> 'json')"
    );
    let row = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_row(
                params![
                    config.thread_id.as_str(),
                    config.checkpoint_ns.as_str(),
                    parent.as_str()
                ],
                Row::read,
            )
            .optional()
        })
        .map_err(|e| storage(context(), e))?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let mut checkpoint = row.checkpoint()?;
    let values = std::mem::take(&mut checkpoint.channel_values);
    Ok(values
        .into_iter()
        .filter_map(|(channel, value)| {
            let version = checkpoint.channel_versions.get(channel.as_str())?.clone();
            Some((channel, version, value))
        })
        .collect())
}

pub(crate) fn put_writes(
    conn: &mut Connection,
    config: &CheckpointConfig,
    writes: &[(String, Blob)],
    task_id: &str,
    fence: Option<&Fence>,
) -> Result<(), CheckpointError> {
    let context = || {
        format!(
            "put_writes of thread `{}`, task `{task_id}`",
            config.thread_id
        )
    };
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| storage(context(), e))?;
    if let Some(fence) = fence {
        lease::check(&tx, fence)?;
    }
    store_writes(&tx, config, writes, task_id)?;
    tx.commit().map_err(|e| storage(context(), e))
}

/// Inserts the pending writes of task `task_id` against `config`'s
/// checkpoint, inside the caller's write transaction.
fn store_writes(
    tx: &Connection,
    config: &CheckpointConfig,
    writes: &[(String, Blob)],
    task_id: &str,
) -> Result<(), CheckpointError> {
    let Some(checkpoint_id) = config.checkpoint_id.as_deref() else {
        return Err(CheckpointError::InvalidInput(format!(
            "put_writes for thread `{}` needs a checkpoint id",
            config.thread_id
        )));
    };
    let context = || {
        format!(
            "put_writes of thread `{}`, checkpoint `{checkpoint_id}`, task `{task_id}`",
            config.thread_id
        )
    };
    const COLUMNS: &str = "(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, \
                           channel, type, value) VALUES (?1, ?2, ?3, ?4, '', ?5, ?6, ?7, ?8)";
    let mut replace = tx
        .prepare_cached(&format!("INSERT OR REPLACE INTO writes {COLUMNS}"))
        .map_err(|e| storage(context(), e))?;
    let mut keep = tx
        .prepare_cached(&format!("INSERT OR IGNORE INTO writes {COLUMNS}"))
        .map_err(|e| storage(context(), e))?;
    for row in rows::write_rows(writes) {
        let (channel, value) = (row.channel, row.value);
        let stmt = if row.replaces() {
            &mut replace
        } else {
            &mut keep
        };
        // Interrupts and Sends as the Python objects LangGraph resumes from.
        let python = crate::encode::python_object_write(channel, value.as_str()).map_err(|e| {
            CheckpointError::InvalidInput(format!(
                "{}: the write to `{channel}` is not in stategraph's form: {e}",
                context()
            ))
        })?;
        let (type_, stored) = match &python {
            Some(bytes) => ("msgpack", ToSqlOutput::Borrowed(ValueRef::Blob(bytes))),
            None => (
                rows::JSON,
                ToSqlOutput::Borrowed(ValueRef::Text(value.as_str().as_bytes())),
            ),
        };
        stmt.execute(params![
            config.thread_id.as_str(),
            config.checkpoint_ns.as_str(),
            checkpoint_id,
            task_id,
            row.idx,
            channel,
            type_,
            stored
        ])
        .map_err(|e| storage(context(), e))?;
    }
    Ok(())
}

pub(crate) fn delete_thread(
    conn: &mut Connection,
    heads: &mut Heads,
    thread_id: &str,
) -> Result<(), CheckpointError> {
    heads.forget_thread(thread_id);
    let context = || format!("delete_thread of thread `{thread_id}`");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| storage(context(), e))?;
    lease::claim_for_delete(&tx, thread_id)?;
    for table in ["checkpoint_rows", "checkpoint_blobs", "writes"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE thread_id = ?1"),
            [thread_id],
        )
        .map_err(|e| storage(context(), e))?;
    }
    tx.commit().map_err(|e| storage(context(), e))
}

pub(crate) fn prune(
    conn: &mut Connection,
    heads: &mut Heads,
    thread_id: &str,
    retention: Retention,
) -> Result<u64, CheckpointError> {
    heads.forget_thread(thread_id);
    let context = || format!("prune of thread `{thread_id}`");
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| storage(context(), e))?;
    lease::claim_for_delete(&tx, thread_id)?;
    let rows: Vec<Row> = {
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM checkpoint_rows WHERE thread_id = ?1"
            ))
            .map_err(|e| storage(context(), e))?;
        let rows = stmt
            .query_map([thread_id], Row::read)
            .map_err(|e| storage(context(), e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| storage(context(), e))?
    };
    // A row that cannot be decoded has no known time (OlderThan keeps it) and no
    // known versions (then no blob of the thread is collected).
    let decoded: Vec<Option<Checkpoint>> = rows.iter().map(|r| r.checkpoint().ok()).collect();
    let doomed: HashSet<(&str, &str)> = retention
        .select(rows.iter().zip(&decoded).map(|(r, c)| {
            (
                r.key.checkpoint_ns.as_str(),
                r.key.checkpoint_id.as_str(),
                c.as_ref().and_then(Checkpoint::created_at),
            )
        }))?
        .into_iter()
        .collect();
    if doomed.is_empty() {
        return Ok(0);
    }
    {
        let mut delete_row = tx
            .prepare_cached(
                "DELETE FROM checkpoint_rows \
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3",
            )
            .map_err(|e| storage(context(), e))?;
        let mut delete_writes = tx
            .prepare_cached(
                "DELETE FROM writes \
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3",
            )
            .map_err(|e| storage(context(), e))?;
        for (ns, id) in &doomed {
            delete_row
                .execute(params![thread_id, ns, id])
                .map_err(|e| storage(context(), e))?;
            delete_writes
                .execute(params![thread_id, ns, id])
                .map_err(|e| storage(context(), e))?;
        }
    }
    let mut referenced: HashSet<(&str, &str, &str)> = HashSet::new();
    let mut all_known = true;
    for (row, checkpoint) in rows.iter().zip(&decoded) {
        if doomed.contains(&(
            row.key.checkpoint_ns.as_str(),
            row.key.checkpoint_id.as_str(),
        )) {
            continue;
        }
        match checkpoint {
            Some(c) => referenced.extend(c.channel_versions.iter().map(|(channel, version)| {
                (
                    row.key.checkpoint_ns.as_str(),
                    channel.as_str(),
                    version.as_str(),
                )
            })),
            None => all_known = false,
        }
    }
    if all_known {
        // A kept version of the append layout keeps the versions it extends.
        let bases: HashMap<(String, String, String), String> = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT checkpoint_ns, channel, version, json_extract(blob, '$.base') \
                     FROM checkpoint_blobs WHERE thread_id = ?1 AND type = ?2",
                )
                .map_err(|e| storage(context(), e))?;
            let rows = stmt
                .query_map(params![thread_id, APPENDED], |r| {
                    Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?))
                })
                .map_err(|e| storage(context(), e))?;
            rows.collect::<Result<_, _>>()
                .map_err(|e| storage(context(), e))?
        };
        let mut keep_bases: HashSet<(String, String, String)> = HashSet::new();
        for &(ns, channel, version) in &referenced {
            let mut at = (ns.to_owned(), channel.to_owned(), version.to_owned());
            while let Some(base) = bases.get(&at) {
                at = (at.0, at.1, base.clone());
                if !keep_bases.insert(at.clone()) {
                    break;
                }
            }
        }
        let blobs: Vec<(String, String, String)> = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT checkpoint_ns, channel, version FROM checkpoint_blobs \
                     WHERE thread_id = ?1",
                )
                .map_err(|e| storage(context(), e))?;
            let rows = stmt
                .query_map([thread_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(|e| storage(context(), e))?;
            rows.collect::<Result<_, _>>()
                .map_err(|e| storage(context(), e))?
        };
        let mut delete_blob = tx
            .prepare_cached(
                "DELETE FROM checkpoint_blobs WHERE thread_id = ?1 AND checkpoint_ns = ?2 \
                 AND channel = ?3 AND version = ?4",
            )
            .map_err(|e| storage(context(), e))?;
        for (ns, channel, version) in &blobs {
            if !referenced.contains(&(ns.as_str(), channel.as_str(), version.as_str()))
                && !keep_bases.contains(&(ns.clone(), channel.clone(), version.clone()))
            {
                delete_blob
                    .execute(params![thread_id, ns, channel, version])
                    .map_err(|e| storage(context(), e))?;
            }
        }
    }
    let deleted = doomed.len() as u64;
    tx.commit().map_err(|e| storage(context(), e))?;
    Ok(deleted)
}
