//! [`RunQueue`]: runs submitted by one process and executed by any worker.

use crate::{with_retry, PgError, PostgresSaver};
use deadpool_postgres::Pool;
use graph_core::checkpoint::{CheckpointConfig, CheckpointError, Checkpointer, ListOptions};
use graph_core::RunConfig;
use serde::Serialize;
use std::time::Duration;

/// The checkpoint metadata key under which a queued run's id is recorded (through
/// [`QueuedRun::run_config`]): how a worker that picks up a run again knows whether
/// its input was already applied.
pub const RUN_ID_METADATA_KEY: &str = "stategraph_run_id";

/// Our own table, outside LangGraph's migration numbering (see `schema.rs`), so it
/// is created with `IF NOT EXISTS` under an advisory lock instead.
const CREATE: &str = "
CREATE TABLE IF NOT EXISTS stategraph_runs (
    id BIGSERIAL PRIMARY KEY,
    queue TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    input TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    worker TEXT,
    lease_until TIMESTAMPTZ,
    error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS stategraph_runs_open
    ON stategraph_runs (queue, id) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS stategraph_runs_thread
    ON stategraph_runs (thread_id, id) WHERE status IN ('queued', 'running');
";

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunStatus {
    /// Waiting for a worker.
    Queued,
    /// Claimed by a worker whose lease has not expired (or whose lease expired and
    /// no other worker has claimed it yet).
    Running,
    /// Completed.
    Done,
    /// Failed on its last attempt.
    Failed,
}

/// A run claimed by this worker: execute it, then [`RunQueue::complete`] or
/// [`RunQueue::fail`] it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedRun {
    /// The run's id.
    pub id: i64,
    /// The thread it runs on.
    pub thread_id: String,
    /// The input given to [`RunQueue::submit`].
    pub input: serde_json::Value,
    /// 1 for the first attempt; more when an earlier worker failed or vanished.
    pub attempt: i32,
    worker: String,
}

impl QueuedRun {
    /// The config to run it with: its thread, with the run's id in the metadata of
    /// every checkpoint the run writes.
    pub fn run_config(&self) -> RunConfig {
        RunConfig::thread(&self.thread_id).with_metadata(RUN_ID_METADATA_KEY, self.id)
    }

    /// Whether an earlier attempt already wrote a checkpoint of this run: then its
    /// input was applied, and the run must be *resumed* (invoked without input; a
    /// run that had finished stays finished), not started again. This is what
    /// makes at-least-once delivery safe.
    pub async fn started(&self, saver: &dyn Checkpointer) -> Result<bool, CheckpointError> {
        let mut filter = serde_json::Map::new();
        filter.insert(RUN_ID_METADATA_KEY.to_owned(), self.id.into());
        let found = saver
            .list(
                Some(&CheckpointConfig::thread(&self.thread_id)),
                &ListOptions {
                    filter,
                    limit: Some(1),
                    ..ListOptions::default()
                },
            )
            .await?;
        Ok(!found.is_empty())
    }
}

/// A queue of graph runs in PostgreSQL: any process [`submit`](Self::submit)s,
/// any worker [`claim`](Self::claim)s (`SELECT ... FOR UPDATE SKIP LOCKED`, so
/// workers never wait on each other or take the same run).
///
/// Delivery is at least once: a claim is a lease, and a run whose worker did not
/// complete it before the lease ran out (it crashed, or lost its connection) is
/// claimed again, up to `max_attempts`. That is safe because the runs of a thread
/// are handed out one at a time, in submission order (a run is not claimable
/// while an earlier run of its thread is open), and because a run's checkpoints
/// carry its id ([`QueuedRun::run_config`]): a worker that picks a run up again
/// sees that it [`started`](QueuedRun::started) and resumes it from its last
/// checkpoint, where completed tasks keep their writes, instead of applying its
/// input twice. For the rare case of a lease expiring while its worker still runs,
/// hold [`PostgresSaver::lock_thread`] while executing.
///
/// The table is `stategraph_runs`, created on first use; it is not part of
/// LangGraph's schema.
#[derive(Clone)]
pub struct RunQueue {
    pool: Pool,
    name: String,
    max_attempts: i32,
}

impl std::fmt::Debug for RunQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunQueue")
            .field("name", &self.name)
            .field("max_attempts", &self.max_attempts)
            .finish_non_exhaustive()
    }
}

impl RunQueue {
    /// The queue `name` in the saver's database (created if needed). Runs are
    /// attempted at most 3 times; see [`max_attempts`](Self::max_attempts).
    pub async fn open(saver: &PostgresSaver, name: &str) -> Result<Self, PgError> {
        let pool = saver.pool().clone();
        with_retry(|| async {
            let mut client = pool.get().await?;
            let tx = client
                .transaction()
                .await
                .map_err(PgError::query("cannot create the run queue"))?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, 1)",
                &[&crate::schema::LOCK_CLASS_MIGRATION],
            )
            .await
            .map_err(PgError::query("cannot create the run queue"))?;
            tx.batch_execute(CREATE)
                .await
                .map_err(PgError::query("cannot create the run queue"))?;
            tx.commit()
                .await
                .map_err(PgError::query("cannot create the run queue"))
        })
        .await?;
        Ok(RunQueue {
            pool,
            name: name.to_owned(),
            max_attempts: 3,
        })
    }

    /// Runs submitted from now on are attempted at most `n` times (at least 1).
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = i32::try_from(n.max(1)).unwrap_or(i32::MAX);
        self
    }

    /// Queues a run of `thread_id` with `input`; returns its id.
    pub async fn submit(&self, thread_id: &str, input: &impl Serialize) -> Result<i64, PgError> {
        // Not retried: a lost connection after the insert committed would queue
        // the run twice.
        let client = self.pool.get().await?;
        let client: &tokio_postgres::Client = &client;
        self.submit_with(client, thread_id, input).await
    }

    /// Queues a run as [`submit`](Self::submit) does, on `client`: inside a
    /// transaction of yours (a `tokio_postgres::Transaction` or a pooled one), the
    /// run is queued if and only if the transaction commits, with the rows you
    /// write beside it.
    pub async fn submit_with(
        &self,
        client: &impl tokio_postgres::GenericClient,
        thread_id: &str,
        input: &impl Serialize,
    ) -> Result<i64, PgError> {
        crate::error::check_id("thread id", thread_id)?;
        let context = || format!("submit to run queue `{}`", self.name);
        let input = serde_json::to_string(input).map_err(|source| PgError::Serialize {
            context: context(),
            what: "the input",
            source,
        })?;
        let row = client
            .query_one(
                "INSERT INTO stategraph_runs (queue, thread_id, input, max_attempts)
                 VALUES ($1, $2, $3, $4) RETURNING id",
                &[&self.name, &thread_id, &input, &self.max_attempts],
            )
            .await
            .map_err(PgError::query(context()))?;
        row.try_get(0).map_err(PgError::query(context()))
    }

    /// Takes the oldest claimable run for `worker` (a name for diagnostics) with a
    /// lease of `lease`; `None` if there is none now. Claimable: queued, or
    /// running with an expired lease, with attempts left, and no earlier open run
    /// of the same thread.
    pub async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<QueuedRun>, PgError> {
        let context = || format!("claim from run queue `{}`", self.name);
        let lease_secs = lease.as_secs_f64();
        // Not retried either: a claim whose answer was lost stays leased to no one
        // until the lease runs out, then is claimed again.
        let client = self.pool.get().await?;
        // A run whose worker vanished on its last attempt fails now, so that it
        // does not hold up later runs of its thread forever.
        let expire = client
            .prepare_cached(
                "UPDATE stategraph_runs
                 SET status = 'failed', lease_until = NULL, updated_at = now(),
                     error = COALESCE(error, 'the worker of the last attempt did not finish in time')
                 WHERE queue = $1 AND status = 'running' AND lease_until < now()
                     AND attempts >= max_attempts",
            )
            .await
            .map_err(PgError::query(context()))?;
        client
            .execute(&expire, &[&self.name])
            .await
            .map_err(PgError::query(context()))?;
        let stmt = client
            .prepare_cached(
                "UPDATE stategraph_runs r
                 SET status = 'running', attempts = r.attempts + 1, worker = $2,
                     lease_until = now() + make_interval(secs => $3), updated_at = now()
                 WHERE r.id = (
                     SELECT c.id FROM stategraph_runs c
                     WHERE c.queue = $1 AND c.attempts < c.max_attempts
                         AND (c.status = 'queued'
                              OR (c.status = 'running' AND c.lease_until < now()))
                         AND NOT EXISTS (
                             SELECT 1 FROM stategraph_runs e
                             WHERE e.thread_id = c.thread_id AND e.id < c.id
                                 AND e.status IN ('queued', 'running'))
                     ORDER BY c.id
                     LIMIT 1
                     FOR UPDATE SKIP LOCKED
                 )
                 RETURNING r.id, r.thread_id, r.input, r.attempts",
            )
            .await
            .map_err(PgError::query(context()))?;
        let Some(row) = client
            .query_opt(&stmt, &[&self.name, &worker, &lease_secs])
            .await
            .map_err(PgError::query(context()))?
        else {
            return Ok(None);
        };
        queued_run(&row, worker, context).map(Some)
    }

    /// Takes run `id` for `worker` if it is claimable now (as [`claim`](Self::claim)
    /// defines it); `None` if it is not (another worker holds it, an earlier run of
    /// its thread is open, or it is over). A process that queued a run and has a
    /// client waiting for its events takes it this way, to run it where the client is.
    pub async fn claim_run(
        &self,
        id: i64,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<QueuedRun>, PgError> {
        let context = || format!("claim run {id} from run queue `{}`", self.name);
        let client = self.pool.get().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE stategraph_runs r
                 SET status = 'running', attempts = r.attempts + 1, worker = $3,
                     lease_until = now() + make_interval(secs => $4), updated_at = now()
                 WHERE r.id = (
                     SELECT c.id FROM stategraph_runs c
                     WHERE c.id = $2 AND c.queue = $1 AND c.attempts < c.max_attempts
                         AND (c.status = 'queued'
                              OR (c.status = 'running' AND c.lease_until < now()))
                         AND NOT EXISTS (
                             SELECT 1 FROM stategraph_runs e
                             WHERE e.thread_id = c.thread_id AND e.id < c.id
                                 AND e.status IN ('queued', 'running'))
                     FOR UPDATE SKIP LOCKED
                 )
                 RETURNING r.id, r.thread_id, r.input, r.attempts",
            )
            .await
            .map_err(PgError::query(context()))?;
        let row = client
            .query_opt(&stmt, &[&self.name, &id, &worker, &lease.as_secs_f64()])
            .await
            .map_err(PgError::query(context()))?;
        row.map(|row| queued_run(&row, worker, context)).transpose()
    }

    /// Extends this worker's lease on `run` to `lease` from now: a worker calls it
    /// (a heartbeat) more often than the lease lasts while it executes the run.
    /// `false` if this worker no longer holds the run (its lease ran out and
    /// another worker claimed it): then it should stop executing it.
    pub async fn renew(&self, run: &QueuedRun, lease: Duration) -> Result<bool, PgError> {
        let context = || {
            format!(
                "renewing the lease of run {} of queue `{}`",
                run.id, self.name
            )
        };
        with_retry(|| async {
            let client = self.pool.get().await?;
            let updated = client
                .execute(
                    "UPDATE stategraph_runs
                     SET lease_until = now() + make_interval(secs => $4), updated_at = now()
                     WHERE id = $1 AND worker = $2 AND attempts = $3 AND status = 'running'",
                    &[&run.id, &run.worker, &run.attempt, &lease.as_secs_f64()],
                )
                .await
                .map_err(PgError::query(context()))?;
            Ok(updated == 1)
        })
        .await
    }

    /// Marks `run` done. `false` if this worker no longer held it (its lease ran
    /// out and another worker claimed it).
    pub async fn complete(&self, run: &QueuedRun) -> Result<bool, PgError> {
        self.finish(run, "done", None).await
    }

    /// Records that `run` failed with `error`: it is queued again if it has
    /// attempts left, else marked failed. `false` if this worker no longer held it.
    pub async fn fail(&self, run: &QueuedRun, error: &str) -> Result<bool, PgError> {
        self.finish(run, "failed", Some(error)).await
    }

    /// Gives `run` back to the queue without counting the attempt (the worker
    /// is stopping, not failing): it is claimable again at once. `false` if
    /// this worker no longer held it.
    pub async fn release(&self, run: &QueuedRun) -> Result<bool, PgError> {
        let context = || format!("releasing run {} of queue `{}`", run.id, self.name);
        with_retry(|| async {
            let client = self.pool.get().await?;
            let updated = client
                .execute(
                    "UPDATE stategraph_runs
                     SET status = 'queued', attempts = attempts - 1, worker = NULL,
                         lease_until = NULL, updated_at = now()
                     WHERE id = $1 AND worker = $2 AND attempts = $3 AND status = 'running'",
                    &[&run.id, &run.worker, &run.attempt],
                )
                .await
                .map_err(PgError::query(context()))?;
            Ok(updated == 1)
        })
        .await
    }

    async fn finish(
        &self,
        run: &QueuedRun,
        status: &str,
        error: Option<&str>,
    ) -> Result<bool, PgError> {
        let context = || format!("finishing run {} of queue `{}`", run.id, self.name);
        with_retry(|| async {
            let client = self.pool.get().await?;
            let updated = client
                .execute(
                    "UPDATE stategraph_runs
                     SET status = CASE WHEN $2 = 'failed' AND attempts < max_attempts
                                       THEN 'queued' ELSE $2 END,
                         error = $3, lease_until = NULL, updated_at = now()
                     WHERE id = $1 AND worker = $4 AND attempts = $5 AND status = 'running'",
                    &[&run.id, &status, &error, &run.worker, &run.attempt],
                )
                .await
                .map_err(PgError::query(context()))?;
            Ok(updated == 1)
        })
        .await
    }

    /// Where run `id` stands; `None` if there is no such run.
    pub async fn status(&self, id: i64) -> Result<Option<RunStatus>, PgError> {
        let context = || format!("status of run {id}");
        with_retry(|| async {
            let client = self.pool.get().await?;
            let row = client
                .query_opt("SELECT status FROM stategraph_runs WHERE id = $1", &[&id])
                .await
                .map_err(PgError::query(context()))?;
            let Some(row) = row else { return Ok(None) };
            let status: String = row.try_get(0).map_err(PgError::query(context()))?;
            Ok(Some(match status.as_str() {
                "queued" => RunStatus::Queued,
                "running" => RunStatus::Running,
                "done" => RunStatus::Done,
                "failed" => RunStatus::Failed,
                other => {
                    return Err(PgError::InvalidInput(format!(
                        "run {id} has an unknown status `{other}`"
                    )))
                }
            }))
        })
        .await
    }

    /// How many runs of this queue are queued or running.
    pub async fn open_runs(&self) -> Result<i64, PgError> {
        with_retry(|| async {
            let client = self.pool.get().await?;
            let row = client
                .query_one(
                    "SELECT count(*) FROM stategraph_runs
                     WHERE queue = $1 AND status IN ('queued', 'running')",
                    &[&self.name],
                )
                .await
                .map_err(PgError::query("counting open runs"))?;
            row.try_get(0).map_err(PgError::query("counting open runs"))
        })
        .await
    }
}

/// The claimed run of a `RETURNING id, thread_id, input, attempts` row.
fn queued_run(
    row: &tokio_postgres::Row,
    worker: &str,
    context: impl Fn() -> String,
) -> Result<QueuedRun, PgError> {
    let id: i64 = row.try_get(0).map_err(PgError::query(context()))?;
    let thread_id: String = row.try_get(1).map_err(PgError::query(context()))?;
    let input: String = row.try_get(2).map_err(PgError::query(context()))?;
    let attempt: i32 = row.try_get(3).map_err(PgError::query(context()))?;
    let input = serde_json::from_str(&input).map_err(|e| PgError::Corrupt {
        thread_id: thread_id.clone(),
        checkpoint_id: format!("(queued run {id})"),
        what: "the run's input".to_owned(),
        source: Box::new(e),
    })?;
    Ok(QueuedRun {
        id,
        thread_id,
        input,
        attempt,
        worker: worker.to_owned(),
    })
}
