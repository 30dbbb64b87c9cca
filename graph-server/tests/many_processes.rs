//! Three server processes share one PostgreSQL database (issue 25, item 6):
//! 300 runs on 100 threads are sent through all three, one process is killed
//! (SIGKILL) while it runs some of them, and every run still finishes exactly
//! once: each `success`, each thread's state holding each run's input once and
//! each run's steps once. Runs the killed process held are taken over by the
//! others when their lease expires, and resumed from their last checkpoint.
//!
//! Also across processes: a run on a busy thread is refused with `reject`
//! whichever process is asked, `join` answers a run another process executes,
//! and a cancel sent to one process stops a run another executes.
//!
//! The server processes are this test binary (`server_process`, ignored on its
//! own) serving `Server::serve_until`; the database is the throwaway
//! PostgreSQL of graph-postgres's tests (or `STATEGRAPH_TEST_PG_URL`).

#[path = "../../graph-postgres/tests/common/server.rs"]
mod pg_server;

use futures::StreamExt;
use graph_postgres::tokio_postgres;
use graph_server::Server;
use serde_json::{json, Value};
use stategraph::prelude::*;
use std::collections::BTreeMap;
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

const PROCESSES: usize = 3;
const THREADS: usize = 100;
const RUNS_PER_THREAD: usize = 3;

/// Set in a server process: the database URL, the schema of its tables, its port.
const CHILD_URL: &str = "STATEGRAPH_TEST_SERVER_PG_URL";
const CHILD_SCHEMA: &str = "STATEGRAPH_TEST_SERVER_SCHEMA";
const CHILD_PORT: &str = "STATEGRAPH_TEST_SERVER_PORT";

fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Tally {
    /// Each run's tag, from its input: there once per run.
    #[reducer(append)]
    inputs: Vec<String>,
    /// One per node executed to completion: two per run.
    #[reducer(add)]
    steps: u32,
    /// How long each node sleeps, from the input.
    sleep_ms: u64,
}

#[node]
async fn first(t: &Tally) -> TallyUpdate {
    tokio::time::sleep(Duration::from_millis(t.sleep_ms)).await;
    Tally::update().steps(1)
}

#[node]
async fn second(t: &Tally) -> TallyUpdate {
    tokio::time::sleep(Duration::from_millis(t.sleep_ms)).await;
    Tally::update().steps(1)
}

fn database(url: &str, schema: &str) -> tokio_postgres::Config {
    let mut config: tokio_postgres::Config = url.parse().expect("the test URL parses");
    config.options(format!("-c search_path={schema}"));
    config
}

/// One server process of the tests below: serves the graph on its port until
/// it is killed or stopped (SIGTERM).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process of the tests of this file, which run it"]
async fn server_process() {
    let url = std::env::var(CHILD_URL).expect("run only by the many-processes test");
    let schema = std::env::var(CHILD_SCHEMA).expect("run only by the many-processes test");
    let port = std::env::var(CHILD_PORT).expect("run only by the many-processes test");
    let app = StateGraph::<Tally>::new()
        .add_node(first)
        .add_node(second)
        .add_edge(START, first)
        .add_edge(first, second)
        .compile()
        .expect("the graph compiles");
    let saver = graph_postgres::PostgresSaver::builder_from_config(database(&url, &schema))
        .connect()
        .await
        .expect("the server process connects");
    Server::new()
        .assistant("tally", app)
        .postgres_saver(saver)
        .run_lease(Duration::from_secs(2))
        .serve(&format!("127.0.0.1:{port}"))
        .await
        .expect("the server process serves");
}

/// The server processes, killed when the test ends however it ends.
struct Servers(Vec<Child>);

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let response = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get(http: &reqwest::Client, url: String) -> Value {
    let response = http.get(&url).send().await.expect("the server answers");
    assert!(
        response.status().is_success(),
        "GET {url}: {}",
        response.status()
    );
    response.json().await.expect("a JSON answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_one_database_and_survive_a_kill() {
    let (admin, servers, base, pids) = start_servers(PROCESSES).await;
    let mut servers = servers;
    let http = reqwest::Client::new();
    let started = Instant::now();

    // A busy thread refuses a `reject` run, whichever process is asked; a
    // cancel sent to a third process stops the run.
    let (status, _) = post(
        &http,
        format!("{}/threads", base[0]),
        json!({"thread_id": "busy"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, slow) = post(
        &http,
        format!("{}/threads/busy/runs", base[0]),
        json!({"assistant_id": "tally", "input": {"inputs": ["slow"], "sleep_ms": 60000}}),
    )
    .await;
    assert_eq!(status, 200, "{slow}");
    let slow_id = slow["run_id"].as_str().expect("a run id").to_owned();
    let (status, refused) = post(
        &http,
        format!("{}/threads/busy/runs", base[1]),
        json!({"assistant_id": "tally", "input": {"inputs": ["refused"]}, "multitask_strategy": "reject"}),
    )
    .await;
    assert_eq!(
        status, 409,
        "another process's run keeps the thread busy: {refused}"
    );
    while get(&http, format!("{}/threads/busy/runs/{slow_id}", base[2])).await["status"]
        != "running"
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancel = http
        .post(format!(
            "{}/threads/busy/runs/{slow_id}/cancel?wait=1",
            base[2]
        ))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(cancel.status().as_u16(), 202);
    let run = get(&http, format!("{}/threads/busy/runs/{slow_id}", base[1])).await;
    assert_eq!(run["status"], "interrupted", "{run}");

    // 300 runs on 100 threads, each thread's runs sent through all three
    // processes (enqueued behind each other).
    for t in 0..THREADS {
        let (status, _) = post(
            &http,
            format!("{}/threads", base[t % PROCESSES]),
            json!({"thread_id": format!("thread-{t}")}),
        )
        .await;
        assert_eq!(status, 200);
    }
    let mut sends = Vec::new();
    for k in 0..RUNS_PER_THREAD {
        for t in 0..THREADS {
            sends.push((t, k));
        }
    }
    let runs: Vec<(usize, usize, String)> = futures::stream::iter(sends)
        .map(|(t, k)| {
            let http = &http;
            let b = &base[(t + k) % PROCESSES];
            async move {
                let (status, run) = post(
                    http,
                    format!("{b}/threads/thread-{t}/runs"),
                    json!({
                        "assistant_id": "tally",
                        "input": {"inputs": [format!("t{t}-r{k}")], "sleep_ms": 40},
                        "multitask_strategy": "enqueue",
                    }),
                )
                .await;
                assert_eq!(status, 200, "{run}");
                (t, k, run["run_id"].as_str().expect("a run id").to_owned())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert_eq!(runs.len(), THREADS * RUNS_PER_THREAD);

    // Kill process 0 while it executes runs.
    let victim = pids[0];
    let held = format!("%:{victim}:%");
    loop {
        let row = admin
            .query_one(
                "SELECT count(*) FROM stategraph_runs WHERE status = 'running' AND worker LIKE $1",
                &[&held],
            )
            .await
            .expect("count the victim's runs");
        if row.get::<_, i64>(0) >= 3 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "process 0 never ran three runs at once"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    servers.0[0].kill().expect("SIGKILL process 0");
    servers.0[0].wait().expect("process 0 ends");
    let orphans: Vec<i64> = admin
        .query(
            "SELECT id FROM stategraph_runs WHERE status = 'running' AND worker LIKE $1",
            &[&held],
        )
        .await
        .expect("the killed process's runs")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        !orphans.is_empty(),
        "process 0 was killed while it held runs"
    );

    // Every run joins (through a surviving process, whichever executes it).
    let joined: Vec<(usize, Value)> = futures::stream::iter(runs.iter().cloned())
        .map(|(t, k, run_id)| {
            let http = &http;
            let b = &base[1 + (t + k) % (PROCESSES - 1)];
            async move {
                let values = get(http, format!("{b}/threads/thread-{t}/runs/{run_id}/join")).await;
                (t, values)
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for (t, values) in &joined {
        assert!(
            values["inputs"].as_array().is_some_and(|i| !i.is_empty()),
            "thread-{t}: a join answers the thread's values: {values}"
        );
    }

    // Every run finished once, with success.
    let statuses: BTreeMap<String, i64> = admin
        .query(
            "SELECT status, count(*) FROM server_runs WHERE thread_id <> 'busy' GROUP BY status",
            &[],
        )
        .await
        .expect("count the runs")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        statuses,
        BTreeMap::from([("success".to_owned(), (THREADS * RUNS_PER_THREAD) as i64)])
    );
    // The killed process's runs were taken over: a second attempt finished them.
    let retaken = admin
        .query(
            "SELECT id, status, attempts FROM stategraph_runs WHERE id = ANY($1)",
            &[&orphans],
        )
        .await
        .expect("the orphans' queue entries");
    assert_eq!(retaken.len(), orphans.len());
    for row in retaken {
        let (id, status, attempts): (i64, String, i32) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(status, "done", "queue entry {id}");
        assert!(
            attempts >= 2,
            "queue entry {id} was finished by another process"
        );
    }

    // The stream of a run taken over joins from any process: ids consecutive
    // across both attempts, its last values holding its input once. (A run
    // whose first attempt had recorded its end before the kill has one
    // attempt's events; the others show the second attempt's `metadata`.)
    let mut second_attempts = 0;
    for orphan in &orphans {
        let row = admin
            .query_one(
                "SELECT thread_id, run_id FROM server_runs WHERE queue_id = $1",
                &[orphan],
            )
            .await
            .expect("the orphan's run");
        let (thread_id, run_id): (String, String) = (row.get(0), row.get(1));
        let text = http
            .get(format!(
                "{}/threads/{thread_id}/runs/{run_id}/stream",
                base[2]
            ))
            .send()
            .await
            .expect("the server answers")
            .text()
            .await
            .expect("the stream ends with the run");
        let events = sse_events(&text);
        let ids: Vec<usize> = events.iter().map(|(id, _, _)| *id).collect();
        assert_eq!(ids, (1..=ids.len()).collect::<Vec<_>>(), "{text}");
        assert_eq!(events[0].1, "metadata", "{text}");
        if events
            .iter()
            .any(|(_, e, d)| e == "metadata" && d["attempt"] == json!(2))
        {
            second_attempts += 1;
        }
        let tag = runs
            .iter()
            .find(|(_, _, r)| *r == run_id)
            .map(|(t, k, _)| json!(format!("t{t}-r{k}")))
            .expect("a run of the test");
        let last = events
            .iter()
            .rev()
            .find(|(_, e, _)| e == "values")
            .expect("values events");
        let inputs = last.2["inputs"].as_array().expect("inputs");
        assert_eq!(inputs.iter().filter(|i| **i == tag).count(), 1, "{text}");
    }
    assert!(
        second_attempts > 0,
        "a second attempt's events follow the first's in the joined stream"
    );

    // Each thread's state holds each run's input once and each run's steps once.
    for t in 0..THREADS {
        let state = get(
            &http,
            format!("{}/threads/thread-{t}/state", base[1 + t % 2]),
        )
        .await;
        let mut inputs: Vec<String> = serde_json::from_value(state["values"]["inputs"].clone())
            .expect("the inputs are strings");
        inputs.sort();
        let expected: Vec<String> = (0..RUNS_PER_THREAD).map(|k| format!("t{t}-r{k}")).collect();
        assert_eq!(inputs, expected, "thread-{t}: every input once");
        assert_eq!(
            state["values"]["steps"],
            json!(2 * RUNS_PER_THREAD),
            "thread-{t}: every run's two steps once"
        );
        let listed = get(
            &http,
            format!("{}/threads/thread-{t}/runs", base[2 - t % 2]),
        )
        .await;
        let listed = listed.as_array().expect("a list of runs");
        assert_eq!(listed.len(), RUNS_PER_THREAD);
        assert!(
            listed.iter().all(|r| r["status"] == "success"),
            "{listed:?}"
        );
    }
}

/// Starts `n` server processes on a new schema of the test database; returns
/// a client on that schema, the processes, their base URLs and their pids.
async fn start_servers(n: usize) -> (tokio_postgres::Client, Servers, Vec<String>, Vec<u32>) {
    let url = match std::env::var("STATEGRAPH_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => pg_server::url(),
    };
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("the test server is up");
    tokio::spawn(conn);
    let schema = format!("t_server_{:08x}", fastrand::u32(..));
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET search_path = {schema}"
        ))
        .await
        .expect("create the schema");
    let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let exe = std::env::current_exe().expect("the test binary");
    let servers = Servers(
        ports
            .iter()
            .map(|port| {
                Process::new(&exe)
                    .args(["server_process", "--exact", "--ignored", "--nocapture"])
                    .env(CHILD_URL, &url)
                    .env(CHILD_SCHEMA, &schema)
                    .env(CHILD_PORT, port.to_string())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawn a server process")
            })
            .collect(),
    );
    let pids = servers.0.iter().map(Child::id).collect();
    let base: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    let http = reqwest::Client::new();
    let started = Instant::now();
    for b in &base {
        while http.get(format!("{b}/ok")).send().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "a server process did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    (admin, servers, base, pids)
}

/// A server process stopped with SIGTERM hands its runs back to the queue
/// before it exits (rather than finishing them, or leaving them leased to it
/// until the lease runs out), and the other process resumes them, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_process_hands_its_runs_back_before_it_exits() {
    let (admin, mut servers, base, pids) = start_servers(2).await;
    let http = reqwest::Client::new();
    let threads = 8;
    let mut runs = Vec::new();
    for t in 0..threads {
        let (status, _) = post(
            &http,
            format!("{}/threads", base[0]),
            json!({"thread_id": format!("s{t}")}),
        )
        .await;
        assert_eq!(status, 200);
        // Two nodes of 2 s: a run is still going when its process is stopped.
        let (status, run) = post(
            &http,
            format!("{}/threads/s{t}/runs", base[0]),
            json!({"assistant_id": "tally", "input": {"inputs": [format!("s{t}")], "sleep_ms": 2000}}),
        )
        .await;
        assert_eq!(status, 200, "{run}");
        runs.push((t, run["run_id"].as_str().expect("a run id").to_owned()));
    }
    let held = format!("%:{}:%", pids[0]);
    let started = Instant::now();
    let taken: Vec<i64> = loop {
        let ids: Vec<i64> = admin
            .query(
                "SELECT id FROM stategraph_runs WHERE status = 'running' AND worker LIKE $1",
                &[&held],
            )
            .await
            .expect("process 0's runs")
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !ids.is_empty() {
            break ids;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "process 0 never ran a run"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let term = Process::new("kill")
        .args(["-TERM", &pids[0].to_string()])
        .status()
        .expect("send SIGTERM");
    assert!(term.success());
    let exit = servers.0[0].wait().expect("process 0 ends");
    assert!(exit.success(), "process 0 stopped cleanly: {exit}");
    for row in admin
        .query(
            "SELECT id, status, worker, attempts FROM stategraph_runs WHERE id = ANY($1)",
            &[&taken],
        )
        .await
        .expect("the runs process 0 held")
    {
        let (id, status, worker, attempts): (i64, String, Option<String>, i32) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let victim = format!(":{}:", pids[0]);
        assert!(
            status == "queued" || worker.as_deref().is_some_and(|w| !w.contains(&victim)),
            "run {id} was handed back, not finished or left leased by process 0 \
             ({status}, {worker:?})"
        );
        assert!(
            attempts <= 1,
            "run {id}: a stop does not count as an attempt ({attempts})"
        );
    }
    for (t, run_id) in &runs {
        let values = get(
            &http,
            format!("{}/threads/s{t}/runs/{run_id}/join", base[1]),
        )
        .await;
        assert_eq!(values["inputs"], json!([format!("s{t}")]), "{values}");
        assert_eq!(values["steps"], json!(2), "{values}");
    }
    let statuses: Vec<String> = admin
        .query("SELECT status FROM server_runs", &[])
        .await
        .expect("the runs")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(statuses, vec!["success"; threads]);
}

/// The events of an SSE body: (id, event, data).
fn sse_events(text: &str) -> Vec<(usize, String, Value)> {
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let (mut id, mut event, mut data) = (None, None, None);
        for line in block.lines() {
            if let Some(v) = line
                .strip_prefix("id: ")
                .or_else(|| line.strip_prefix("id:"))
            {
                id = v.trim().parse::<usize>().ok();
            } else if let Some(v) = line
                .strip_prefix("event: ")
                .or_else(|| line.strip_prefix("event:"))
            {
                event = Some(v.trim().to_owned());
            } else if let Some(v) = line
                .strip_prefix("data: ")
                .or_else(|| line.strip_prefix("data:"))
            {
                data = serde_json::from_str(v.trim()).ok();
            }
        }
        if let (Some(id), Some(event)) = (id, event) {
            events.push((id, event, data.unwrap_or(Value::Null)));
        }
    }
    events
}
