//! Crash safety: a process running a graph on SQLite is killed with SIGKILL in the
//! middle of a run; a new process resumes the thread from the last checkpoint, and
//! the final state equals an uninterrupted run's (no completed step lost or
//! repeated).

use stategraph::prelude::*;
use stategraph::sqlite::SqliteSaver;
use stategraph::Durability;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

/// Set in the child process: the database it runs the graph on.
const CHILD_DB: &str = "STATEGRAPH_CRASH_TEST_DB";
const STEPS: u32 = 200;

fn concat(mut a: Vec<u32>, b: Vec<u32>) -> Vec<u32> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Progress {
    #[reducer(concat)]
    done: Vec<u32>,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Next {
    Work,
    #[goto(end)]
    Finished,
}

/// One unit of slow work per superstep.
#[node]
async fn work(p: &Progress) -> Command<Next> {
    tokio::time::sleep(Duration::from_millis(10)).await;
    let step = p.done.len() as u32;
    let next = if step + 1 == STEPS {
        Next::Finished
    } else {
        Next::Work
    };
    Command::goto(next).update(Progress::update().done(vec![step]))
}

async fn app(db: &std::path::Path) -> CompiledGraph<Progress> {
    let saver = SqliteSaver::open(db).await.unwrap();
    StateGraph::<Progress>::new()
        .add_node(work)
        .add_edge(START, work)
        .compile_with(saver)
        .unwrap()
}

fn thread() -> RunConfig {
    RunConfig::thread("crash").durability(Durability::Sync)
}

/// Kills and reaps the child if the test fails before it does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The child process: runs the graph until it is killed.
#[tokio::test]
#[ignore = "the child process of `a_killed_run_resumes_without_losing_a_step`, which runs it"]
async fn crash_child() {
    let db = std::env::var(CHILD_DB).expect("run only by the crash test");
    let app = app(std::path::Path::new(&db)).await;
    app.invoke(Progress::update(), &thread()).await.unwrap();
}

#[tokio::test]
async fn a_killed_run_resumes_without_losing_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut child = KillOnDrop(
        Process::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_DB, &db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    // Wait until the child has checkpointed a few steps, then kill it (SIGKILL).
    let started = Instant::now();
    let killed_at = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the child made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        if !db.exists() {
            continue;
        }
        let done = match app(&db).await.get_state(&thread()).await {
            Ok(state) => state.values.done.len(),
            Err(_) => continue, // the child may still be creating the schema
        };
        if done >= 5 {
            child.0.kill().unwrap();
            child.0.wait().unwrap();
            break done;
        }
    };

    let app = app(&db).await;
    let at_kill = app.get_state(&thread()).await.unwrap();
    let completed = at_kill.values.done.len();
    assert!(
        completed >= killed_at,
        "a checkpoint was lost: {completed} < {killed_at}"
    );
    assert!(
        (completed as u32) < STEPS,
        "the child finished before it was killed; the test proved nothing"
    );
    assert_eq!(at_kill.next, ["work"], "the thread stopped mid-run");

    let resumed = app.invoke(None, &thread()).await.unwrap();
    let expected: Vec<u32> = (0..STEPS).collect();
    assert_eq!(resumed.done, expected, "every step exactly once, in order");
}

/// The child of the random-kill loop: continues the thread (or starts it).
#[tokio::test]
#[ignore = "the child process of `killed_at_random_points_again_and_again_every_step_runs_once`"]
async fn crash_child_resuming() {
    let db = std::env::var(CHILD_DB).expect("run only by the crash test");
    continue_or_start(&app(std::path::Path::new(&db)).await).await;
}

/// Continues the thread, or starts it if it has no checkpoint yet.
async fn continue_or_start(app: &CompiledGraph<Progress>) -> Progress {
    let started = app
        .get_state(&thread())
        .await
        .is_ok_and(|s| s.metadata.is_some());
    let input = if started {
        None
    } else {
        Some(Progress::update())
    };
    app.invoke(input, &thread()).await.unwrap().into_state()
}

/// A tiny xorshift: the kill delays are random, and the seed is printed so a
/// failure can be replayed.
fn delays(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            20 + x % 300
        })
        .collect()
}

#[tokio::test]
async fn killed_at_random_points_again_and_again_every_step_runs_once() {
    let seed = std::env::var("STATEGRAPH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut kills = 0;
    for delay in delays(seed, 6) {
        let mut child = KillOnDrop(
            Process::new(std::env::current_exe().unwrap())
                .args([
                    "crash_child_resuming",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                ])
                .env(CHILD_DB, &db)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Anywhere: opening the database, inside a task, while storing a checkpoint.
        tokio::time::sleep(Duration::from_millis(delay)).await;
        if child.0.try_wait().unwrap().is_none() {
            child.0.kill().unwrap();
            kills += 1;
        }
        child.0.wait().unwrap();
    }
    assert!(
        kills > 0,
        "seed {seed}: no child was killed; the test proved nothing"
    );

    // Whatever the kills interrupted, the thread continues to the same end.
    let out = continue_or_start(&app(&db).await).await;
    let expected: Vec<u32> = (0..STEPS).collect();
    assert_eq!(
        out.done, expected,
        "seed {seed}: every step exactly once, in order"
    );
}
