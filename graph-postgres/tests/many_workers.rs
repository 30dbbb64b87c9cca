//! Many worker *processes* share one database (issue 9, part 3): 4 processes run
//! graphs on the same 200 threads at the same time, each thread twice per worker,
//! serialising runs of a thread with `PostgresSaver::lock_thread`. Every thread's
//! final state must hold every run's writes exactly once, each run's writes
//! together, on one linear chain of checkpoints (no run forked the thread).

mod common;

use futures::StreamExt;
use graph_postgres::PostgresSaver;
use stategraph::prelude::*;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

const WORKERS: usize = 4;
const THREADS: usize = 200;
const RUNS_PER_WORKER: usize = 2;
/// Runs in flight per worker process.
const CONCURRENCY: usize = 8;

/// Set in a worker process: its number and the schema of the shared tables.
const WORKER_ID: &str = "STATEGRAPH_TEST_WORKER_ID";
const WORKER_SCHEMA: &str = "STATEGRAPH_TEST_WORKER_SCHEMA";

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    #[reducer(concat)]
    entries: Vec<String>,
    #[reducer(add)]
    runs: u32,
    /// Who is running: `w{worker}:r{run}`, set by the input.
    run: String,
}

/// Two supersteps per run, with a pause in each, so that a run of another worker
/// on the same thread would overlap it if it were not locked out.
#[node]
async fn first(log: &Log) -> LogUpdate {
    tokio::time::sleep(Duration::from_millis(2)).await;
    Log::update().entries(vec![format!("{}:a", log.run)])
}

#[node]
async fn second(log: &Log) -> LogUpdate {
    tokio::time::sleep(Duration::from_millis(2)).await;
    Log::update()
        .entries(vec![format!("{}:b", log.run)])
        .runs(1)
}

fn app(saver: &PostgresSaver) -> CompiledGraph<Log> {
    StateGraph::<Log>::new()
        .add_node(first)
        .add_node(second)
        .add_edge(START, first)
        .add_edge(first, second)
        .compile_with(saver.clone())
        .expect("the graph compiles")
}

fn thread_name(n: usize) -> String {
    format!("thread-{n:03}")
}

async fn connect(schema: &str) -> PostgresSaver {
    let mut config: tokio_postgres::Config = common::url().parse().expect("the test URL parses");
    config.options(format!("-c search_path={schema}"));
    PostgresSaver::builder_from_config(config)
        .max_connections(CONCURRENCY)
        .max_thread_locks(CONCURRENCY)
        .connect()
        .await
        .expect("a worker connects")
}

/// One worker process: runs every thread `RUNS_PER_WORKER` times, `CONCURRENCY`
/// runs at a time, in the same order as the other workers (so they meet on the
/// same threads as often as possible).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a worker process of `four_worker_processes_share_two_hundred_threads`, which runs it"]
async fn worker_process() {
    let id: usize = std::env::var(WORKER_ID)
        .expect("run only by the many-workers test")
        .parse()
        .expect("a worker number");
    let schema = std::env::var(WORKER_SCHEMA).expect("run only by the many-workers test");
    let saver = connect(&schema).await;
    let app = app(&saver);
    let jobs = (0..RUNS_PER_WORKER).flat_map(|run| (0..THREADS).map(move |t| (run, t)));
    let results: Vec<Result<(), String>> = futures::stream::iter(jobs)
        .map(|(run, t)| {
            let (saver, app) = (&saver, &app);
            async move {
                let thread = thread_name(t);
                let lock = saver
                    .lock_thread(&thread)
                    .await
                    .map_err(|e| format!("lock {thread}: {e}"))?;
                let input = Log::update().run(format!("w{id}:r{run}"));
                app.invoke(input, &RunConfig::thread(&thread))
                    .await
                    .map_err(|e| format!("run {run} of {thread}: {e}"))?;
                lock.unlock()
                    .await
                    .map_err(|e| format!("unlock {thread}: {e}"))
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failures.is_empty(), "worker {id}: {failures:#?}");
}

/// Kills and reaps the workers if the test fails before they finish.
struct Workers(Vec<std::process::Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_worker_processes_share_two_hundred_threads() {
    let (saver, schema) = common::saver("workers").await;
    let exe = std::env::current_exe().expect("the test binary");
    let started = Instant::now();
    let mut workers = Workers(Vec::new());
    for id in 0..WORKERS {
        let child = Process::new(&exe)
            .args(["worker_process", "--exact", "--ignored", "--nocapture"])
            .env(WORKER_ID, id.to_string())
            .env(WORKER_SCHEMA, &schema)
            .env(common::URL_VAR, common::url())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a worker process");
        workers.0.push(child);
    }
    for (id, child) in std::mem::take(&mut workers.0).into_iter().enumerate() {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("wait for a worker");
        assert!(
            out.status.success(),
            "worker {id} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let elapsed = started.elapsed();

    let app = app(&saver);
    let runs = WORKERS * RUNS_PER_WORKER;
    for t in 0..THREADS {
        let thread = RunConfig::thread(thread_name(t));
        let state = app.get_state(&thread).await.expect("read the thread");
        let log = &state.values;
        assert_eq!(
            log.runs as usize,
            runs,
            "{}: every run counted once: {log:?}",
            thread_name(t)
        );
        assert_eq!(
            log.entries.len(),
            2 * runs,
            "{}: two entries per run: {log:?}",
            thread_name(t)
        );
        // Each run's two entries are adjacent (runs did not interleave), and each
        // run appears once.
        let mut seen = std::collections::BTreeSet::new();
        for pair in log.entries.chunks(2) {
            let (Some(a), Some(b)) = (pair[0].strip_suffix(":a"), pair[1].strip_suffix(":b"))
            else {
                panic!("{}: runs interleaved: {:?}", thread_name(t), log.entries);
            };
            assert_eq!(
                a,
                b,
                "{}: runs interleaved: {:?}",
                thread_name(t),
                log.entries
            );
            assert!(
                seen.insert(a.to_owned()),
                "{}: run {a} twice: {:?}",
                thread_name(t),
                log.entries
            );
        }
        let expected: std::collections::BTreeSet<String> = (0..WORKERS)
            .flat_map(|w| (0..RUNS_PER_WORKER).map(move |r| format!("w{w}:r{r}")))
            .collect();
        assert_eq!(seen, expected, "{}: every run's writes", thread_name(t));
        // One linear history: each checkpoint's parent is the one before it.
        let history = app
            .get_state_history(&thread, &Default::default())
            .await
            .expect("history");
        for pair in history.windows(2) {
            assert_eq!(
                pair[0]
                    .parent_config
                    .as_ref()
                    .and_then(|c| c.checkpoint_id.clone()),
                pair[1].config.checkpoint_id.clone(),
                "{}: the history forked (two runs started from one checkpoint)",
                thread_name(t)
            );
        }
    }
    eprintln!(
        "{WORKERS} processes, {THREADS} threads, {} runs in {elapsed:?}",
        WORKERS * THREADS * RUNS_PER_WORKER
    );
}
