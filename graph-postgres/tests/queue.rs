//! RunQueue: claims are exclusive and per-thread ordered, leases expire into
//! retries, attempts are bounded, and examples/workers.rs (a submitter and 4
//! worker processes, one of which crashes mid-queue) ends with every run applied
//! exactly once.

mod common;

use graph_postgres::{RunQueue, RunStatus};
use std::collections::BTreeSet;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn runs_of_a_thread_are_handed_out_one_at_a_time_in_order() {
    let (saver, _) = common::saver("queue_order").await;
    let queue = RunQueue::open(&saver, "q").await.expect("open");
    let a1 = queue.submit("a", &1).await.expect("submit");
    let a2 = queue.submit("a", &2).await.expect("submit");
    let b1 = queue.submit("b", &"x").await.expect("submit");
    let first = queue
        .claim("w1", LONG)
        .await
        .expect("claim")
        .expect("a run");
    assert_eq!(
        (first.id, first.thread_id.as_str(), first.attempt),
        (a1, "a", 1)
    );
    assert_eq!(first.input, serde_json::json!(1));
    let second = queue
        .claim("w2", LONG)
        .await
        .expect("claim")
        .expect("a run");
    assert_eq!(second.id, b1, "a2 waits for a1 (same thread); b1 is free");
    assert!(queue.claim("w3", LONG).await.expect("claim").is_none());
    assert!(queue.complete(&first).await.expect("complete"));
    let third = queue
        .claim("w3", LONG)
        .await
        .expect("claim")
        .expect("a run");
    assert_eq!(third.id, a2);
    assert_eq!(
        queue.status(a1).await.expect("status"),
        Some(RunStatus::Done)
    );
    assert_eq!(
        queue.status(a2).await.expect("status"),
        Some(RunStatus::Running)
    );
    assert_eq!(queue.open_runs().await.expect("count"), 2);
    let other = RunQueue::open(&saver, "other").await.expect("open");
    assert!(
        other.claim("w", LONG).await.expect("claim").is_none(),
        "queues are separate"
    );
}

#[tokio::test]
async fn concurrent_claimers_never_take_the_same_run() {
    let (saver, _) = common::saver("queue_skip").await;
    let queue = RunQueue::open(&saver, "q").await.expect("open");
    let mut submitted = BTreeSet::new();
    for n in 0..100 {
        submitted.insert(queue.submit(&format!("t{n}"), &n).await.expect("submit"));
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let queue = queue.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(run) = queue.claim(&format!("w{w}"), LONG).await.expect("claim") {
                assert!(queue.complete(&run).await.expect("complete"));
                got.push(run.id);
            }
            got
        }));
    }
    let mut claimed = Vec::new();
    for t in tasks {
        claimed.extend(t.await.expect("join"));
    }
    let unique: BTreeSet<i64> = claimed.iter().copied().collect();
    assert_eq!(claimed.len(), unique.len(), "a run was claimed twice");
    assert_eq!(unique, submitted, "every run was claimed");
}

#[tokio::test]
async fn an_expired_lease_is_claimed_again_and_attempts_are_bounded() {
    let (saver, _) = common::saver("queue_lease").await;
    let queue = RunQueue::open(&saver, "q")
        .await
        .expect("open")
        .max_attempts(2);
    let id = queue.submit("t", &"in").await.expect("submit");
    let lost = queue
        .claim("vanished", Duration::from_millis(100))
        .await
        .expect("claim")
        .expect("a run");
    assert!(
        queue.claim("w", LONG).await.expect("claim").is_none(),
        "leased"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = queue
        .claim("w", LONG)
        .await
        .expect("claim")
        .expect("re-claimed");
    assert_eq!((again.id, again.attempt), (id, 2));
    assert!(
        !queue.complete(&lost).await.expect("complete"),
        "the vanished worker no longer holds the run"
    );
    assert!(queue.fail(&again, "boom").await.expect("fail"));
    assert_eq!(
        queue.status(id).await.expect("status"),
        Some(RunStatus::Failed),
        "2 attempts of 2: failed, not queued again"
    );
    assert!(queue.claim("w", LONG).await.expect("claim").is_none());

    let retried = queue.submit("u", &0).await.expect("submit");
    let run = queue.claim("w", LONG).await.expect("claim").expect("a run");
    assert!(queue.fail(&run, "transient").await.expect("fail"));
    assert_eq!(
        queue.status(retried).await.expect("status"),
        Some(RunStatus::Queued)
    );
}

#[test]
fn the_workers_example_runs_every_order_exactly_once() {
    let exe = std::env::current_exe().expect("the test binary");
    // target/<profile>/deps/queue-<hash> -> target/<profile>/examples/workers
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("workers"))
        .expect("the target directory");
    assert!(
        example.exists(),
        "{} is missing: `cargo test` builds the examples; run `cargo build -p stategraph-postgres --examples`",
        example.display()
    );
    let out = std::process::Command::new(&example)
        .env("STATEGRAPH_PG_URL", common::url())
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "examples/workers failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("exactly once"), "{stdout}");
}
