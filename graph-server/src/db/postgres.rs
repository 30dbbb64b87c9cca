//! The threads and runs tables in PostgreSQL, shared by every server process,
//! with runs queued in graph-postgres's [`RunQueue`].
//!
//! A run is a row of `server_runs` and an entry of the run queue, written in
//! one transaction. Any process claims the queue's entries (`SKIP LOCKED`, one
//! open run per thread at a time, in order), holds a lease it renews while it
//! executes the run, and finishes both. A process that dies leaves its lease
//! to expire; another process claims the run again and resumes it from its
//! last checkpoint (the run's queue id is in the metadata of every checkpoint
//! it writes, [`RUN_ID_METADATA_KEY`](graph_postgres::RUN_ID_METADATA_KEY), so
//! its input is applied once). Cancelling a run another process executes
//! writes the request into its row, which that process reads at each heartbeat.

use super::{now, parse_map, timestamp, RunRow};
use crate::error::ApiError;
use crate::graph::WireEvent;
use graph_postgres::deadpool_postgres::Pool;
use graph_postgres::tokio_postgres::Row;
use graph_postgres::{PgError, PostgresSaver, QueuedRun, RunQueue};
use serde_json::{json, Map, Value};
use std::time::Duration;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS server_threads (
    thread_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    state_values TEXT,
    interrupts TEXT NOT NULL,
    error TEXT
);
CREATE TABLE IF NOT EXISTS server_runs (
    seq BIGSERIAL PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL,
    temporary BOOLEAN NOT NULL,
    queue_id BIGINT UNIQUE,
    cancel TEXT,
    outcome TEXT
);
CREATE INDEX IF NOT EXISTS server_runs_thread ON server_runs (thread_id, status);
CREATE INDEX IF NOT EXISTS server_runs_cancel ON server_runs (run_id) WHERE cancel IS NOT NULL;
CREATE TABLE IF NOT EXISTS server_run_events (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
";

/// How long a finished run's events are kept for clients that join its
/// stream late (as `stream_resumable` runs are kept with SQLite).
const EVENTS_KEPT: Duration = Duration::from_secs(300);

/// The name of the server's queue in `stategraph_runs`.
const QUEUE: &str = "stategraph-server";

/// How many times a run is attempted: a process killed mid-run, or a database
/// that went away, costs one attempt each; after the last, the run is `error`.
const MAX_ATTEMPTS: u32 = 5;

const THREAD_COLUMNS: &str = "thread_id, created_at, updated_at, state_updated_at, metadata, \
                              status, config, state_values, interrupts, error";
const RUN_COLUMNS: &str = "run_id, thread_id, assistant_id, created_at, updated_at, status, \
                           metadata, kwargs, multitask_strategy, temporary";

/// The server's tables and run queue in PostgreSQL.
pub(crate) struct PgDb {
    pool: Pool,
    queue: RunQueue,
    /// This process's name in the queue (host, pid, random).
    worker: String,
    /// How long a claim lasts without a heartbeat.
    pub(crate) lease: Duration,
}

fn thread_json(row: &Row) -> Result<Value, ApiError> {
    let get = |i: usize| -> Result<Option<String>, ApiError> { row.try_get(i).map_err(pg) };
    let text = |i: usize| -> Result<String, ApiError> { Ok(get(i)?.unwrap_or_default()) };
    Ok(json!({
        "thread_id": text(0)?,
        "created_at": text(1)?,
        "updated_at": text(2)?,
        "state_updated_at": text(3)?,
        "metadata": parse_map(&text(4)?),
        "status": text(5)?,
        "config": parse_map(&text(6)?),
        "values": get(7)?.and_then(|v| serde_json::from_str::<Value>(&v).ok()),
        "interrupts": parse_map(&text(8)?),
        "error": get(9)?.and_then(|v| serde_json::from_str::<Value>(&v).ok()),
    }))
}

fn run_row(row: &Row) -> Result<RunRow, ApiError> {
    let text = |i: usize| -> Result<String, ApiError> { row.try_get(i).map_err(pg) };
    Ok(RunRow {
        run_id: text(0)?,
        thread_id: text(1)?,
        assistant_id: text(2)?,
        created_at: text(3)?,
        updated_at: text(4)?,
        status: text(5)?,
        metadata: parse_map(&text(6)?),
        kwargs: text(7)?,
        multitask_strategy: text(8)?,
        temporary: row.try_get(9).map_err(pg)?,
    })
}

fn schema_error(source: graph_postgres::tokio_postgres::Error) -> PgError {
    PgError::Query {
        context: "cannot create the server's tables".into(),
        source,
    }
}

fn pg(e: graph_postgres::tokio_postgres::Error) -> ApiError {
    ApiError::Postgres(PgError::Query {
        context: "the server's threads and runs tables".into(),
        source: e,
    })
}

impl PgDb {
    /// Creates the tables (if needed) in the saver's database, under an
    /// advisory lock so that processes starting together do not race.
    pub(crate) async fn open(saver: &PostgresSaver, lease: Duration) -> Result<PgDb, PgError> {
        let pool = saver.pool().clone();
        let mut client = pool.get().await?;
        let tx = client.transaction().await.map_err(schema_error)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext('stategraph-server schema'))",
            &[],
        )
        .await
        .map_err(schema_error)?;
        tx.batch_execute(SCHEMA).await.map_err(schema_error)?;
        tx.commit().await.map_err(schema_error)?;
        drop(client);
        let queue = RunQueue::open(saver, QUEUE)
            .await?
            .max_attempts(MAX_ATTEMPTS);
        Ok(PgDb {
            pool,
            queue,
            worker: graph_core::checkpoint::lease_owner_id(),
            lease,
        })
    }

    async fn client(&self) -> Result<graph_postgres::deadpool_postgres::Object, ApiError> {
        self.pool
            .get()
            .await
            .map_err(|e| ApiError::Postgres(PgError::from(e)))
    }

    pub(crate) async fn insert_thread(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<bool, ApiError> {
        let now = now();
        let metadata = Value::Object(metadata.clone()).to_string();
        let n = self
            .client()
            .await?
            .execute(
                "INSERT INTO server_threads (thread_id, created_at, updated_at, \
                 state_updated_at, metadata, status, config, state_values, interrupts, error) \
                 VALUES ($1, $2, $2, $2, $3, 'idle', '{}', NULL, '{}', NULL) \
                 ON CONFLICT (thread_id) DO NOTHING",
                &[&thread_id, &now, &metadata],
            )
            .await
            .map_err(pg)?;
        Ok(n == 1)
    }

    pub(crate) async fn thread(&self, thread_id: &str) -> Result<Option<Value>, ApiError> {
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads WHERE thread_id = $1");
        let row = self
            .client()
            .await?
            .query_opt(&sql, &[&thread_id])
            .await
            .map_err(pg)?;
        row.as_ref().map(thread_json).transpose()
    }

    pub(crate) async fn threads(&self) -> Result<Vec<Value>, ApiError> {
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads ORDER BY created_at DESC");
        let rows = self.client().await?.query(&sql, &[]).await.map_err(pg)?;
        rows.iter().map(thread_json).collect()
    }

    pub(crate) async fn patch_thread(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<bool, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let Some(row) = tx
            .query_opt(
                "SELECT metadata FROM server_threads WHERE thread_id = $1 FOR UPDATE",
                &[&thread_id],
            )
            .await
            .map_err(pg)?
        else {
            return Ok(false);
        };
        let mut merged = parse_map(&row.try_get::<_, String>(0).map_err(pg)?);
        merged.extend(metadata.clone());
        let merged = Value::Object(merged).to_string();
        tx.execute(
            "UPDATE server_threads SET metadata = $2, updated_at = $3 WHERE thread_id = $1",
            &[&thread_id, &merged, &now()],
        )
        .await
        .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        Ok(true)
    }

    pub(crate) async fn set_thread_state(
        &self,
        thread_id: &str,
        status: &str,
        values: Option<&Value>,
        interrupts: &Value,
        error: Option<&Value>,
    ) -> Result<(), ApiError> {
        let now = now();
        self.client()
            .await?
            .execute(
                "UPDATE server_threads SET status = CASE WHEN EXISTS (SELECT 1 FROM server_runs \
                 WHERE thread_id = $1 AND status IN ('pending', 'running')) THEN 'busy' \
                 ELSE $2::text END, state_values = $3, interrupts = $4, \
                 error = $5, updated_at = $6, state_updated_at = $6 WHERE thread_id = $1",
                &[
                    &thread_id,
                    &status,
                    &values.map(Value::to_string),
                    &interrupts.to_string(),
                    &error.map(Value::to_string),
                    &now,
                ],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }

    pub(crate) async fn set_thread_status(
        &self,
        thread_id: &str,
        status: &str,
    ) -> Result<(), ApiError> {
        self.client()
            .await?
            .execute(
                "UPDATE server_threads SET status = $2 WHERE thread_id = $1",
                &[&thread_id, &status],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }

    pub(crate) async fn delete_thread(&self, thread_id: &str) -> Result<bool, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        tx.execute(
            "DELETE FROM server_runs WHERE thread_id = $1",
            &[&thread_id],
        )
        .await
        .map_err(pg)?;
        let n = tx
            .execute(
                "DELETE FROM server_threads WHERE thread_id = $1",
                &[&thread_id],
            )
            .await
            .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        Ok(n == 1)
    }

    /// The row and the queue entry in one transaction, with the thread's row
    /// locked for the `reject_busy` check.
    pub(crate) async fn insert_run(
        &self,
        run: &RunRow,
        reject_busy: bool,
    ) -> Result<Option<i64>, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        tx.query_opt(
            "SELECT 1 FROM server_threads WHERE thread_id = $1 FOR UPDATE",
            &[&run.thread_id],
        )
        .await
        .map_err(pg)?;
        if reject_busy {
            let busy: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM server_runs WHERE thread_id = $1 \
                     AND status IN ('pending', 'running'))",
                    &[&run.thread_id],
                )
                .await
                .map_err(pg)?
                .try_get(0)
                .map_err(pg)?;
            if busy {
                return Err(ApiError::ThreadBusy(run.thread_id.clone()));
            }
        }
        let inner: &graph_postgres::tokio_postgres::Transaction<'_> = &tx;
        let queue_id = self
            .queue
            .submit_with(inner, &run.thread_id, &json!({ "run_id": run.run_id }))
            .await?;
        tx.execute(
            "INSERT INTO server_runs (run_id, thread_id, assistant_id, created_at, updated_at, \
             status, metadata, kwargs, multitask_strategy, temporary, queue_id) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &run.run_id,
                &run.thread_id,
                &run.assistant_id,
                &run.created_at,
                &run.updated_at,
                &run.status,
                &Value::Object(run.metadata.clone()).to_string(),
                &run.kwargs,
                &run.multitask_strategy,
                &run.temporary,
                &queue_id,
            ],
        )
        .await
        .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        Ok(Some(queue_id))
    }

    pub(crate) async fn run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRow>, ApiError> {
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM server_runs WHERE run_id = $1 AND thread_id = $2");
        let row = self
            .client()
            .await?
            .query_opt(&sql, &[&run_id, &thread_id])
            .await
            .map_err(pg)?;
        row.as_ref().map(run_row).transpose()
    }

    pub(crate) async fn runs(
        &self,
        thread_id: &str,
        status: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<RunRow>, ApiError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM server_runs WHERE thread_id = $1 \
             AND ($2::TEXT IS NULL OR status = $2) ORDER BY seq DESC LIMIT $3 OFFSET $4"
        );
        let (limit, offset) = (
            i64::try_from(limit).unwrap_or(i64::MAX),
            i64::try_from(offset).unwrap_or(i64::MAX),
        );
        let rows = self
            .client()
            .await?
            .query(&sql, &[&thread_id, &status, &limit, &offset])
            .await
            .map_err(pg)?;
        rows.iter().map(run_row).collect()
    }

    pub(crate) async fn active_runs(&self, thread_id: &str) -> Result<Vec<String>, ApiError> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT run_id FROM server_runs WHERE thread_id = $1 \
                 AND status IN ('pending', 'running') ORDER BY seq",
                &[&thread_id],
            )
            .await
            .map_err(pg)?;
        rows.iter().map(|r| r.try_get(0).map_err(pg)).collect()
    }

    pub(crate) async fn finish_run(
        &self,
        run_id: &str,
        status: &str,
        outcome: &Value,
    ) -> Result<(), ApiError> {
        self.client()
            .await?
            .execute(
                "UPDATE server_runs SET status = $2, outcome = $3, updated_at = $4, \
                 cancel = NULL WHERE run_id = $1",
                &[&run_id, &status, &outcome.to_string(), &now()],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }

    pub(crate) async fn cancel_pending(
        &self,
        run_id: &str,
        delete: bool,
    ) -> Result<bool, ApiError> {
        let client = self.client().await?;
        let n = if delete {
            client
                .execute(
                    "DELETE FROM server_runs WHERE run_id = $1 AND status = 'pending'",
                    &[&run_id],
                )
                .await
        } else {
            client
                .execute(
                    "UPDATE server_runs SET status = 'interrupted', updated_at = $2, \
                     outcome = $3 WHERE run_id = $1 AND status = 'pending'",
                    &[&run_id, &now(), &super::cancelled_outcome().to_string()],
                )
                .await
        }
        .map_err(pg)?;
        Ok(n == 1)
    }

    pub(crate) async fn delete_run(&self, run_id: &str) -> Result<bool, ApiError> {
        let n = self
            .client()
            .await?
            .execute("DELETE FROM server_runs WHERE run_id = $1", &[&run_id])
            .await
            .map_err(pg)?;
        Ok(n == 1)
    }

    /// Asks the process running `run_id` to stop it with `action`
    /// (`interrupt` or `rollback`); `false` if it is not running.
    pub(crate) async fn request_cancel(
        &self,
        run_id: &str,
        action: &str,
    ) -> Result<bool, ApiError> {
        let n = self
            .client()
            .await?
            .execute(
                "UPDATE server_runs SET cancel = $2 WHERE run_id = $1 AND status = 'running'",
                &[&run_id, &action],
            )
            .await
            .map_err(pg)?;
        Ok(n == 1)
    }

    /// The running runs whose cancellation was asked (run id, action).
    pub(crate) async fn cancel_requests(&self) -> Result<Vec<(String, String)>, ApiError> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT run_id, cancel FROM server_runs WHERE cancel IS NOT NULL \
                 AND status = 'running'",
                &[],
            )
            .await
            .map_err(pg)?;
        rows.iter()
            .map(|r| Ok((r.try_get(0).map_err(pg)?, r.try_get(1).map_err(pg)?)))
            .collect()
    }

    /// A run's status, its outcome once over, and the cancellation asked of
    /// it; `None` if the row is gone (rolled back, or its thread deleted).
    pub(crate) async fn run_state(
        &self,
        run_id: &str,
    ) -> Result<Option<(String, Option<Value>, Option<String>)>, ApiError> {
        let row = self
            .client()
            .await?
            .query_opt(
                "SELECT status, outcome, cancel FROM server_runs WHERE run_id = $1",
                &[&run_id],
            )
            .await
            .map_err(pg)?;
        let Some(row) = row else { return Ok(None) };
        let outcome: Option<String> = row.try_get(1).map_err(pg)?;
        Ok(Some((
            row.try_get(0).map_err(pg)?,
            outcome.and_then(|o| serde_json::from_str(&o).ok()),
            row.try_get(2).map_err(pg)?,
        )))
    }

    /// Claims the next run of the queue for this process; `None` if none is
    /// claimable now.
    pub(crate) async fn claim(&self) -> Result<Option<QueuedRun>, ApiError> {
        Ok(self.queue.claim(&self.worker, self.lease).await?)
    }

    /// Claims queue entry `queue_id` for this process if it is claimable now.
    pub(crate) async fn claim_run(&self, queue_id: i64) -> Result<Option<QueuedRun>, ApiError> {
        Ok(self
            .queue
            .claim_run(queue_id, &self.worker, self.lease)
            .await?)
    }

    /// Marks the run of a claimed entry `running`; `None` when it was
    /// cancelled before it started, or deleted (then the entry is completed).
    pub(crate) async fn take(&self, queued: &QueuedRun) -> Result<Option<RunRow>, ApiError> {
        let sql = format!(
            "UPDATE server_runs SET status = 'running', updated_at = $2 \
             WHERE queue_id = $1 AND status IN ('pending', 'running') RETURNING {RUN_COLUMNS}"
        );
        let row = self
            .client()
            .await?
            .query_opt(&sql, &[&queued.id, &now()])
            .await
            .map_err(pg)?;
        match row {
            Some(row) => run_row(&row).map(Some),
            None => {
                self.queue.complete(queued).await?;
                Ok(None)
            }
        }
    }

    /// Extends this process's lease on a run; `false` if it lost it.
    pub(crate) async fn renew(&self, queued: &QueuedRun) -> Result<bool, ApiError> {
        Ok(self.queue.renew(queued, self.lease).await?)
    }

    /// Completes a claimed entry once its run's row records how it ended.
    pub(crate) async fn complete(&self, queued: &QueuedRun) -> Result<(), ApiError> {
        self.queue.complete(queued).await?;
        Ok(())
    }

    /// Gives a claimed entry back to the queue (another attempt, if any are
    /// left): the run could not go on for a reason of the database's.
    pub(crate) async fn retry(&self, queued: &QueuedRun, why: &str) -> Result<(), ApiError> {
        self.queue.fail(queued, why).await?;
        Ok(())
    }

    /// Stores events of a run (id, event), as the process executing it
    /// streams them.
    pub(crate) async fn store_events(
        &self,
        run_id: &str,
        events: &[(usize, WireEvent)],
    ) -> Result<(), ApiError> {
        let ids: Vec<i64> = events
            .iter()
            .map(|(id, _)| i64::try_from(*id).unwrap_or(i64::MAX))
            .collect();
        let names: Vec<&str> = events.iter().map(|(_, e)| &*e.event).collect();
        let data: Vec<&str> = events.iter().map(|(_, e)| &*e.data).collect();
        self.client()
            .await?
            .execute(
                "INSERT INTO server_run_events (run_id, seq, event, data) \
                 SELECT $1, s, e, d FROM UNNEST($2::INT8[], $3::TEXT[], $4::TEXT[]) AS t(s, e, d) \
                 ON CONFLICT DO NOTHING",
                &[&run_id, &ids, &names, &data],
            )
            .await
            .map_err(pg)?;
        Ok(())
    }

    /// The id of a run's last stored event (0 if none).
    pub(crate) async fn last_event(&self, run_id: &str) -> Result<usize, ApiError> {
        let row = self
            .client()
            .await?
            .query_one(
                "SELECT COALESCE(max(seq), 0) FROM server_run_events WHERE run_id = $1",
                &[&run_id],
            )
            .await
            .map_err(pg)?;
        let last: i64 = row.try_get(0).map_err(pg)?;
        Ok(usize::try_from(last).unwrap_or(0))
    }

    /// A run's stored events after the `after`-th (at most 1000).
    pub(crate) async fn events_after(
        &self,
        run_id: &str,
        after: usize,
    ) -> Result<Vec<(usize, WireEvent)>, ApiError> {
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows = self
            .client()
            .await?
            .query(
                "SELECT seq, event, data FROM server_run_events WHERE run_id = $1 AND seq > $2 \
                 ORDER BY seq LIMIT 1000",
                &[&run_id, &after],
            )
            .await
            .map_err(pg)?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.try_get(0).map_err(pg)?;
                let event: String = r.try_get(1).map_err(pg)?;
                let data: String = r.try_get(2).map_err(pg)?;
                Ok((
                    usize::try_from(seq).unwrap_or(0),
                    WireEvent {
                        event: event.into(),
                        data: data.into(),
                    },
                ))
            })
            .collect()
    }

    /// Deletes the events of runs over for longer than [`EVENTS_KEPT`] (or
    /// deleted).
    pub(crate) async fn forget_old_events(&self) -> Result<u64, ApiError> {
        let before = timestamp(time::OffsetDateTime::now_utc() - EVENTS_KEPT);
        self.client()
            .await?
            .execute(
                "DELETE FROM server_run_events e WHERE NOT EXISTS (SELECT 1 FROM server_runs r \
                 WHERE r.run_id = e.run_id \
                 AND (r.status IN ('pending', 'running') OR r.updated_at > $1))",
                &[&before],
            )
            .await
            .map_err(pg)
    }

    /// Gives a claimed entry back to the queue without counting the attempt:
    /// this process is stopping.
    pub(crate) async fn release(&self, queued: &QueuedRun) -> Result<(), ApiError> {
        self.queue.release(queued).await?;
        Ok(())
    }

    /// Marks `error` the runs whose queue entries failed for good (their last
    /// attempt's process died too): they will not run again.
    pub(crate) async fn fail_exhausted(&self) -> Result<u64, ApiError> {
        let error = json!({"__error__": {
            "error": "RunAttemptsExhausted",
            "message": format!("the run was attempted {MAX_ATTEMPTS} times and no attempt finished (the server processes died or lost the database)"),
        }});
        self.client()
            .await?
            .execute(
                "UPDATE server_runs s SET status = 'error', outcome = $1, updated_at = $2 \
                 FROM stategraph_runs q WHERE q.id = s.queue_id AND q.status = 'failed' \
                 AND s.status IN ('pending', 'running')",
                &[&error.to_string(), &now()],
            )
            .await
            .map_err(pg)
    }
}
