//! Measures what a `put` costs when one field of a 100-field state changes per
//! step, against every field changing, and what reading a checkpoint costs.
//!
//! ```text
//! cargo run --release -p stategraph-sqlite --example put_cost [FIELDS] [PUTS] [VALUE_BYTES]
//! ```

use graph_core::checkpoint::{
    Blob, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource, Checkpointer,
    NameMap, SharedStr,
};
use graph_sqlite::SqliteSaver;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error>;

struct Run {
    puts: Duration,
    reads: Duration,
    bytes: u64,
}

async fn run(
    saver: &SqliteSaver,
    thread: &str,
    fields: usize,
    puts: usize,
    value_bytes: usize,
    changed_per_put: usize,
) -> Result<(Duration, Duration), Error> {
    let names: Vec<SharedStr> = (0..fields)
        .map(|f| format!("field_{f:03}").into())
        .collect();
    let value = |step: usize, f: usize| {
        let text = format!("step {step} field {f} ");
        let repeated = text.repeat(value_bytes / text.len() + 1);
        Blob::encode(&[&repeated[..value_bytes]])
    };
    let mut versions = NameMap::new();
    let mut config = CheckpointConfig::thread(thread);
    // The first checkpoint writes every field; it is not timed.
    let mut put_time = Duration::ZERO;
    for step in 0..=puts {
        let version = SharedStr::from(format!("{:032}.{:016}", step + 1, 0.5));
        let changed: Vec<usize> = if step == 0 {
            (0..fields).collect()
        } else {
            (0..changed_per_put).map(|i| (step + i) % fields).collect()
        };
        let mut values = NameMap::new();
        let mut new_versions = NameMap::new();
        for &f in &changed {
            values.insert(names[f].clone(), value(step, f)?);
            new_versions.insert(names[f].clone(), version.clone());
            versions.insert(names[f].clone(), version.clone());
        }
        let mut seen = NameMap::new();
        seen.insert(SharedStr::from("node"), versions.clone());
        let checkpoint = Checkpoint {
            v: 4,
            id: format!("1f0e{step:04x}-0000-6000-8000-{step:012x}"),
            ts: "2025-01-01T00:00:00+00:00".to_owned(),
            channel_values: values,
            channel_versions: versions.clone(),
            versions_seen: seen,
            updated_channels: None,
        };
        let metadata = CheckpointMetadata {
            source: CheckpointSource::Loop,
            step: step as i64,
            parents: BTreeMap::new(),
            extra: serde_json::Map::new(),
        };
        let start = Instant::now();
        config = saver
            .put(&config, checkpoint, metadata, new_versions)
            .await?;
        if step > 0 {
            put_time += start.elapsed();
        }
    }
    let start = Instant::now();
    for step in (1..=puts).step_by((puts / 10).max(1)) {
        let at = config.at(format!("1f0e{step:04x}-0000-6000-8000-{step:012x}"));
        let tuple = saver.get_tuple(&at).await?.ok_or("missing checkpoint")?;
        assert_eq!(tuple.checkpoint.channel_values.len(), fields);
    }
    let reads = start.elapsed() / (puts / 10).max(1) as u32;
    Ok((put_time, reads))
}

async fn measure(
    fields: usize,
    puts: usize,
    value_bytes: usize,
    changed: usize,
) -> Result<Run, Error> {
    let dir = std::env::temp_dir().join(format!(
        "graph-sqlite-put-cost-{}-{changed}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("bench.sqlite");
    let saver = SqliteSaver::open(&path).await?;
    let (puts, reads) = run(&saver, "bench", fields, puts, value_bytes, changed).await?;
    saver.close().await?;
    let bytes = std::fs::metadata(&path)?.len();
    std::fs::remove_dir_all(&dir)?;
    Ok(Run { puts, reads, bytes })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let fields = args.first().copied().unwrap_or(100);
    let puts = args.get(1).copied().unwrap_or(100);
    let value_bytes = args.get(2).copied().unwrap_or(1_000);
    println!(
        "{puts} puts on a {fields}-field state, {value_bytes} bytes per value, file database (WAL, synchronous=NORMAL)"
    );
    for changed in [1, fields] {
        let r = measure(fields, puts, value_bytes, changed).await?;
        println!(
            "  {changed:>3} field(s) changed per put: {:>8.2} ms for {puts} puts ({:>6.0} µs/put), \
             get_tuple {:>6.0} µs, file {:>7} KiB",
            r.puts.as_secs_f64() * 1e3,
            r.puts.as_secs_f64() * 1e6 / puts as f64,
            r.reads.as_secs_f64() * 1e6,
            r.bytes / 1024,
        );
    }
    Ok(())
}
