//! Run leases: one writer per thread across savers and processes sharing a
//! database file.
//!
//! `begin_run` writes the thread's row of `stategraph_thread_leases` in a
//! `BEGIN IMMEDIATE` transaction: the run's owner id, a new generation (an
//! `AUTOINCREMENT` key: never reused), an expiry, and who holds it (boot id,
//! process id and process start time, on Linux). Another run of the thread —
//! from another saver on the file, or another process — finds a live row and
//! gets `ThreadBusy`. A row is live until it expires, or, when its holder ran
//! on this machine, until that process has exited: a crashed worker's thread is
//! free at once on the same machine, and after the expiry elsewhere.
//!
//! The saver's thread renews the rows of the runs it holds every third of the
//! lease time, and every write of a run checks its row's generation in the same
//! transaction as the write (which holds the file's write lock): a run whose
//! lease expired and was granted to another run (its process was stopped longer
//! than the lease time, say) or whose thread was deleted stores nothing more
//! and fails with `CheckpointError::LeaseLost`.

use crate::{storage, Worker};
use futures::future::BoxFuture;
use graph_core::checkpoint::{
    Append, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointTuple, Checkpointer, ListOptions, NameMap, Retention, StepPut,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a lease lasts without being renewed, unless set otherwise.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(30);

/// What a write of a leased run proves: its thread and generation.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    pub(crate) thread_id: String,
    pub(crate) owner: String,
    pub(crate) generation: i64,
    pub(crate) ttl: Duration,
}

/// Why a lease was lost, once it was; shared by the run's writer and the
/// saver's thread that renews it.
#[derive(Debug, Default)]
pub(crate) struct Lost(Mutex<Option<String>>);

impl Lost {
    pub(crate) fn get(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set(&self, reason: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(reason);
    }
}

/// This process as a lease holder, for other processes on the same machine.
struct Identity {
    /// This boot of this machine and the pid namespace the process ids are of
    /// (Linux: `/proc/sys/kernel/random/boot_id` and `/proc/self/ns/pid`):
    /// processes in two containers of one host do not see each other's pids,
    /// so for them a holder's liveness cannot be told, only its expiry.
    boot_id: Option<String>,
    pid: u32,
    /// When the process started, in clock ticks since boot (Linux:
    /// `/proc/<pid>/stat`): a pid reused by another process has another one.
    start: Option<String>,
}

fn identity() -> &'static Identity {
    static IDENTITY: OnceLock<Identity> = OnceLock::new();
    IDENTITY.get_or_init(|| {
        let pid = std::process::id();
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        let pid_namespace = std::fs::read_link("/proc/self/ns/pid")
            .ok()
            .map(|link| link.to_string_lossy().into_owned());
        Identity {
            boot_id: boot
                .zip(pid_namespace)
                .map(|(boot, namespace)| format!("{boot}/{namespace}")),
            pid,
            start: process_start(pid),
        }
    })
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`), `None` if
/// there is no such process (or no `/proc`), or if it has exited and waits to be
/// reaped (a zombie).
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything: the
    // fields after it start at field 3, the state.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.next(), Some("Z" | "X" | "x")) {
        return None;
    }
    fields.nth(22 - 4).map(str::to_owned)
}

/// Whether the holder of a lease row may still be running: always, unless it
/// ran on this machine in this boot and that process is gone.
fn holder_alive(boot_id: Option<&str>, pid: Option<i64>, start: Option<&str>) -> bool {
    let me = identity();
    let (Some(mine), Some(theirs), Some(pid)) = (me.boot_id.as_deref(), boot_id, pid) else {
        return true;
    };
    if mine != theirs {
        return true;
    }
    let Ok(pid) = u32::try_from(pid) else {
        return true;
    };
    match (process_start(pid), start) {
        (None, _) => false,
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn expiry(ttl: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// A lease row as read.
struct Holder {
    generation: i64,
    owner: String,
    expires_at: i64,
    boot_id: Option<String>,
    pid: Option<i64>,
    start: Option<String>,
}

impl Holder {
    fn read(conn: &Connection, thread_id: &str) -> rusqlite::Result<Option<Holder>> {
        conn.prepare_cached(
            "SELECT generation, owner, expires_at, boot_id, pid, process_start \
             FROM stategraph_thread_leases WHERE thread_id = ?1",
        )?
        .query_row([thread_id], |row| {
            Ok(Holder {
                generation: row.get(0)?,
                owner: row.get(1)?,
                expires_at: row.get(2)?,
                boot_id: row.get(3)?,
                pid: row.get(4)?,
                start: row.get(5)?,
            })
        })
        .optional()
    }

    /// Whether the lease still holds the thread.
    fn live(&self) -> bool {
        self.expires_at > now_ms()
            && holder_alive(self.boot_id.as_deref(), self.pid, self.start.as_deref())
    }
}

/// Grants `thread_id` to a new run (owner `owner`), unless a live lease holds
/// it: the new generation, or `None` when the thread is busy.
pub(crate) fn acquire(
    conn: &mut Connection,
    thread_id: &str,
    owner: &str,
    ttl: Duration,
) -> Result<Option<i64>, CheckpointError> {
    let context = || format!("lease of thread `{thread_id}`");
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| storage(context(), e))?;
    if let Some(holder) = Holder::read(&tx, thread_id).map_err(|e| storage(context(), e))? {
        if holder.live() {
            return Ok(None);
        }
        tracing::warn!(
            thread_id,
            previous_owner = %holder.owner,
            "a run starts on a thread whose last run did not release it (that run crashed, \
             was cancelled, or stopped renewing its lease); it is fenced out from now on"
        );
    }
    let me = identity();
    tx.prepare_cached("DELETE FROM stategraph_thread_leases WHERE thread_id = ?1")
        .and_then(|mut s| s.execute([thread_id]))
        .map_err(|e| storage(context(), e))?;
    tx.prepare_cached(
        "INSERT INTO stategraph_thread_leases \
         (thread_id, owner, expires_at, boot_id, pid, process_start) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| {
        s.execute(params![
            thread_id,
            owner,
            expiry(ttl),
            me.boot_id,
            i64::from(me.pid),
            me.start
        ])
    })
    .map_err(|e| storage(context(), e))?;
    let generation = tx.last_insert_rowid();
    tx.commit().map_err(|e| storage(context(), e))?;
    Ok(Some(generation))
}

/// Extends a held lease: `false` if it is no longer the run's.
pub(crate) fn renew(
    conn: &Connection,
    thread_id: &str,
    generation: i64,
    ttl: Duration,
) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE stategraph_thread_leases SET expires_at = ?3 \
             WHERE thread_id = ?1 AND generation = ?2",
        )?
        .execute(params![thread_id, generation, expiry(ttl)])?;
    Ok(changed == 1)
}

/// Ends a run's lease (if it is still the run's).
pub(crate) fn release(
    conn: &Connection,
    thread_id: &str,
    generation: i64,
) -> Result<(), CheckpointError> {
    conn.prepare_cached(
        "DELETE FROM stategraph_thread_leases WHERE thread_id = ?1 AND generation = ?2",
    )
    .and_then(|mut s| s.execute(params![thread_id, generation]))
    .map_err(|e| storage(format!("release of the lease of thread `{thread_id}`"), e))?;
    Ok(())
}

/// Inside a write's transaction (which holds the database's write lock, so no
/// grant can come between the check and the write): fails with `LeaseLost`
/// (and the caller rolls back) when the lease is no longer the run's. A read:
/// the saver's thread renews the lease on its own.
pub(crate) fn check(conn: &Connection, fence: &Fence) -> Result<(), CheckpointError> {
    let context = || format!("lease of thread `{}`", fence.thread_id);
    let generation: Option<i64> = conn
        .prepare_cached("SELECT generation FROM stategraph_thread_leases WHERE thread_id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([&fence.thread_id], |row| row.get(0))
                .optional()
        })
        .map_err(|e| storage(context(), e))?;
    if generation == Some(fence.generation) {
        return Ok(());
    }
    let holder = Holder::read(conn, &fence.thread_id).map_err(|e| storage(context(), e))?;
    Err(lost(fence, holder.map(|h| (h.owner, h.generation))))
}

fn lost(fence: &Fence, holder: Option<(String, i64)>) -> CheckpointError {
    CheckpointError::LeaseLost {
        thread_id: fence.thread_id.clone(),
        owner: fence.owner.clone(),
        reason: match holder {
            Some((owner, _)) => format!(
                "the run's lease expired (it was not renewed for {:?}) and another run (lease \
                 owner `{owner}`) has taken the thread over",
                fence.ttl
            ),
            None => "its lease was removed: the thread was deleted or pruned, or its lease \
                     expired and another run that has ended since took it over"
                .to_owned(),
        },
    }
}

/// Inside a transaction that deletes checkpoints of `thread_id`: refuses while
/// a run holds the thread, and removes a lease that no longer holds it (so its
/// run, if it goes on, is fenced out).
pub(crate) fn claim_for_delete(conn: &Connection, thread_id: &str) -> Result<(), CheckpointError> {
    let context = || format!("lease of thread `{thread_id}`");
    if let Some(holder) = Holder::read(conn, thread_id).map_err(|e| storage(context(), e))? {
        if holder.live() {
            return Err(CheckpointError::ThreadBusy {
                thread_id: thread_id.to_owned(),
            });
        }
        conn.execute(
            "DELETE FROM stategraph_thread_leases WHERE thread_id = ?1",
            [thread_id],
        )
        .map_err(|e| storage(context(), e))?;
    }
    Ok(())
}

/// A lease the saver's thread renews (see `worker.rs`).
pub(crate) struct Held {
    pub(crate) thread_id: String,
    pub(crate) generation: i64,
    pub(crate) lost: Arc<Lost>,
}

/// The saver as a run sees it while it holds its lease: reads as the saver's,
/// writes fenced by the lease.
pub(crate) struct LeasedSaver {
    pub(crate) saver: crate::SqliteSaver,
    pub(crate) fence: Fence,
    pub(crate) lost: Arc<Lost>,
}

impl LeasedSaver {
    /// The job that stores `puts` as a chain in one fenced transaction (with
    /// `end_lease`, ending the run's lease in it too); checked here, failing
    /// in the job.
    fn chain_job(
        &self,
        config: &CheckpointConfig,
        puts: Vec<StepPut>,
        end_lease: bool,
    ) -> impl FnOnce(&mut Connection) -> Result<CheckpointConfig, CheckpointError> + Send + 'static
    {
        let fence = puts
            .iter()
            .try_for_each(|put| self.saver.accepts(&put.appends))
            .and_then(|()| self.fence_for(&config.thread_id));
        let config = config.clone();
        let heads = Arc::clone(&self.saver.heads);
        move |conn| {
            let fence = fence?;
            let mut heads = crate::append::lock(&heads);
            crate::ops::put_chain(conn, &mut heads, &config, puts, Some(&fence), end_lease)
        }
    }

    fn fence_for(&self, thread_id: &str) -> Result<Fence, CheckpointError> {
        if thread_id != self.fence.thread_id {
            return Err(CheckpointError::InvalidInput(format!(
                "a run holding thread `{}` cannot write thread `{thread_id}`",
                self.fence.thread_id
            )));
        }
        if let Some(reason) = self.lost.get() {
            return Err(CheckpointError::LeaseLost {
                thread_id: self.fence.thread_id.clone(),
                owner: self.fence.owner.clone(),
                reason,
            });
        }
        Ok(self.fence.clone())
    }
}

impl Checkpointer for LeasedSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        self.saver.get_tuple(config)
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        self.saver.list(config, options)
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        self.put_appending(config, checkpoint, metadata, new_versions, NameMap::new())
    }

    fn stores_appends(&self) -> bool {
        self.saver.stores_appends()
    }

    fn put_appending<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        self.put_with_writes(
            config,
            Vec::new(),
            checkpoint,
            metadata,
            new_versions,
            appends,
        )
    }

    /// Stores the writes and the checkpoint in one fenced transaction.
    fn put_with_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Vec<(String, Blob)>)>,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        let put = StepPut::new(writes, checkpoint, metadata, new_versions, appends);
        self.put_chain(config, vec![put])
    }

    /// Stores the whole chain in one fenced transaction.
    fn put_chain<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        puts: Vec<StepPut>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(self.saver.worker.run(self.chain_job(config, puts, false)))
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let fence = self.fence_for(&config.thread_id);
        let config = config.clone();
        let task_id = task_id.to_owned();
        Box::pin(self.saver.worker.run(move |conn| {
            crate::ops::put_writes(conn, &config, &writes, &task_id, Some(&fence?))
        }))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.saver.delete_thread(thread_id)
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        self.saver.prune(thread_id, retention)
    }
}

/// A run's lease, released when the run ends ([`finish`](Self::finish),
/// awaited), or when dropped (the run was cancelled: queued on the saver's
/// thread, not awaited).
pub(crate) struct Release {
    pub(crate) worker: Worker,
    pub(crate) thread_id: String,
    pub(crate) generation: i64,
    pub(crate) done: bool,
}

impl Release {
    fn queue(&mut self) -> impl std::future::Future<Output = Result<(), CheckpointError>> {
        self.done = true;
        self.worker.unhold(self.generation);
        let (thread_id, generation) = (std::mem::take(&mut self.thread_id), self.generation);
        self.worker
            .run(move |conn| release(conn, &thread_id, generation))
    }

    /// Releases the lease now, on the saver's thread (`conn` is its
    /// connection), for a run that never started. An error leaves the lease
    /// to expire.
    pub(crate) fn release_on(mut self, conn: &Connection) {
        self.done = true;
        drop(release(conn, &self.thread_id, self.generation));
    }

    /// Releases the lease and waits until it is released. An error leaves the
    /// lease to expire.
    pub(crate) async fn finish(mut self) {
        drop(self.queue().await);
    }

    /// The run's end (see `RunGuard::storing`): stores `last`, the run's
    /// held-back checkpoints, through `writer` (fenced), and releases the
    /// lease in the same transaction: one job on the saver's thread, one
    /// commit. If the puts fail, the lease is released on its own, and their
    /// error returned.
    pub(crate) async fn finish_storing(
        mut self,
        writer: Arc<LeasedSaver>,
        last: Option<graph_core::checkpoint::LastPuts>,
    ) -> Result<(), CheckpointError> {
        let Some((config, puts)) = last.filter(|(_, puts)| !puts.is_empty()) else {
            self.finish().await;
            return Ok(());
        };
        let store = writer.chain_job(&config, puts, true);
        self.done = true;
        self.worker.unhold(self.generation);
        let (thread_id, generation) = (std::mem::take(&mut self.thread_id), self.generation);
        // Queued now: a run cancelled while it waits still stores and releases.
        let job = self.worker.run(move |conn| {
            let stored = store(conn);
            if stored.is_err() {
                // Rolled back with the puts: released on its own (an error
                // leaves it to expire).
                drop(release(conn, &thread_id, generation));
            }
            stored.map(drop)
        });
        job.await
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        if !self.done {
            // Queued now (dropping the future does not cancel the job).
            drop(self.queue());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_told_alive_or_gone_by_its_pid_and_start_time() {
        let me = identity();
        if me.boot_id.is_none() {
            // No /proc: every holder counts as alive, until its lease expires.
            assert!(holder_alive(None, Some(1), None));
            return;
        }
        let pid = i64::from(me.pid);
        assert!(me.start.is_some(), "this process has a start time");
        assert!(holder_alive(
            me.boot_id.as_deref(),
            Some(pid),
            me.start.as_deref()
        ));
        // The same pid with another start time: the pid was reused.
        assert!(!holder_alive(me.boot_id.as_deref(), Some(pid), Some("1")));
        // No such process (pids are below 2^22 on Linux).
        assert!(!holder_alive(me.boot_id.as_deref(), Some(1 << 30), None));
        // Another machine (or boot): cannot tell, so alive.
        assert!(holder_alive(Some("another-boot"), Some(1 << 30), None));
    }

    #[test]
    fn a_reaped_child_is_gone_and_a_zombie_counts_as_gone() {
        let Some(boot) = identity().boot_id.clone() else {
            return;
        };
        let mut child = match std::process::Command::new("sleep").arg("30").spawn() {
            Ok(child) => child,
            Err(_) => return, // no `sleep` program here
        };
        let pid = i64::from(child.id());
        let start = process_start(child.id());
        assert!(start.is_some());
        assert!(holder_alive(Some(&boot), Some(pid), start.as_deref()));
        child.kill().ok();
        // Killed but not yet reaped: a zombie, whose leases are free already.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while holder_alive(Some(&boot), Some(pid), start.as_deref()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the killed child stays alive"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        child.wait().ok();
        assert!(!holder_alive(Some(&boot), Some(pid), start.as_deref()));
    }
}
