//! The saver's statements, run on one pooled connection each.
//!
//! Reads are one statement each: a checkpoint row with its blobs (joined at the
//! versions the checkpoint names) and its pending writes aggregated into arrays,
//! as LangGraph's saver reads them. Writes are one transaction each.

use crate::lease::Fence;
use crate::schema::{LOCK_CLASS_THREAD_GC, LOCK_CLASS_THREAD_RUN};
use crate::PgError;
use deadpool_postgres::Client;
use futures::{pin_mut, TryStreamExt};
use graph_core::checkpoint::appended::{self, AppendedRow, Head, Heads, RowFacts, APPENDED};
use graph_core::checkpoint::rows::{self, PutRows, RowError, RowKey};
use graph_core::checkpoint::{
    metadata_matches, parse_timestamp, Blob, ChannelVersions, Checkpoint, CheckpointConfig,
    CheckpointError, CheckpointMetadata, CheckpointTuple, ListOptions, PendingWrite, Retention,
    SharedStr,
};
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

/// A checkpoint row with its values and writes; `{where}` and `{tail}` are
/// filled in per query.
const SELECT: &str = "\
SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id,
    c.checkpoint::text, c.metadata::text,
    b.channels, b.types, b.blobs,
    w.task_ids, w.channels, w.types, w.blobs,
    c.type, b.versions
FROM checkpoints c
LEFT JOIN LATERAL (
    SELECT array_agg(bl.channel ORDER BY bl.channel) AS channels,
        array_agg(bl.type ORDER BY bl.channel) AS types,
        array_agg(bl.blob ORDER BY bl.channel) AS blobs,
        array_agg(bl.version ORDER BY bl.channel) AS versions
    FROM jsonb_each_text(c.checkpoint -> 'channel_versions') AS v
    JOIN checkpoint_blobs bl
        ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns
        AND bl.channel = v.key AND bl.version = v.value
) b ON true
LEFT JOIN LATERAL (
    SELECT array_agg(cw.task_id ORDER BY cw.task_path, cw.task_id, cw.idx) AS task_ids,
        array_agg(cw.channel ORDER BY cw.task_path, cw.task_id, cw.idx) AS channels,
        array_agg(cw.type ORDER BY cw.task_path, cw.task_id, cw.idx) AS types,
        array_agg(cw.blob ORDER BY cw.task_path, cw.task_id, cw.idx) AS blobs
    FROM checkpoint_writes cw
    WHERE cw.thread_id = c.thread_id AND cw.checkpoint_ns = c.checkpoint_ns
        AND cw.checkpoint_id = c.checkpoint_id
) w ON true";

fn select(filter: &str, tail: &str) -> String {
    format!("{SELECT}\nWHERE {filter}\n{tail}")
}

type DecodeError = Box<dyn std::error::Error + Send + Sync>;

/// The `type` of the checkpoint rows this crate writes: every channel version
/// the row names has a row in `checkpoint_blobs` (an `empty` one for an empty
/// channel), so a version without one means a value was lost. LangGraph's
/// Python saver leaves the column NULL, keeps small values inline and writes no
/// row for an empty channel.
const ROW_TYPE: &str = "stategraph";

/// Decodes one `(type, bytes)` value as LangGraph stores it. `None`: the channel
/// is empty.
fn decode_value(type_: Option<&str>, bytes: Option<&[u8]>) -> Result<Option<Blob>, DecodeError> {
    match type_ {
        Some(rows::EMPTY) => Ok(None),
        Some("null") => Ok(Some(Blob::null())),
        Some(rows::JSON) | None => {
            let Some(bytes) = bytes else {
                return Err("the value is NULL".into());
            };
            let text = std::str::from_utf8(bytes)?;
            Ok(Some(Blob::from_json(text)?))
        }
        Some(other) => Err(format!(
            "values of type `{other}` (LangGraph's Python serializer) cannot be read; \
             graph-postgres reads `json` values"
        )
        .into()),
    }
}

fn column<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r Row,
    index: usize,
    context: &str,
) -> Result<T, PgError> {
    row.try_get(index).map_err(PgError::query(context))
}

/// `e`, about checkpoint `checkpoint_id` of thread `thread_id`.
fn row_error(thread_id: &str, checkpoint_id: &str, e: RowError) -> PgError {
    match e {
        RowError::Corrupt { what, source } => PgError::Corrupt {
            thread_id: thread_id.to_owned(),
            checkpoint_id: checkpoint_id.to_owned(),
            what,
            source,
        },
        RowError::FormatTooNew { found, supported } => PgError::FormatTooNew {
            thread_id: thread_id.to_owned(),
            checkpoint_id: checkpoint_id.to_owned(),
            found,
            supported,
        },
        RowError::Encode { what, source } => PgError::Serialize {
            context: format!("thread `{thread_id}`, checkpoint `{checkpoint_id}`"),
            what,
            source,
        },
    }
}

/// A saver's cache of newest appended values. A task that panicked while
/// holding it may have left an entry half-changed: the cache is then emptied.
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

/// A value of the append layout a row names: resolved after the row is read.
struct AppendedValue {
    channel: String,
    version: String,
    text: String,
}

/// One row of [`SELECT`], read but for its appended values.
struct ReadRow {
    key: RowKey,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    values: Vec<(String, Option<Blob>)>,
    appended: Vec<AppendedValue>,
    complete: bool,
    pending_writes: Vec<PendingWrite>,
}

impl ReadRow {
    fn corrupt(&self, what: String, source: DecodeError) -> PgError {
        row_error(
            &self.key.thread_id,
            &self.key.checkpoint_id,
            RowError::Corrupt { what, source },
        )
    }

    /// Resolves the appended values (from `heads`, or each value's chain of
    /// rows), then makes the tuple.
    async fn finish(
        mut self,
        client: &Client,
        heads: &Mutex<Heads>,
    ) -> Result<(CheckpointTuple, CheckpointMetadata), PgError> {
        for appended in std::mem::take(&mut self.appended) {
            let channel = SharedStr::from(appended.channel.as_str());
            let key = &self.key;
            let cached = lock(heads).get(
                &key.thread_id,
                &key.checkpoint_ns,
                &appended.channel,
                &appended.version,
            );
            let value = match cached {
                Some(value) => value,
                None => {
                    let head = assemble(
                        client,
                        &key.thread_id,
                        &key.checkpoint_ns,
                        &appended.channel,
                        &appended.version,
                        &appended.text,
                    )
                    .await?
                    .map_err(|e| {
                        self.corrupt(format!("the value of channel `{}`", appended.channel), e)
                    })?;
                    let value = head.value.clone();
                    lock(heads).offer(&key.thread_id, &key.checkpoint_ns, &channel, head);
                    value
                }
            };
            self.values.push((appended.channel, Some(value)));
        }
        let ReadRow {
            key,
            mut checkpoint,
            metadata,
            values,
            complete,
            pending_writes,
            ..
        } = self;
        rows::fill_values(&mut checkpoint, &key.checkpoint_ns, values, complete)
            .map_err(|e| row_error(&key.thread_id, &key.checkpoint_id, e))?;
        let tuple = key.into_tuple(checkpoint, metadata.clone(), pending_writes);
        Ok((tuple, metadata))
    }
}

/// The chain of rows from version `from` of a channel back to a whole value,
/// newest first: `(version, type, blob)`. One statement, however long.
const CHAIN: &str = "\
WITH RECURSIVE chain AS (
    SELECT b.version, b.type, b.blob, 0 AS depth FROM checkpoint_blobs b
    WHERE b.thread_id = $1 AND b.checkpoint_ns = $2 AND b.channel = $3 AND b.version = $4
  UNION ALL
    SELECT b.version, b.type, b.blob, c.depth + 1 FROM chain c
    JOIN checkpoint_blobs b
        ON b.thread_id = $1 AND b.checkpoint_ns = $2 AND b.channel = $3
        AND b.version = convert_from(c.blob, 'UTF8')::jsonb ->> 'base'
    WHERE c.type = $5
)
SELECT version, type, blob FROM chain ORDER BY depth";

/// The whole value of `version` of a channel, whose row is appended items
/// with text `text`, assembled from its chain: `Err` when the database cannot
/// be read, `Ok(Err)` when what it holds cannot be assembled.
async fn assemble(
    client: &Client,
    thread_id: &str,
    checkpoint_ns: &str,
    channel: &str,
    version: &str,
    text: &str,
) -> Result<Result<Head, DecodeError>, PgError> {
    let newest = match AppendedRow::parse(text) {
        Ok(row) => row,
        Err(e) => return Ok(Err(e.into())),
    };
    let context =
        || format!("reading the appended values of channel `{channel}` of thread `{thread_id}`");
    let stmt = client
        .prepare_cached(CHAIN)
        .await
        .map_err(PgError::query(context()))?;
    let rows = client
        .query(
            &stmt,
            &[
                &thread_id,
                &checkpoint_ns,
                &channel,
                &&*newest.base,
                &APPENDED,
            ],
        )
        .await
        .map_err(PgError::query(context()))?;
    Ok(assemble_rows(version, newest, &rows))
}

/// [`assemble`], once the chain's rows are read.
fn assemble_rows(
    version: &str,
    newest: AppendedRow<'_>,
    rows: &[Row],
) -> Result<Head, DecodeError> {
    let facts = newest.facts();
    // Links newest first: (keep, items).
    let mut links: Vec<(usize, String)> = vec![(newest.keep, newest.items.get().to_owned())];
    let mut expect = newest.base.into_owned();
    let mut whole = None;
    for row in rows {
        let found: String = row.try_get(0)?;
        if found != expect {
            break;
        }
        let type_: Option<String> = row.try_get(1)?;
        let blob: Option<Vec<u8>> = row.try_get(2)?;
        if type_.as_deref() == Some(APPENDED) {
            let text = String::from_utf8(blob.unwrap_or_default())?;
            let row = AppendedRow::parse(&text)?;
            links.push((row.keep, row.items.get().to_owned()));
            expect = row.base.into_owned();
            continue;
        }
        match decode_value(type_.as_deref(), blob.as_deref())? {
            Some(value) => whole = Some(value),
            None => {
                return Err(
                    format!("version `{found}` is empty, and a later one appends to it").into(),
                )
            }
        }
        break;
    }
    let Some(whole) = whole else {
        return Err(
            format!("version `{expect}`, which a later version appends to, is not stored").into(),
        );
    };
    let (text, items) = appended::assemble(
        whole.as_str(),
        links
            .iter()
            .rev()
            .map(|(keep, items)| (*keep, items.as_str())),
    )?;
    Ok(Head::assembled(version.into(), text, items, facts))
}

/// The `type` and `blob` of one stored version of a channel; `None` if it is
/// not stored.
async fn blob_row(
    client: &Client,
    thread_id: &str,
    checkpoint_ns: &str,
    channel: &str,
    version: &str,
) -> Result<Option<(Option<String>, Option<Vec<u8>>)>, PgError> {
    let context =
        || format!("reading version `{version}` of channel `{channel}` of thread `{thread_id}`");
    let stmt = client
        .prepare_cached(
            "SELECT type, blob FROM checkpoint_blobs
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND channel = $3 AND version = $4",
        )
        .await
        .map_err(PgError::query(context()))?;
    let row = client
        .query_opt(&stmt, &[&thread_id, &checkpoint_ns, &channel, &version])
        .await
        .map_err(PgError::query(context()))?;
    row.map(|row| Ok((column(&row, 0, &context())?, column(&row, 1, &context())?)))
        .transpose()
}

/// What an append to version `version` of a channel needs to know of its
/// row; `None` if it is not stored.
pub(crate) async fn facts(
    client: &Client,
    thread_id: &str,
    checkpoint_ns: &str,
    channel: &str,
    version: &str,
) -> Result<Option<RowFacts>, PgError> {
    let Some((type_, blob)) = blob_row(client, thread_id, checkpoint_ns, channel, version).await?
    else {
        return Ok(None);
    };
    let damaged = |e: &dyn std::fmt::Display| {
        PgError::InvalidInput(format!(
            "version `{version}` of channel `{channel}` of thread `{thread_id}`, which a put \
             appends to, cannot be read: {e}"
        ))
    };
    let text = || String::from_utf8(blob.clone().unwrap_or_default()).map_err(|e| damaged(&e));
    match type_.as_deref() {
        Some(APPENDED) => AppendedRow::parse(&text()?)
            .map(|row| Some(row.facts()))
            .map_err(|e| damaged(&e)),
        Some(rows::EMPTY) => Err(PgError::InvalidInput(format!(
            "version `{version}` of channel `{channel}` is empty; a put cannot append to it"
        ))),
        _ => RowFacts::of_whole(&text()?)
            .map(Some)
            .map_err(|e| damaged(&e)),
    }
}

/// The whole value of stored version `version` of a channel (whose row has
/// `facts`), for a `put` that stores the value it extends whole again.
pub(crate) async fn whole_head(
    client: &Client,
    thread_id: &str,
    checkpoint_ns: &str,
    channel: &str,
    version: &str,
    facts: RowFacts,
) -> Result<Head, PgError> {
    let damaged = |e: DecodeError| {
        PgError::InvalidInput(format!(
            "version `{version}` of channel `{channel}` of thread `{thread_id}`, which a put \
             appends to, cannot be read: {e}"
        ))
    };
    let Some((type_, blob)) = blob_row(client, thread_id, checkpoint_ns, channel, version).await?
    else {
        return Err(damaged("it is no longer stored".into()));
    };
    if type_.as_deref() == Some(APPENDED) {
        let text = String::from_utf8(blob.unwrap_or_default()).map_err(|e| damaged(e.into()))?;
        return assemble(client, thread_id, checkpoint_ns, channel, version, &text)
            .await?
            .map_err(damaged);
    }
    match decode_value(type_.as_deref(), blob.as_deref()).map_err(damaged)? {
        Some(value) => Head::new(version.into(), value, facts).map_err(|e| damaged(e.into())),
        None => Err(damaged("it is empty".into())),
    }
}

/// One row of [`SELECT`], read (its appended values are resolved by
/// [`ReadRow::finish`]).
fn read_row(row: &Row) -> Result<ReadRow, PgError> {
    const CONTEXT: &str = "reading a checkpoint row";
    let key = RowKey {
        thread_id: column(row, 0, CONTEXT)?,
        checkpoint_ns: column(row, 1, CONTEXT)?,
        checkpoint_id: column(row, 2, CONTEXT)?,
        parent_checkpoint_id: column(row, 3, CONTEXT)?,
    };
    let checkpoint_text: String = column(row, 4, CONTEXT)?;
    let metadata_text: String = column(row, 5, CONTEXT)?;
    let error = |e| row_error(&key.thread_id, &key.checkpoint_id, e);
    let corrupt = |what: String, source: DecodeError| error(RowError::Corrupt { what, source });
    let checkpoint = rows::read_checkpoint(&checkpoint_text).map_err(error)?;
    let metadata = rows::read_metadata(metadata_text.as_bytes()).map_err(error)?;

    let channels: Option<Vec<String>> = column(row, 6, CONTEXT)?;
    let types: Option<Vec<Option<String>>> = column(row, 7, CONTEXT)?;
    let blobs: Option<Vec<Option<Vec<u8>>>> = column(row, 8, CONTEXT)?;
    let versions: Option<Vec<String>> = column(row, 14, CONTEXT)?;
    let channels = channels.unwrap_or_default();
    let types = types.unwrap_or_default();
    let blobs = blobs.unwrap_or_default();
    let versions = versions.unwrap_or_default();
    if types.len() != channels.len()
        || blobs.len() != channels.len()
        || versions.len() != channels.len()
    {
        return Err(corrupt(
            "the channel values".to_owned(),
            "channel, type, blob and version arrays differ in length".into(),
        ));
    }
    let mut values = Vec::with_capacity(channels.len());
    let mut appended = Vec::new();
    for (((channel, type_), blob), version) in
        channels.into_iter().zip(types).zip(blobs).zip(versions)
    {
        if type_.as_deref() == Some(APPENDED) {
            match blob.map(String::from_utf8) {
                Some(Ok(text)) => appended.push(AppendedValue {
                    channel,
                    version,
                    text,
                }),
                _ => {
                    return Err(corrupt(
                        format!("the value of channel `{channel}`"),
                        "an appended row is not UTF-8 text".into(),
                    ))
                }
            }
            continue;
        }
        match decode_value(type_.as_deref(), blob.as_deref()) {
            Ok(value) => values.push((channel, value)),
            Err(e) => return Err(corrupt(format!("the value of channel `{channel}`"), e)),
        }
    }
    let row_type: Option<String> = column(row, 13, CONTEXT)?;
    let complete = row_type.as_deref() == Some(ROW_TYPE);

    let task_ids: Option<Vec<String>> = column(row, 9, CONTEXT)?;
    let write_channels: Option<Vec<String>> = column(row, 10, CONTEXT)?;
    let write_types: Option<Vec<Option<String>>> = column(row, 11, CONTEXT)?;
    let write_blobs: Option<Vec<Option<Vec<u8>>>> = column(row, 12, CONTEXT)?;
    let task_ids = task_ids.unwrap_or_default();
    let write_channels = write_channels.unwrap_or_default();
    let write_types = write_types.unwrap_or_default();
    let write_blobs = write_blobs.unwrap_or_default();
    if write_channels.len() != task_ids.len()
        || write_types.len() != task_ids.len()
        || write_blobs.len() != task_ids.len()
    {
        return Err(corrupt(
            "the pending writes".to_owned(),
            "task, channel, type and blob arrays differ in length".into(),
        ));
    }
    let mut pending_writes = Vec::with_capacity(task_ids.len());
    for (((task_id, channel), type_), blob) in task_ids
        .into_iter()
        .zip(write_channels)
        .zip(write_types)
        .zip(write_blobs)
    {
        let value = match decode_value(type_.as_deref(), blob.as_deref()) {
            Ok(Some(value)) => value,
            Ok(None) => Blob::null(),
            Err(e) => {
                return Err(corrupt(
                    format!("the pending write of task `{task_id}` to `{channel}`"),
                    e,
                ))
            }
        };
        pending_writes.push(PendingWrite {
            task_id,
            channel,
            value,
        });
    }
    Ok(ReadRow {
        key,
        checkpoint,
        metadata,
        values,
        appended,
        complete,
        pending_writes,
    })
}

pub(crate) async fn get_tuple(
    client: &Client,
    heads: &Mutex<Heads>,
    config: &CheckpointConfig,
) -> Result<Option<CheckpointTuple>, PgError> {
    let context = || {
        format!(
            "get_tuple of thread `{}`, checkpoint `{}`",
            config.thread_id,
            config.checkpoint_id.as_deref().unwrap_or("(latest)")
        )
    };
    // Two statements rather than one with `$3 IS NULL OR ...`, so each has the
    // plan it needs: a primary-key lookup, or the newest of the thread.
    let row = match &config.checkpoint_id {
        Some(id) => {
            let stmt = client
                .prepare_cached(&select(
                    "c.thread_id = $1 AND c.checkpoint_ns = $2 AND c.checkpoint_id = $3",
                    "",
                ))
                .await
                .map_err(PgError::query(context()))?;
            client
                .query_opt(
                    &stmt,
                    &[
                        &config.thread_id.as_str(),
                        &config.checkpoint_ns.as_str(),
                        &id.as_str(),
                    ],
                )
                .await
        }
        None => {
            let stmt = client
                .prepare_cached(&select(
                    "c.thread_id = $1 AND c.checkpoint_ns = $2",
                    "ORDER BY c.checkpoint_id DESC LIMIT 1",
                ))
                .await
                .map_err(PgError::query(context()))?;
            client
                .query_opt(
                    &stmt,
                    &[&config.thread_id.as_str(), &config.checkpoint_ns.as_str()],
                )
                .await
        }
    }
    .map_err(PgError::query(context()))?;
    match row {
        Some(row) => Ok(Some(read_row(&row)?.finish(client, heads).await?.0)),
        None => Ok(None),
    }
}

pub(crate) async fn list(
    client: &Client,
    heads: &Mutex<Heads>,
    config: Option<&CheckpointConfig>,
    options: &ListOptions,
) -> Result<Vec<CheckpointTuple>, PgError> {
    if options.limit == Some(0) {
        return Ok(Vec::new());
    }
    let context = || match config {
        Some(c) => format!("list of thread `{}`", c.thread_id),
        None => "list of all threads".to_owned(),
    };
    let mut wheres: Vec<String> = Vec::new();
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut bind = |clause: &str, value: Box<dyn ToSql + Sync + Send>| {
        params.push(value);
        wheres.push(clause.replace('?', &format!("${}", params.len())));
    };
    if let Some(config) = config {
        bind("c.thread_id = ?", Box::new(config.thread_id.to_string()));
        bind(
            "c.checkpoint_ns = ?",
            Box::new(config.checkpoint_ns.to_string()),
        );
        if let Some(id) = &config.checkpoint_id {
            bind("c.checkpoint_id = ?", Box::new(id.to_string()));
        }
    }
    if let Some(before) = &options.before {
        bind("c.checkpoint_id < ?", Box::new(before.clone()));
    }
    if !options.filter.is_empty() {
        // Containment lets a few more through than equality (1 matches 1.0, an
        // array matches a longer one); the exact test runs on each row below.
        let filter =
            serde_json::to_string(&options.filter).map_err(|source| PgError::Serialize {
                context: context(),
                what: "the metadata filter",
                source,
            })?;
        bind("c.metadata @> ?::text::jsonb", Box::new(filter));
    }
    let filter = if wheres.is_empty() {
        "true".to_owned()
    } else {
        wheres.join(" AND ")
    };
    let tail = match options.limit {
        Some(limit) if options.filter.is_empty() => {
            format!("ORDER BY c.checkpoint_id DESC LIMIT {limit}")
        }
        _ => "ORDER BY c.checkpoint_id DESC".to_owned(),
    };
    let stmt = client
        .prepare_cached(&select(&filter, &tail))
        .await
        .map_err(PgError::query(context()))?;
    let mut read = Vec::new();
    {
        let rows = client
            .query_raw(
                &stmt,
                params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)),
            )
            .await
            .map_err(PgError::query(context()))?;
        pin_mut!(rows);
        while let Some(row) = rows.try_next().await.map_err(PgError::query(context()))? {
            let row = read_row(&row)?;
            if !metadata_matches(&row.metadata, &options.filter) {
                continue;
            }
            read.push(row);
            if options.limit.is_some_and(|limit| read.len() >= limit) {
                break;
            }
        }
    }
    // Appended values are resolved once the rows are read (the connection
    // serves one statement at a time).
    let mut out = Vec::with_capacity(read.len());
    for row in read {
        out.push(row.finish(client, heads).await?.0);
    }
    Ok(out)
}

/// The rows [`put`] stores for `checkpoint` (built once, before any retry).
pub(crate) fn put_rows(
    config: &CheckpointConfig,
    checkpoint: Checkpoint,
    metadata: &CheckpointMetadata,
    new_versions: &ChannelVersions,
) -> Result<PutRows, PgError> {
    let checkpoint_id = checkpoint.id.clone();
    rows::put_rows(checkpoint, metadata, new_versions).map_err(|e| match e {
        RowError::Encode { what, source } => PgError::Serialize {
            context: format!(
                "put of thread `{}`, checkpoint `{checkpoint_id}`",
                config.thread_id
            ),
            what,
            source,
        },
        other => row_error(&config.thread_id, &checkpoint_id, other),
    })
}

/// A blob row given by its type and text: an appended channel's new version.
pub(crate) struct TypedRow {
    pub(crate) channel: SharedStr,
    pub(crate) version: SharedStr,
    /// The version it extends, which must be stored.
    pub(crate) base: SharedStr,
    pub(crate) type_: &'static str,
    pub(crate) text: String,
}

/// Stores a checkpoint: its row and new blobs, and first `writes`, pending
/// writes of tasks `(task id, writes)` against `config.checkpoint_id`, all in
/// one transaction, fenced by `fence`.
pub(crate) async fn put(
    client: &mut Client,
    config: &CheckpointConfig,
    put: &PutRows,
    typed: &[TypedRow],
    writes: &[(String, Vec<(String, Blob)>)],
    fence: Option<&Fence>,
) -> Result<(), PgError> {
    let context = || {
        format!(
            "put of thread `{}`, checkpoint `{}`",
            config.thread_id, put.id
        )
    };
    let tasks = writes
        .iter()
        .map(|(task_id, rows)| WriteColumns::new(config, rows, task_id))
        .collect::<Result<Vec<_>, _>>()?;
    // The row keeps everything but the values; each changed channel's value goes to
    // checkpoint_blobs under its new version (an unchanged one is already there).
    let mut channels: Vec<&str> = Vec::with_capacity(put.blobs.len());
    let mut versions: Vec<&str> = Vec::with_capacity(put.blobs.len());
    let mut types: Vec<&str> = Vec::with_capacity(put.blobs.len());
    let mut blobs: Vec<Option<&[u8]>> = Vec::with_capacity(put.blobs.len());
    for blob in &put.blobs {
        channels.push(&blob.channel);
        versions.push(&blob.version);
        types.push(blob.type_());
        blobs.push(blob.bytes());
    }
    let mut base_channels: Vec<&str> = Vec::with_capacity(typed.len());
    let mut bases: Vec<&str> = Vec::with_capacity(typed.len());
    for row in typed {
        channels.push(&row.channel);
        versions.push(&row.version);
        types.push(row.type_);
        blobs.push(Some(row.text.as_bytes()));
        base_channels.push(&row.channel);
        bases.push(&row.base);
    }

    let tx = client
        .transaction()
        .await
        .map_err(PgError::query(context()))?;
    let lock = tx
        .prepare_cached("SELECT pg_advisory_xact_lock_shared($1, hashtext($2))")
        .await
        .map_err(PgError::query(context()))?;
    let insert_blobs = tx
        .prepare_cached(
            "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
             SELECT $1, $2, b.channel, b.version, b.type, b.blob
             FROM unnest($3::text[], $4::text[], $5::text[], $6::bytea[])
                 AS b(channel, version, type, blob)
             ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING",
        )
        .await
        .map_err(PgError::query(context()))?;
    let upsert = tx
        .prepare_cached(
            "INSERT INTO checkpoints
                 (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
                  metadata)
             VALUES ($1, $2, $3, $4, $7, $5::text::jsonb, $6::text::jsonb)
             ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
             DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata,
                 type = EXCLUDED.type",
        )
        .await
        .map_err(PgError::query(context()))?;
    // Sent together (tokio-postgres pipelines concurrently polled queries, in the
    // order they are first polled): one round trip for the three.
    let lock_params: [&(dyn ToSql + Sync); 2] = [&LOCK_CLASS_THREAD_GC, &config.thread_id.as_str()];
    let row_params: [&(dyn ToSql + Sync); 7] = [
        &config.thread_id.as_str(),
        &config.checkpoint_ns.as_str(),
        &put.id,
        &config.checkpoint_id.as_deref(),
        &put.checkpoint,
        &put.metadata,
        &ROW_TYPE,
    ];
    let gc_lock = tx.execute(&lock, &lock_params);
    let blobs_written = async {
        if channels.is_empty() {
            return Ok(0);
        }
        tx.execute(
            &insert_blobs,
            &[
                &config.thread_id.as_str(),
                &config.checkpoint_ns.as_str(),
                &channels,
                &versions,
                &types,
                &blobs,
            ],
        )
        .await
    };
    let row_written = tx.execute(&upsert, &row_params);
    // The lease row, read first in the transaction and held shared until it
    // ends: a grant to another run waits for this put, or this put sees it.
    let fenced = async {
        match fence {
            Some(fence) => check_fence(&tx, fence).await.map(Some),
            None => Ok(None),
        }
    };
    // The versions the appended rows extend, still stored (a put appending
    // to a version deleted meanwhile would store a broken chain).
    let bases_found = async {
        if bases.is_empty() {
            return Ok(0);
        }
        let stmt = tx
            .prepare_cached(
                "SELECT count(*) FROM unnest($3::text[], $4::text[]) AS b(channel, version)
                 JOIN checkpoint_blobs c ON c.thread_id = $1 AND c.checkpoint_ns = $2
                     AND c.channel = b.channel AND c.version = b.version",
            )
            .await?;
        let row = tx
            .query_one(
                &stmt,
                &[
                    &config.thread_id.as_str(),
                    &config.checkpoint_ns.as_str(),
                    &base_channels,
                    &bases,
                ],
            )
            .await?;
        row.try_get::<_, i64>(0)
    };
    // The writes' statement, prepared before the pipeline starts; one insert
    // per task, sent with the others.
    let insert_writes = match tasks.is_empty() {
        true => None,
        false => Some(
            tx.prepare_cached(INSERT_WRITES)
                .await
                .map_err(PgError::query(context()))?,
        ),
    };
    let write_params: Vec<_> = tasks.iter().map(WriteColumns::params).collect();
    let writes_written = async {
        match &insert_writes {
            Some(stmt) => {
                futures::future::try_join_all(write_params.iter().map(|p| tx.execute(stmt, p)))
                    .await
                    .map(drop)
            }
            None => Ok(()),
        }
    };
    let (holder, _, _, _, _, found) = futures::try_join!(
        fenced,
        gc_lock,
        writes_written,
        blobs_written,
        row_written,
        bases_found
    )
    .map_err(PgError::query(context()))?;
    if let (Some(fence), Some(Err(holder))) = (fence, holder) {
        // Dropping the transaction rolls it back: nothing of this put is kept.
        return Err(fence.lost(holder));
    }
    if usize::try_from(found).ok() != Some(bases.len()) {
        return Err(PgError::InvalidInput(format!(
            "{}: a version an append extends ({}) is no longer stored",
            context(),
            bases.join(", ")
        )));
    }
    tx.commit().await.map_err(PgError::query(context()))
}

/// Inserts one task's pending writes (`WriteColumns::params`). Special
/// writes (negative indices) replace; regular ones are kept if present, so a
/// retried task cannot change what it wrote.
const INSERT_WRITES: &str = "INSERT INTO checkpoint_writes
         (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob)
     SELECT $1, $2, $3, $4, '', w.idx, w.channel, 'json', w.blob
     FROM unnest($5::int4[], $6::text[], $7::bytea[]) AS w(idx, channel, blob)
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
     DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob
     WHERE EXCLUDED.idx < 0";

/// [`INSERT_WRITES`] for a run holding the thread: one statement that reads
/// the lease row `FOR SHARE` (held until the statement's transaction ends) and
/// inserts only if it is the run's grant (`$8`, `$9`).
const INSERT_WRITES_FENCED: &str = "WITH lease AS (
         SELECT owner, generation FROM stategraph_thread_leases
         WHERE thread_id = $1 FOR SHARE
     ), written AS (
         INSERT INTO checkpoint_writes
             (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type,
              blob)
         SELECT $1, $2, $3, $4, '', w.idx, w.channel, 'json', w.blob
         FROM unnest($5::int4[], $6::text[], $7::bytea[]) AS w(idx, channel, blob)
         WHERE EXISTS (SELECT 1 FROM lease WHERE owner = $8 AND generation = $9)
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
         DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob
         WHERE EXCLUDED.idx < 0
     )
     SELECT owner, generation FROM lease";

/// One task's pending writes as the columns of `checkpoint_writes`: one row
/// per index, so a special channel written twice in one batch keeps its last
/// value (one statement cannot update a row twice).
struct WriteColumns<'a> {
    thread_id: &'a str,
    checkpoint_ns: &'a str,
    checkpoint_id: &'a str,
    task_id: &'a str,
    idxs: Vec<i32>,
    channels: Vec<&'a str>,
    blobs: Vec<&'a [u8]>,
}

impl<'a> WriteColumns<'a> {
    fn new(
        config: &'a CheckpointConfig,
        writes: &'a [(String, Blob)],
        task_id: &'a str,
    ) -> Result<Self, PgError> {
        let Some(checkpoint_id) = config.checkpoint_id.as_deref() else {
            return Err(PgError::InvalidInput(format!(
                "put_writes for thread `{}` needs a checkpoint id",
                config.thread_id
            )));
        };
        let rows = rows::write_rows(writes);
        let mut columns = WriteColumns {
            thread_id: config.thread_id.as_str(),
            checkpoint_ns: config.checkpoint_ns.as_str(),
            checkpoint_id,
            task_id,
            idxs: Vec::with_capacity(rows.len()),
            channels: Vec::with_capacity(rows.len()),
            blobs: Vec::with_capacity(rows.len()),
        };
        for row in rows {
            let idx = i32::try_from(row.idx).map_err(|_| {
                PgError::InvalidInput(format!(
                    "{}: too many writes in one call",
                    columns.context()
                ))
            })?;
            columns.idxs.push(idx);
            columns.channels.push(row.channel);
            columns.blobs.push(row.value.as_str().as_bytes());
        }
        Ok(columns)
    }

    fn context(&self) -> String {
        format!(
            "put_writes of thread `{}`, checkpoint `{}`, task `{}`",
            self.thread_id, self.checkpoint_id, self.task_id
        )
    }

    /// The parameters of [`INSERT_WRITES`].
    fn params(&self) -> [&(dyn ToSql + Sync); 7] {
        [
            &self.thread_id,
            &self.checkpoint_ns,
            &self.checkpoint_id,
            &self.task_id,
            &self.idxs,
            &self.channels,
            &self.blobs,
        ]
    }
}

/// Reads the lease row of `fence`'s thread `FOR SHARE`: `Ok` when it is the
/// fence's grant, else the row found instead (owner, generation), if any.
async fn check_fence(
    tx: &deadpool_postgres::Transaction<'_>,
    fence: &Fence,
) -> Result<Result<(), Option<(String, i64)>>, tokio_postgres::Error> {
    let stmt = tx
        .prepare_cached(
            "SELECT owner, generation FROM stategraph_thread_leases
             WHERE thread_id = $1 FOR SHARE",
        )
        .await?;
    let row = tx.query_opt(&stmt, &[&fence.thread_id]).await?;
    let holder = match row {
        Some(row) => Some((row.try_get::<_, String>(0)?, row.try_get::<_, i64>(1)?)),
        None => None,
    };
    Ok(match holder {
        Some((owner, generation)) if owner == fence.owner && generation == fence.generation => {
            Ok(())
        }
        other => Err(other),
    })
}

/// Grants `thread_id`'s lease to a new run (the caller holds the thread's
/// advisory lock): its row now names `owner` and a new generation. Returns the
/// generation and the owner of the row it replaced, if any (a run that did not
/// release its lease: it crashed, or lost its lock and was cancelled).
pub(crate) async fn grant(
    client: &Client,
    thread_id: &str,
    owner: &str,
) -> Result<(i64, Option<String>), PgError> {
    let context = || format!("lease of thread `{thread_id}`");
    let stmt = client
        .prepare_cached(
            "WITH previous AS (
                 SELECT owner FROM stategraph_thread_leases WHERE thread_id = $1 FOR UPDATE
             )
             INSERT INTO stategraph_thread_leases AS l (thread_id, owner, generation)
             VALUES ($1, $2, nextval('stategraph_thread_lease_generation'))
             ON CONFLICT (thread_id) DO UPDATE
                 SET owner = EXCLUDED.owner, generation = EXCLUDED.generation, granted_at = now()
             RETURNING l.generation, (SELECT owner FROM previous)",
        )
        .await
        .map_err(PgError::query(context()))?;
    let row = client
        .query_one(&stmt, &[&thread_id, &owner])
        .await
        .map_err(PgError::query(context()))?;
    Ok((column(&row, 0, &context())?, column(&row, 1, &context())?))
}

/// Removes a run's lease row at the end of the run (if it is still the run's).
pub(crate) async fn release(client: &Client, fence: &Fence) -> Result<(), PgError> {
    let context = || format!("release of the lease of thread `{}`", fence.thread_id);
    let stmt = client
        .prepare_cached(
            "DELETE FROM stategraph_thread_leases
             WHERE thread_id = $1 AND owner = $2 AND generation = $3",
        )
        .await
        .map_err(PgError::query(context()))?;
    client
        .execute(&stmt, &[&fence.thread_id, &fence.owner, &fence.generation])
        .await
        .map_err(PgError::query(context()))?;
    Ok(())
}

/// In a transaction that deletes checkpoints of `thread_id`: refuses while a
/// run of the thread holds its lock (unless this saver holds it, `held`), and
/// removes the thread's lease row, so that a run which lost its lock without
/// noticing is fenced out instead of writing on top of what is deleted.
async fn claim_for_delete(
    tx: &deadpool_postgres::Transaction<'_>,
    thread_id: &str,
    held: bool,
    context: &str,
) -> Result<(), PgError> {
    if !held {
        let stmt = tx
            .prepare_cached("SELECT pg_try_advisory_xact_lock($1, hashtext($2))")
            .await
            .map_err(PgError::query(context))?;
        let row = tx
            .query_one(&stmt, &[&LOCK_CLASS_THREAD_RUN, &thread_id])
            .await
            .map_err(PgError::query(context))?;
        let free: bool = column(&row, 0, context)?;
        if !free {
            return Err(PgError::ThreadBusy {
                thread_id: thread_id.to_owned(),
            });
        }
    }
    let stmt = tx
        .prepare_cached("DELETE FROM stategraph_thread_leases WHERE thread_id = $1")
        .await
        .map_err(PgError::query(context))?;
    tx.execute(&stmt, &[&thread_id])
        .await
        .map_err(PgError::query(context))?;
    Ok(())
}

pub(crate) async fn put_writes(
    client: &Client,
    config: &CheckpointConfig,
    writes: &[(String, Blob)],
    task_id: &str,
    fence: Option<&Fence>,
) -> Result<(), PgError> {
    let columns = WriteColumns::new(config, writes, task_id)?;
    let context = || columns.context();
    let params = columns.params();
    let Some(fence) = fence else {
        let stmt = client
            .prepare_cached(INSERT_WRITES)
            .await
            .map_err(PgError::query(context()))?;
        client
            .execute(&stmt, &params)
            .await
            .map_err(PgError::query(context()))?;
        return Ok(());
    };
    let stmt = client
        .prepare_cached(INSERT_WRITES_FENCED)
        .await
        .map_err(PgError::query(context()))?;
    let mut fenced = params.to_vec();
    fenced.push(&fence.owner);
    fenced.push(&fence.generation);
    let row = client
        .query_opt(&stmt, &fenced)
        .await
        .map_err(PgError::query(context()))?;
    let holder = match row {
        Some(row) => Some((
            column::<String>(&row, 0, &context())?,
            column::<i64>(&row, 1, &context())?,
        )),
        None => None,
    };
    match holder {
        Some((owner, generation)) if owner == fence.owner && generation == fence.generation => {
            Ok(())
        }
        other => Err(fence.lost(other)),
    }
}

pub(crate) async fn delete_thread(
    client: &mut Client,
    thread_id: &str,
    held: bool,
) -> Result<(), PgError> {
    let context = || format!("delete_thread of thread `{thread_id}`");
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query(context()))?;
    claim_for_delete(&tx, thread_id, held, &context()).await?;
    for table in ["checkpoints", "checkpoint_blobs", "checkpoint_writes"] {
        let stmt = tx
            .prepare_cached(&format!("DELETE FROM {table} WHERE thread_id = $1"))
            .await
            .map_err(PgError::query(context()))?;
        tx.execute(&stmt, &[&thread_id])
            .await
            .map_err(PgError::query(context()))?;
    }
    tx.commit().await.map_err(PgError::query(context()))
}

/// Deletes the checkpoints `retention` does not keep, their writes, and the blobs
/// no remaining checkpoint of the thread references. Returns how many checkpoints
/// were deleted.
pub(crate) async fn prune(
    client: &mut Client,
    thread_id: &str,
    retention: Retention,
    held: bool,
) -> Result<u64, PgError> {
    let context = || format!("prune of thread `{thread_id}`");
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query(context()))?;
    claim_for_delete(&tx, thread_id, held, &context()).await?;
    // Excludes puts of this thread (they hold the lock shared) until commit: a
    // put forking from a checkpoint being deleted must not lose the blobs it
    // reuses, and the set of checkpoints must not change under the selection.
    let lock = tx
        .prepare_cached("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .await
        .map_err(PgError::query(context()))?;
    tx.execute(&lock, &[&LOCK_CLASS_THREAD_GC, &thread_id])
        .await
        .map_err(PgError::query(context()))?;
    // Which ones go is decided by graph-core's rule, the same for every saver (a
    // `ts` that does not parse keeps its checkpoint instead of failing the prune).
    let all = tx
        .prepare_cached(
            "SELECT checkpoint_ns, checkpoint_id, checkpoint ->> 'ts' FROM checkpoints
             WHERE thread_id = $1",
        )
        .await
        .map_err(PgError::query(context()))?;
    let rows = tx
        .query(&all, &[&thread_id])
        .await
        .map_err(PgError::query(context()))?;
    let mut listed: Vec<(String, String, Option<SystemTime>)> = Vec::with_capacity(rows.len());
    for row in &rows {
        let ns: String = column(row, 0, &context())?;
        let id: String = column(row, 1, &context())?;
        let ts: Option<String> = column(row, 2, &context())?;
        listed.push((ns, id, ts.as_deref().and_then(parse_timestamp)));
    }
    let doomed = retention
        .select(
            listed
                .iter()
                .map(|(ns, id, t)| (ns.as_str(), id.as_str(), *t)),
        )
        .map_err(|e| match e {
            CheckpointError::InvalidInput(message) => PgError::InvalidInput(message),
            other => PgError::InvalidInput(other.to_string()),
        })?;
    if doomed.is_empty() {
        return Ok(0);
    }
    let (namespaces, ids): (Vec<&str>, Vec<&str>) = doomed.into_iter().unzip();
    let delete = tx
        .prepare_cached(
            "WITH doomed AS (
                 SELECT * FROM unnest($2::text[], $3::text[]) AS d(checkpoint_ns, checkpoint_id)
             ), gone AS (
                 DELETE FROM checkpoints c USING doomed d
                 WHERE c.thread_id = $1 AND c.checkpoint_ns = d.checkpoint_ns
                     AND c.checkpoint_id = d.checkpoint_id
                 RETURNING 1
             ), writes AS (
                 DELETE FROM checkpoint_writes w USING doomed d
                 WHERE w.thread_id = $1 AND w.checkpoint_ns = d.checkpoint_ns
                     AND w.checkpoint_id = d.checkpoint_id
             )
             SELECT count(*) FROM gone",
        )
        .await
        .map_err(PgError::query(context()))?;
    let row = tx
        .query_one(&delete, &[&thread_id, &namespaces, &ids])
        .await
        .map_err(PgError::query(context()))?;
    let deleted: i64 = column(&row, 0, &context())?;
    // A statement of its own: within the one above, the deleted rows would still
    // be visible to this anti-join.
    // A kept version of the append layout keeps the versions it extends.
    let collect = tx
        .prepare_cached(
            "WITH RECURSIVE kept(checkpoint_ns, channel, version) AS (
                 SELECT c.checkpoint_ns, v.key, v.value FROM checkpoints c
                 CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') v
                 WHERE c.thread_id = $1
               UNION
                 SELECT b.checkpoint_ns, b.channel, convert_from(b.blob, 'UTF8')::jsonb ->> 'base'
                 FROM kept k JOIN checkpoint_blobs b
                     ON b.thread_id = $1 AND b.checkpoint_ns = k.checkpoint_ns
                     AND b.channel = k.channel AND b.version = k.version
                 WHERE b.type = $2
             )
             DELETE FROM checkpoint_blobs b
             WHERE b.thread_id = $1 AND NOT EXISTS (
                 SELECT 1 FROM kept k
                 WHERE k.checkpoint_ns = b.checkpoint_ns AND k.channel = b.channel
                     AND k.version = b.version
             )",
        )
        .await
        .map_err(PgError::query(context()))?;
    tx.execute(&collect, &[&thread_id, &APPENDED])
        .await
        .map_err(PgError::query(context()))?;
    tx.commit().await.map_err(PgError::query(context()))?;
    Ok(u64::try_from(deleted).unwrap_or(0))
}
