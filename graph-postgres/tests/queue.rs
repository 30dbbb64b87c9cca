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

#[tokio::test]
async fn a_renewed_lease_is_kept_and_a_lost_one_is_not_renewed() {
    let (saver, _) = common::saver("queue_renew").await;
    let queue = RunQueue::open(&saver, "q").await.expect("open");
    let id = queue.submit("t", &"in").await.expect("submit");
    let short = Duration::from_millis(200);
    let run = queue
        .claim("w1", short)
        .await
        .expect("claim")
        .expect("a run");
    // Renewed past three leases: never claimable by another worker.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(queue.renew(&run, short).await.expect("renew"));
        assert!(
            queue.claim("w2", LONG).await.expect("claim").is_none(),
            "a renewed lease holds the run"
        );
    }
    // Not renewed: it expires, another worker takes it, the first cannot renew.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let taken = queue
        .claim("w2", LONG)
        .await
        .expect("claim")
        .expect("re-claimed");
    assert_eq!((taken.id, taken.attempt), (id, 2));
    assert!(
        !queue.renew(&run, short).await.expect("renew"),
        "the first worker lost the run"
    );
}

#[tokio::test]
async fn a_released_run_is_claimable_at_once_without_using_an_attempt() {
    let (saver, _) = common::saver("queue_release").await;
    let queue = RunQueue::open(&saver, "q")
        .await
        .expect("open")
        .max_attempts(1);
    let id = queue.submit("t", &"in").await.expect("submit");
    let run = queue
        .claim("w1", LONG)
        .await
        .expect("claim")
        .expect("a run");
    assert!(queue.release(&run).await.expect("release"));
    assert_eq!(
        queue.status(id).await.expect("status"),
        Some(RunStatus::Queued)
    );
    let again = queue
        .claim("w2", LONG)
        .await
        .expect("claim")
        .expect("claimable at once, though its one attempt was taken");
    assert_eq!((again.id, again.attempt), (id, 1));
    assert!(
        !queue.release(&run).await.expect("release"),
        "w1 no longer holds it"
    );
}

#[tokio::test]
async fn claim_run_takes_that_run_only_when_it_is_claimable() {
    let (saver, _) = common::saver("queue_claim_run").await;
    let queue = RunQueue::open(&saver, "q").await.expect("open");
    let a1 = queue.submit("a", &1).await.expect("submit");
    let a2 = queue.submit("a", &2).await.expect("submit");
    assert!(
        queue
            .claim_run(a2, "w", LONG)
            .await
            .expect("claim")
            .is_none(),
        "a2 waits for a1, an open run of its thread"
    );
    let first = queue
        .claim_run(a1, "w", LONG)
        .await
        .expect("claim")
        .expect("a1 is free");
    assert_eq!(
        (first.id, first.input.clone(), first.attempt),
        (a1, serde_json::json!(1), 1)
    );
    assert!(
        queue
            .claim_run(a1, "w2", LONG)
            .await
            .expect("claim")
            .is_none(),
        "held by w"
    );
    assert!(queue.complete(&first).await.expect("complete"));
    let second = queue
        .claim_run(a2, "w2", LONG)
        .await
        .expect("claim")
        .expect("a2 is free now");
    assert_eq!(second.id, a2);
    assert!(queue.complete(&second).await.expect("complete"));
    assert!(
        queue
            .claim_run(a2, "w", LONG)
            .await
            .expect("claim")
            .is_none(),
        "a done run is not claimed again"
    );
}

#[tokio::test]
async fn submit_with_queues_only_when_the_transaction_commits() {
    let (saver, schema) = common::saver("queue_submit_with").await;
    let queue = RunQueue::open(&saver, "q").await.expect("open");
    let mut client = common::client(&schema).await;
    let tx = client.transaction().await.expect("begin");
    queue
        .submit_with(&tx, "t", &"rolled back")
        .await
        .expect("submit");
    tx.rollback().await.expect("rollback");
    assert_eq!(queue.open_runs().await.expect("count"), 0);
    let tx = client.transaction().await.expect("begin");
    let id = queue.submit_with(&tx, "t", &"kept").await.expect("submit");
    tx.commit().await.expect("commit");
    let run = queue.claim("w", LONG).await.expect("claim").expect("a run");
    assert_eq!((run.id, run.input), (id, serde_json::json!("kept")));
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
