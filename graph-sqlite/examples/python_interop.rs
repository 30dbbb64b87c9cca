//! The Rust side of `tests/python_reads_rust.sh`, which proves that LangGraph's
//! Python `SqliteSaver` reads (and writes) a database made by this crate.
//!
//! ```text
//! python_interop write DB EXPECTED.json   # write threads, and what they hold
//! python_interop check DB EXPECTED.json   # read threads Python wrote, compare
//! python_interop open DB                  # open (migrate) and close
//! ```
//!
//! EXPECTED.json is a list of checkpoint tuples in the JSON form of
//! `tests/fixtures/make_python_fixture.py` (`dump_one`), newest first per thread.

use graph_core::checkpoint::{
    Blob, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource, CheckpointTuple,
    Checkpointer, ListOptions, NameMap, SharedStr,
};
use graph_sqlite::SqliteSaver;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::ExitCode;

type Error = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["write", db, expected] => write(db, expected).await,
        ["check", db, expected] => check(db, expected).await,
        ["open", db] => open(db).await,
        _ => Err("usage: python_interop write DB EXPECTED | check DB EXPECTED | open DB".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("python_interop: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A tuple in the JSON form of make_python_fixture.py's `dump_one`.
fn as_json(t: &CheckpointTuple) -> Result<Value, Error> {
    let mut values = serde_json::Map::new();
    for (k, b) in &t.checkpoint.channel_values {
        values.insert(k.to_string(), b.decode::<Value>()?);
    }
    let mut writes = Vec::new();
    for w in &t.pending_writes {
        writes.push(json!([w.task_id, w.channel, w.value.decode::<Value>()?]));
    }
    Ok(json!({
        "thread_id": t.config.thread_id,
        "checkpoint_ns": t.config.checkpoint_ns,
        "checkpoint_id": t.config.checkpoint_id,
        "parent_checkpoint_id": t.parent_config.as_ref().and_then(|p| p.checkpoint_id.clone()),
        "metadata": serde_json::to_value(&t.metadata)?,
        "checkpoint": {
            "v": t.checkpoint.v,
            "id": t.checkpoint.id,
            "ts": t.checkpoint.ts,
            "channel_values": values,
            "channel_versions": t.checkpoint.channel_versions,
            "versions_seen": t.checkpoint.versions_seen,
            "updated_channels": t.checkpoint.updated_channels,
        },
        "pending_writes": writes,
    }))
}

/// Puts checkpoints the way the Pregel loop does: values only for the channels
/// whose version changed.
struct Writer<'a> {
    saver: &'a SqliteSaver,
    config: CheckpointConfig,
    versions: NameMap<SharedStr>,
    step: i64,
    next: u64,
}

impl<'a> Writer<'a> {
    fn new(saver: &'a SqliteSaver, thread: &str, ns: &str) -> Self {
        Writer {
            saver,
            config: CheckpointConfig {
                thread_id: thread.into(),
                checkpoint_ns: ns.into(),
                checkpoint_id: None,
            },
            versions: NameMap::new(),
            step: -1,
            next: 1,
        }
    }

    async fn step(
        &mut self,
        id: &str,
        changes: &[(&str, Option<Value>)],
        mut metadata: CheckpointMetadata,
    ) -> Result<(), Error> {
        let version = SharedStr::from(format!("{:032}.{:016}", self.next, 0.4_f64));
        self.next += 1;
        let mut values = NameMap::new();
        let mut new_versions = NameMap::new();
        for (channel, value) in changes {
            self.versions.insert((*channel).into(), version.clone());
            new_versions.insert((*channel).into(), version.clone());
            if let Some(value) = value {
                values.insert((*channel).into(), Blob::encode(value)?);
            }
        }
        metadata.step = self.step;
        self.step += 1;
        let mut versions_seen = NameMap::new();
        versions_seen.insert(SharedStr::from("__input__"), NameMap::new());
        versions_seen.insert(SharedStr::from("agent"), self.versions.clone());
        let mut updated: Vec<SharedStr> = changes.iter().map(|(c, _)| (*c).into()).collect();
        updated.sort();
        let checkpoint = Checkpoint {
            v: 4,
            id: id.to_owned(),
            ts: format!("2025-01-02T03:04:{:02}.000000+00:00", self.next),
            channel_values: values,
            channel_versions: self.versions.clone(),
            versions_seen,
            updated_channels: Some(updated),
        };
        self.config = self
            .saver
            .put(&self.config, checkpoint, metadata, new_versions)
            .await?;
        Ok(())
    }
}

fn meta(source: CheckpointSource, extra: Value) -> CheckpointMetadata {
    CheckpointMetadata {
        source,
        step: 0,
        parents: BTreeMap::new(),
        extra: match extra {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        },
    }
}

async fn write(db: &str, expected_path: &str) -> Result<(), Error> {
    let saver = SqliteSaver::open(db).await?;
    let history: Vec<Value> = (0..40)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "ai" }, "content": format!("message {i} ✓")}))
        .collect();

    let mut w = Writer::new(&saver, "rust-1", "");
    w.step(
        "1f0e0000-0001-6000-bfff-000000000001",
        &[(
            "__start__",
            Some(json!({"topic": "rust", "messages": history})),
        )],
        meta(CheckpointSource::Input, json!({"user": "alice"})),
    )
    .await?;
    w.step(
        "1f0e0000-0002-6000-8000-000000000002",
        &[
            ("topic", Some(json!("rust"))),
            ("messages", Some(json!(history))),
            ("count", Some(json!(0))),
            ("scratch", Some(json!({"draft": "tmp"}))),
            ("branch:to:agent", Some(Value::Null)),
        ],
        meta(CheckpointSource::Loop, json!({"user": "alice"})),
    )
    .await?;
    let root_at_step_0 = w.config.clone();
    w.step(
        "1f0e0000-0003-6000-8001-000000000003",
        &[
            ("count", Some(json!(1))),
            ("branch:to:agent", Some(Value::Null)),
        ],
        meta(
            CheckpointSource::Loop,
            json!({"user": "alice", "flag": true}),
        ),
    )
    .await?;
    let mut longer = history.clone();
    longer.push(json!({"role": "ai", "content": "done"}));
    w.step(
        "1f0e0000-0004-6000-8002-000000000004",
        &[
            ("messages", Some(json!(longer))),
            ("count", Some(json!(2))),
            ("scratch", None),
        ],
        meta(
            CheckpointSource::Loop,
            json!({"user": "alice", "score": 0.5}),
        ),
    )
    .await?;
    let last = w.config.clone();
    saver
        .put_writes(
            &last,
            vec![
                (
                    "messages".into(),
                    Blob::encode(&json!([{"role": "ai", "content": "pending"}]))?,
                ),
                ("count".into(), Blob::encode(&3)?),
            ],
            "7c2b6bd5-0000-0000-0000-00000000000a",
        )
        .await?;
    saver
        .put_writes(
            &last,
            vec![(
                "__interrupt__".into(),
                Blob::encode(&json!([{"value": {"question": "ok?"}, "id": "int-1", "response_schema": null}]))?,
            )],
            "7c2b6bd5-0000-0000-0000-00000000000b",
        )
        .await?;
    saver
        .put_writes(
            &last,
            vec![("__resume__".into(), Blob::encode(&"yes")?)],
            "00000000-0000-0000-0000-000000000000",
        )
        .await?;
    saver
        .put_writes(
            &root_at_step_0,
            vec![("__error__".into(), Blob::encode(&"ValueError('boom')")?)],
            "7c2b6bd5-0000-0000-0000-00000000000c",
        )
        .await?;

    let mut sub = Writer::new(&saver, "rust-1", "agent:7c2b6bd5");
    let mut sub_meta = meta(CheckpointSource::Loop, json!({}));
    sub_meta.parents.insert(
        String::new(),
        "1f0e0000-0003-6000-8001-000000000003".to_owned(),
    );
    sub.step(
        "1f0e0000-0005-6000-8001-000000000005",
        &[("notes", Some(json!(["sub 1"])))],
        sub_meta.clone(),
    )
    .await?;
    sub.step(
        "1f0e0000-0006-6000-8001-000000000006",
        &[("notes", Some(json!(["sub 1", "sub 2"])))],
        sub_meta,
    )
    .await?;

    let mut other = Writer::new(&saver, "rust-2", "");
    other
        .step(
            "1f0e0000-0007-6000-bfff-000000000007",
            &[("topic", Some(json!("to delete")))],
            meta(CheckpointSource::Input, json!({})),
        )
        .await?;

    let mut expected = Vec::new();
    for thread in ["rust-1", "rust-2"] {
        for ns in ["", "agent:7c2b6bd5"] {
            let config = CheckpointConfig {
                checkpoint_ns: ns.into(),
                ..CheckpointConfig::thread(thread)
            };
            for t in saver.list(Some(&config), &ListOptions::default()).await? {
                expected.push(as_json(&t)?);
            }
        }
    }
    saver.close().await?;
    std::fs::write(expected_path, serde_json::to_string_pretty(&expected)?)?;
    println!("wrote {} checkpoints to {db}", expected.len());
    Ok(())
}

async fn check(db: &str, expected_path: &str) -> Result<(), Error> {
    let expected: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(expected_path)?)?;
    let saver = SqliteSaver::open(db).await?;
    let field = |row: &Value, key: &str| -> Result<String, Error> {
        row[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("expected row without `{key}`: {row}").into())
    };
    for row in &expected {
        let config = CheckpointConfig {
            thread_id: field(row, "thread_id")?.into(),
            checkpoint_ns: field(row, "checkpoint_ns")?.into(),
            checkpoint_id: Some(field(row, "checkpoint_id")?.into()),
        };
        let Some(tuple) = saver.get_tuple(&config).await? else {
            return Err(format!("{config:?} not found").into());
        };
        let got = as_json(&tuple)?;
        if &got != row {
            return Err(format!("{config:?} differs:\n  rust:   {got}\n  python: {row}").into());
        }
    }
    if saver
        .get_tuple(&CheckpointConfig::thread("rust-2"))
        .await?
        .is_some()
    {
        return Err("thread rust-2, deleted by Python, is still there".into());
    }
    saver.close().await?;
    println!("read {} checkpoints written by Python", expected.len());
    Ok(())
}

async fn open(db: &str) -> Result<(), Error> {
    SqliteSaver::open(db).await?.close().await?;
    Ok(())
}
