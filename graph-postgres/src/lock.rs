//! [`ThreadLock`]: a thread's run lock, a PostgreSQL session advisory lock kept
//! alive (and re-taken after a lost connection) by a heartbeat task.
//!
//! The lock says who may *start* runs of a thread; it is not what protects the
//! thread's data. A session can end without its owner noticing (a server
//! `idle_session_timeout`, a proxy dropping idle TCP, `pg_terminate_backend`, a
//! failover), and another worker can then take the lock. Every run therefore
//! also holds a lease row with a generation that each write checks (see
//! `lease.rs`): a run whose lock was lost is fenced out by the next run's grant.
//! The heartbeat keeps the session from looking idle, notices a lost
//! connection within one interval, and takes the lock back on a new connection
//! when nobody else took it meanwhile; when somebody did, the lock is marked
//! lost and the runs under it fail at their next write without asking the
//! database.

use crate::schema::LOCK_CLASS_THREAD_RUN;
use crate::PgError;
use deadpool_postgres::{Object, Pool};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The threads whose lock a saver (and its clones) holds through
/// [`PostgresSaver::lock_thread`](crate::PostgresSaver::lock_thread), with how
/// many guards hold each and the state of the newest: a run of such a thread
/// does not take the lock again (a session advisory lock is not shared by two
/// connections).
#[derive(Clone, Default)]
pub(crate) struct HeldLocks(Arc<Mutex<Registry>>);

/// Thread → how many guards hold its lock, and the newest one's state.
type Registry = HashMap<String, (usize, Arc<LockState>)>;

impl HeldLocks {
    /// The state of the lock a `ThreadLock` of this saver holds on `thread_id`.
    pub(crate) fn get(&self, thread_id: &str) -> Option<Arc<LockState>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(thread_id)
            .map(|(_, state)| Arc::clone(state))
    }

    /// Whether a `ThreadLock` of this saver holds `thread_id`'s lock.
    pub(crate) fn holds(&self, thread_id: &str) -> bool {
        self.get(thread_id).is_some()
    }

    fn add(&self, thread_id: &str, state: &Arc<LockState>) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = held
            .entry(thread_id.to_owned())
            .or_insert_with(|| (0, Arc::clone(state)));
        entry.0 += 1;
        entry.1 = Arc::clone(state);
    }

    fn remove(&self, thread_id: &str) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((n, _)) = held.get_mut(thread_id) {
            *n -= 1;
            if *n == 0 {
                held.remove(thread_id);
            }
        }
    }
}

/// How a lock's heartbeat behaves; from the saver's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heartbeat {
    /// Time between two pings of the lock's session.
    pub(crate) interval: Duration,
    /// How long a ping (or getting a new connection) may take before the
    /// connection is taken for lost.
    pub(crate) timeout: Duration,
}

/// What the heartbeat task and the lock's users share.
#[derive(Debug)]
pub(crate) struct LockState {
    thread_id: String,
    /// Why the lock is no longer held, once it is not.
    lost: Mutex<Option<String>>,
}

impl LockState {
    fn new(thread_id: &str) -> Arc<Self> {
        Arc::new(LockState {
            thread_id: thread_id.to_owned(),
            lost: Mutex::new(None),
        })
    }

    /// Why the lock was lost, if it was.
    pub(crate) fn lost(&self) -> Option<String> {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_lost(&self, reason: String) {
        tracing::warn!(thread_id = %self.thread_id, %reason, "lost the lock of a thread");
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(reason);
    }
}

/// Exclusive right to run a graph on one thread, across every process using the
/// database; from [`PostgresSaver::lock_thread`](crate::PostgresSaver::lock_thread).
///
/// It is the session advisory lock `pg_advisory_lock(class, hashtext(thread_id))`
/// held on a connection of its own, which a background task pings (so that a
/// server's `idle_session_timeout` never takes it for idle) and, when that
/// connection is lost, replaces: on a new connection it ends the old session if
/// the server still has it and takes the lock again. If another session took
/// the lock in between, the lock is lost for good ([`is_held`](Self::is_held)
/// turns false and runs under it fail with `GraphError::LeaseLost`).
///
/// Release it with [`unlock`](Self::unlock), which returns that connection to
/// the saver's lock pool. Dropping the guard releases it too, by closing the
/// connection (the server releases a session's locks when it ends); so do a
/// crash of the process and a lost connection, so a dead worker never blocks a
/// thread for longer than the server takes to notice (set the server's
/// `idle_session_timeout` to bound that for clients that vanish without closing
/// their connections; live locks are pinged more often than it).
///
/// Two threads whose ids hash alike share a lock: they are then serialised too,
/// which costs waiting, never correctness.
///
/// The lock decides who may start runs; each run's writes are fenced on their
/// own (a lease row whose generation every `put` checks), so a run that goes on
/// after its lock was lost cannot fork the thread: it fails at its next write.
pub struct ThreadLock {
    /// `None` once released.
    held: Option<Held>,
    thread_id: String,
    /// Where the lock is registered while held, for a lock taken by
    /// `lock_thread` / `try_lock_thread` (not for the lock of a run).
    registry: Option<HeldLocks>,
}

struct Held {
    state: Arc<LockState>,
    commands: mpsc::UnboundedSender<Unlock>,
    /// Aborted on drop: the task then drops its connection, which closes it.
    task: tokio::task::AbortHandle,
}

/// A request to the heartbeat task to unlock and hand back its connection.
struct Unlock(oneshot::Sender<Result<bool, PgError>>);

impl fmt::Debug for ThreadLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadLock")
            .field("thread_id", &self.thread_id)
            .field("held", &self.is_held())
            .finish()
    }
}

/// A connection holding (or waiting for) a session lock. Dropped without being
/// released, it is closed rather than returned to the pool: a pooled session
/// would keep the lock, or be granted it later, for nobody.
struct LockConn(Option<Object>);

impl LockConn {
    fn client(&self) -> Option<&Object> {
        self.0.as_ref()
    }

    /// The connection is clean again (the lock released): back to the pool.
    fn release(mut self) {
        drop(self.0.take());
    }
}

impl Drop for LockConn {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            drop(Object::take(conn));
        }
    }
}

/// The server process of a connection and when it started: enough to end that
/// session, and no other, from a new connection.
type Backend = (i32, std::time::SystemTime);

async fn backend_of(conn: &Object) -> Option<Backend> {
    let row = conn
        .query_one(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .ok()?;
    Some((row.try_get(0).ok()?, row.try_get(1).ok()?))
}

/// `pg_try_advisory_lock` (or, `wait`ing, `pg_advisory_lock`) of `thread_id`
/// on `conn`: whether it was taken.
async fn take_lock(conn: &Object, thread_id: &str, wait: bool) -> Result<bool, PgError> {
    let context = || format!("lock of thread `{thread_id}`");
    let sql = if wait {
        "SELECT true FROM (SELECT pg_advisory_lock($1, hashtext($2))) AS granted"
    } else {
        "SELECT pg_try_advisory_lock($1, hashtext($2))"
    };
    let stmt = conn
        .prepare_cached(sql)
        .await
        .map_err(PgError::query(context()))?;
    let row = conn
        .query_one(&stmt, &[&LOCK_CLASS_THREAD_RUN, &thread_id])
        .await
        .map_err(PgError::query(context()))?;
    row.try_get(0).map_err(PgError::query(context()))
}

impl ThreadLock {
    /// Takes the lock (`wait`: blocking until it is free; otherwise `None` if it is
    /// held), and starts its heartbeat.
    pub(crate) async fn acquire(
        pool: &Pool,
        thread_id: &str,
        wait: bool,
        registry: Option<&HeldLocks>,
        heartbeat: Heartbeat,
    ) -> Result<Option<ThreadLock>, PgError> {
        // From here, a cancelled or failed acquisition closes the connection.
        let conn = LockConn(Some(pool.get().await?));
        let Some(client) = conn.client() else {
            return Ok(None);
        };
        if !take_lock(client, thread_id, wait).await? {
            // Nothing is held or pending: the connection can go back to the pool.
            conn.release();
            return Ok(None);
        }
        let backend = backend_of(client).await;
        let state = LockState::new(thread_id);
        let (commands, requests) = mpsc::unbounded_channel();
        let task = tokio::spawn(beat(
            conn,
            backend,
            pool.clone(),
            Arc::clone(&state),
            requests,
            heartbeat,
        ))
        .abort_handle();
        let registry = registry.map(|registry| {
            registry.add(thread_id, &state);
            registry.clone()
        });
        Ok(Some(ThreadLock {
            held: Some(Held {
                state,
                commands,
                task,
            }),
            thread_id: thread_id.to_owned(),
            registry,
        }))
    }

    /// The thread this lock is for.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// Whether the lock is still held: not released, and not lost (its
    /// connection was lost and another session took the lock meanwhile). A
    /// connection that was lost while nobody else wanted the lock is replaced
    /// and the lock taken again, within one heartbeat.
    pub fn is_held(&self) -> bool {
        self.held.as_ref().is_some_and(|h| h.state.lost().is_none())
    }

    /// The state shared with the runs under this lock.
    pub(crate) fn state(&self) -> Option<&Arc<LockState>> {
        self.held.as_ref().map(|h| &h.state)
    }

    /// Releases the lock and returns its connection to the pool.
    pub async fn unlock(mut self) -> Result<(), PgError> {
        let Some(held) = self.held.as_ref() else {
            return Ok(());
        };
        let lost = held.state.lost();
        let (reply, answer) = oneshot::channel();
        let released = match held.commands.send(Unlock(reply)) {
            Ok(()) => answer.await.unwrap_or(Ok(false))?,
            Err(_) => false,
        };
        if released {
            // Unlocked: the task has handed the connection back and ended.
            self.held = None;
            if let Some(registry) = self.registry.take() {
                registry.remove(&self.thread_id);
            }
            return Ok(());
        }
        // The connection is closed by `drop` to be sure.
        Err(PgError::InvalidInput(match lost {
            Some(reason) => format!("thread `{}`: {reason}", self.thread_id),
            None => format!(
                "thread `{}` was not locked by this connection any more",
                self.thread_id
            ),
        }))
    }
}

impl Drop for ThreadLock {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.take() {
            registry.remove(&self.thread_id);
        }
        if let Some(held) = self.held.take() {
            // Still held, or possibly about to be granted: the task drops its
            // connection, which ends the session, so the server releases the lock.
            held.task.abort();
        }
    }
}

/// The heartbeat: pings the lock's session every interval and answers the
/// unlock request; replaces a lost connection (see the module docs).
async fn beat(
    mut conn: LockConn,
    mut backend: Option<Backend>,
    pool: Pool,
    state: Arc<LockState>,
    mut requests: mpsc::UnboundedReceiver<Unlock>,
    heartbeat: Heartbeat,
) {
    let thread_id = state.thread_id.clone();
    loop {
        tokio::select! {
            request = requests.recv() => {
                let Some(Unlock(reply)) = request else {
                    // The guard is gone without unlocking: `conn` closes on return.
                    return;
                };
                let unlocked = match conn.client() {
                    Some(client) => unlock(client, &thread_id).await,
                    None => Ok(false),
                };
                if matches!(unlocked, Ok(true)) {
                    conn.release();
                }
                drop(reply.send(unlocked));
                return;
            }
            () = tokio::time::sleep(heartbeat.interval) => {
                if state.lost().is_some() {
                    continue;
                }
                let alive = match conn.client() {
                    Some(client) => matches!(
                        tokio::time::timeout(heartbeat.timeout, client.batch_execute("SELECT 1")).await,
                        Ok(Ok(()))
                    ),
                    None => false,
                };
                if alive {
                    continue;
                }
                // Closes the old connection (the server may still have its session).
                drop(std::mem::replace(&mut conn, LockConn(None)));
                match retake(&pool, &thread_id, backend, heartbeat).await {
                    Retaken::Yes(retaken) => {
                        let (new_conn, new_backend) = *retaken;
                        tracing::info!(%thread_id, "the lock of a thread lost its connection; taken again on a new one");
                        conn = new_conn;
                        backend = new_backend;
                    }
                    Retaken::Taken => state.set_lost(
                        "the connection holding the thread's lock was lost, and another session \
                         took the lock meanwhile"
                            .to_owned(),
                    ),
                    // The server cannot be reached: try again at the next beat
                    // (nobody else can take the thread over without it either).
                    Retaken::Unreachable => {}
                }
            }
        }
    }
}

enum Retaken {
    Yes(Box<(LockConn, Option<Backend>)>),
    Taken,
    Unreachable,
}

/// Takes the lock again on a new connection after the old one was lost, ending
/// the old session first if the server still has it (a connection dropped by
/// the network leaves it there, holding the lock, until the server notices).
async fn retake(
    pool: &Pool,
    thread_id: &str,
    old: Option<Backend>,
    heartbeat: Heartbeat,
) -> Retaken {
    let Ok(Ok(client)) = tokio::time::timeout(heartbeat.timeout, pool.get()).await else {
        return Retaken::Unreachable;
    };
    let conn = LockConn(Some(client));
    let Some(client) = conn.client() else {
        return Retaken::Unreachable;
    };
    if let Some((pid, started)) = old {
        // Only that session: a pid may have been reused since.
        let ended = client
            .query_opt(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE pid = $1 AND backend_start = $2",
                &[&pid, &started],
            )
            .await;
        if let Ok(Some(_)) = ended {
            tracing::info!(%thread_id, pid, "ended the lost session of a thread lock");
        }
    }
    // The ended session releases its lock as it exits: a few tries.
    for attempt in 0..10 {
        match take_lock(client, thread_id, false).await {
            Ok(true) => {
                let backend = backend_of(client).await;
                return Retaken::Yes(Box::new((conn, backend)));
            }
            Ok(false) if attempt < 9 => tokio::time::sleep(Duration::from_millis(50)).await,
            Ok(false) => return Retaken::Taken,
            Err(_) => return Retaken::Unreachable,
        }
    }
    Retaken::Taken
}

async fn unlock(conn: &Object, thread_id: &str) -> Result<bool, PgError> {
    let context = || format!("unlock of thread `{thread_id}`");
    let stmt = conn
        .prepare_cached("SELECT pg_advisory_unlock($1, hashtext($2))")
        .await
        .map_err(PgError::query(context()))?;
    let row = conn
        .query_one(&stmt, &[&LOCK_CLASS_THREAD_RUN, &thread_id])
        .await
        .map_err(PgError::query(context()))?;
    row.try_get(0).map_err(PgError::query(context()))
}
