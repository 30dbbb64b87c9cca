//! The load generator of `bench/server.sh`: the same requests against any
//! server of LangGraph Server's HTTP API serving the quickstart agent as
//! `agent` (ours: `examples/serve.rs`; LangGraph's: `langgraph dev` on
//! `bench/server/agent.py`), and one JSON line of what it measured.
//!
//! `server_load --url URL --pid PID [--clients 50] [--runs 20] [--single 50]
//! [--streams 1000]`
//!
//! Every run is one turn of a new thread (`{"messages": [{"Human": "What is
//! 6*7?"}]}`: model, calculator, model; three supersteps), the thread created
//! before the timed part. Phases, in order:
//!
//! - `single`: one client, `--single` runs one after the other on
//!   `POST /threads/{id}/runs/wait`: the latency of a short run on an idle server.
//! - `wait`: `--clients` clients, `--runs` runs each on `runs/wait`: runs/s
//!   (all runs / wall time) and the latency of each run under that load.
//! - `stream`: the same on `POST /threads/{id}/runs/stream` (`stream_mode`
//!   `values`), each stream read to its end.
//! - `streams`: `--streams` streams started at once, each on its own thread:
//!   how many the server held open at the same time (response headers in, body
//!   not yet ended), how many ended with the answer, the wall time, the
//!   server's largest RSS meanwhile.
//!
//! A run counts as done when its answer (`The answer is 42.`) is in the
//! response; anything else counts as an error. The server's memory is read
//! from `/proc/PID/status` of the process and its children: the largest
//! `VmRSS` sampled every 20 ms during each phase, and `VmHWM` at the end.

#![forbid(unsafe_code)]

use serde_json::{json, Value};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ANSWER: &str = "The answer is 42.";

struct Args {
    url: String,
    pid: u32,
    clients: usize,
    runs: usize,
    single: usize,
    streams: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: String::new(),
        pid: 0,
        clients: 50,
        runs: 20,
        single: 50,
        streams: 1000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{flag} needs a whole number, not {value:?}"))
        };
        match flag.as_str() {
            "--url" => args.url = value.trim_end_matches('/').to_owned(),
            "--pid" => {
                args.pid = value
                    .parse()
                    .map_err(|_| format!("--pid needs a process id, not {value:?}"))?
            }
            "--clients" => args.clients = number()?.max(1),
            "--runs" => args.runs = number()?,
            "--single" => args.single = number()?,
            "--streams" => args.streams = number()?,
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    if args.url.is_empty() || args.pid == 0 {
        return Err("--url and --pid are required".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!(
                "{message}; usage: server_load --url URL --pid PID [--clients N] [--runs N] \
                 [--single N] [--streams N]"
            );
            return ExitCode::from(2);
        }
    };
    // Two worker threads: the machine the table was measured on has two cores,
    // which the server under test shares with this generator.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// What one phase of runs measured.
struct Phase {
    runs: usize,
    errors: usize,
    wall: Duration,
    /// Each done run's latency, sorted.
    latencies: Vec<Duration>,
    peak_rss_kb: u64,
}

impl Phase {
    fn to_json(&self) -> Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 1e2;
        json!({
            "runs": self.runs,
            "errors": self.errors,
            "wall_s": (self.wall.as_secs_f64() * 1e3).round() / 1e3,
            "runs_per_s": ((self.runs - self.errors) as f64 / self.wall.as_secs_f64() * 10.0).round() / 10.0,
            "p50_ms": percentile(&self.latencies, 50.0).map(ms),
            "p99_ms": percentile(&self.latencies, 99.0).map(ms),
            "peak_rss_mb": self.peak_rss_kb as f64 / 1024.0,
        })
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.max(1) - 1).copied()
}

async fn run(args: Args) -> Result<Value, String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let server = Arc::new(Server {
        client,
        url: args.url.clone(),
    });
    let memory = Memory::new(args.pid);

    // Warm up: the first runs of either server load code and fill caches.
    let threads = server.threads(5, 5).await?;
    for thread in &threads {
        let _ = server.wait(thread).await;
    }

    let single = server.phase(&memory, 1, args.single, Mode::Wait).await?;
    let wait = server
        .phase(&memory, args.clients, args.runs, Mode::Wait)
        .await?;
    let stream = server
        .phase(&memory, args.clients, args.runs, Mode::Stream)
        .await?;
    let (streams, max_open) = server.open_streams(&memory, args.streams).await?;
    let mut streams_json = streams.to_json();
    streams_json["max_open"] = json!(max_open);
    Ok(json!({
        "single": single.to_json(),
        "wait": wait.to_json(),
        "stream": stream.to_json(),
        "streams": streams_json,
        "vm_hwm_mb": memory.read("VmHWM:") as f64 / 1024.0,
    }))
}

#[derive(Clone, Copy)]
enum Mode {
    Wait,
    Stream,
}

struct Server {
    client: reqwest::Client,
    url: String,
}

impl Server {
    /// Creates `n` threads, `concurrency` requests at a time.
    async fn threads(
        self: &Arc<Self>,
        n: usize,
        concurrency: usize,
    ) -> Result<Vec<String>, String> {
        use futures::StreamExt;
        let ids: Vec<Result<String, String>> = futures::stream::iter(0..n)
            .map(|_| {
                let server = Arc::clone(self);
                async move {
                    let response = server
                        .client
                        .post(format!("{}/threads", server.url))
                        .json(&json!({}))
                        .send()
                        .await
                        .map_err(|e| format!("cannot create a thread: {e}"))?;
                    let body: Value = response
                        .json()
                        .await
                        .map_err(|e| format!("cannot read a created thread: {e}"))?;
                    body["thread_id"]
                        .as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("a created thread without thread_id: {body}"))
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        ids.into_iter().collect()
    }

    fn body(mode: Mode) -> Value {
        let mut body = json!({
            "assistant_id": "agent",
            "input": {"messages": [{"Human": "What is 6*7?"}]},
        });
        if let Mode::Stream = mode {
            body["stream_mode"] = json!("values");
        }
        body
    }

    /// One run on `runs/wait`: whether it answered.
    async fn wait(&self, thread: &str) -> bool {
        let sent = self
            .client
            .post(format!("{}/threads/{thread}/runs/wait", self.url))
            .json(&Self::body(Mode::Wait))
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => response
                .text()
                .await
                .is_ok_and(|text| text.contains(ANSWER)),
            _ => false,
        }
    }

    /// One run on `runs/stream`, read to its end: whether the answer came.
    /// `open` counts the streams whose headers are in and whose body is not
    /// ended; `max_open` keeps its largest value.
    async fn stream(&self, thread: &str, open: &AtomicUsize, max_open: &AtomicUsize) -> bool {
        let sent = self
            .client
            .post(format!("{}/threads/{thread}/runs/stream", self.url))
            .json(&Self::body(Mode::Stream))
            .send()
            .await;
        let mut response = match sent {
            Ok(response) if response.status().is_success() => response,
            _ => return false,
        };
        let now_open = open.fetch_add(1, Ordering::SeqCst) + 1;
        max_open.fetch_max(now_open, Ordering::SeqCst);
        let mut text = Vec::new();
        let ok = loop {
            match response.chunk().await {
                Ok(Some(chunk)) => text.extend_from_slice(&chunk),
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        open.fetch_sub(1, Ordering::SeqCst);
        let text = String::from_utf8_lossy(&text);
        ok && text.contains(ANSWER) && !text.contains("event: error")
    }

    /// `clients` clients, `runs` runs each, each run on a new thread.
    async fn phase(
        self: &Arc<Self>,
        memory: &Memory,
        clients: usize,
        runs: usize,
        mode: Mode,
    ) -> Result<Phase, String> {
        let threads = self.threads(clients * runs, 50).await?;
        let sampler = memory.sample();
        let start = Instant::now();
        let tasks: Vec<_> = threads
            .chunks(runs.max(1))
            .map(|mine| {
                let server = Arc::clone(self);
                let mine = mine.to_vec();
                tokio::spawn(async move {
                    let (open, max_open) = (AtomicUsize::new(0), AtomicUsize::new(0));
                    let mut latencies = Vec::with_capacity(mine.len());
                    let mut errors = 0;
                    for thread in &mine {
                        let began = Instant::now();
                        let ok = match mode {
                            Mode::Wait => server.wait(thread).await,
                            Mode::Stream => server.stream(thread, &open, &max_open).await,
                        };
                        if ok {
                            latencies.push(began.elapsed());
                        } else {
                            errors += 1;
                        }
                    }
                    (latencies, errors)
                })
            })
            .collect();
        let mut latencies = Vec::new();
        let mut errors = 0;
        for task in tasks {
            let (mine, failed) = task.await.map_err(|e| format!("a client panicked: {e}"))?;
            latencies.extend(mine);
            errors += failed;
        }
        let wall = start.elapsed();
        latencies.sort();
        Ok(Phase {
            runs: clients * runs,
            errors,
            wall,
            latencies,
            peak_rss_kb: sampler.stop().await,
        })
    }

    /// `n` streams started at once, each on its own thread.
    async fn open_streams(
        self: &Arc<Self>,
        memory: &Memory,
        n: usize,
    ) -> Result<(Phase, usize), String> {
        let threads = self.threads(n, 50).await?;
        let open = Arc::new(AtomicUsize::new(0));
        let max_open = Arc::new(AtomicUsize::new(0));
        let sampler = memory.sample();
        let start = Instant::now();
        let tasks: Vec<_> = threads
            .into_iter()
            .map(|thread| {
                let (server, open, max_open) =
                    (Arc::clone(self), Arc::clone(&open), Arc::clone(&max_open));
                tokio::spawn(async move {
                    let began = Instant::now();
                    let ok = server.stream(&thread, &open, &max_open).await;
                    ok.then(|| began.elapsed())
                })
            })
            .collect();
        let mut latencies = Vec::new();
        let mut errors = 0;
        for task in tasks {
            match task.await.map_err(|e| format!("a client panicked: {e}"))? {
                Some(latency) => latencies.push(latency),
                None => errors += 1,
            }
        }
        let wall = start.elapsed();
        latencies.sort();
        let phase = Phase {
            runs: n,
            errors,
            wall,
            latencies,
            peak_rss_kb: sampler.stop().await,
        };
        Ok((phase, max_open.load(Ordering::SeqCst)))
    }
}

/// The server's memory: its process and the processes it started.
struct Memory {
    pid: u32,
}

/// A running sampler of the largest `VmRSS`.
struct Sampler {
    peak: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    async fn stop(self) -> u64 {
        self.task.abort();
        let _ = self.task.await;
        self.peak.load(Ordering::SeqCst)
    }
}

impl Memory {
    fn new(pid: u32) -> Self {
        Memory { pid }
    }

    /// The process and its descendants.
    fn pids(&self) -> Vec<u32> {
        let mut parents: Vec<(u32, u32)> = Vec::new();
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                    continue;
                };
                // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    continue;
                };
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .and_then(|p| p.parse().ok());
                if let Some(ppid) = ppid {
                    parents.push((pid, ppid));
                }
            }
        }
        let mut tree = vec![self.pid];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            tree.extend(
                parents
                    .iter()
                    .filter(|(_, p)| *p == parent)
                    .map(|(c, _)| *c),
            );
            i += 1;
        }
        tree
    }

    /// The sum of a `/proc/PID/status` field (in kB) over the process tree.
    fn read(&self, field: &str) -> u64 {
        Self::read_of(&self.pids(), field)
    }

    fn read_of(pids: &[u32], field: &str) -> u64 {
        pids.iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .filter_map(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix(field))
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
            .sum()
    }

    fn sample(&self) -> Sampler {
        // The tree once: walking /proc every sample would cost the generator.
        let pids = self.pids();
        let peak = Arc::new(AtomicU64::new(Self::read_of(&pids, "VmRSS:")));
        let into = Arc::clone(&peak);
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                into.fetch_max(Self::read_of(&pids, "VmRSS:"), Ordering::SeqCst);
            }
        });
        Sampler { peak, task }
    }
}
