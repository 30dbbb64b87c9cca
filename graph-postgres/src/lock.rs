//! [`ThreadLock`]: a thread's run lock, a PostgreSQL session advisory lock.

use crate::schema::LOCK_CLASS_THREAD_RUN;
use crate::PgError;
use deadpool_postgres::{Object, Pool};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// The threads whose lock a saver (and its clones) holds through
/// [`PostgresSaver::lock_thread`](crate::PostgresSaver::lock_thread), with how
/// many guards hold each: a run of such a thread does not take the lock again
/// (a session advisory lock is not shared by two connections).
#[derive(Clone, Default)]
pub(crate) struct HeldLocks(Arc<Mutex<HashMap<String, usize>>>);

impl HeldLocks {
    /// Whether a `ThreadLock` of this saver holds `thread_id`'s lock.
    pub(crate) fn holds(&self, thread_id: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(thread_id)
    }

    fn add(&self, thread_id: &str) {
        *self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(thread_id.to_owned())
            .or_default() += 1;
    }

    fn remove(&self, thread_id: &str) {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = held.get_mut(thread_id) {
            *n -= 1;
            if *n == 0 {
                held.remove(thread_id);
            }
        }
    }
}

/// Exclusive right to run a graph on one thread, across every process using the
/// database; from [`PostgresSaver::lock_thread`](crate::PostgresSaver::lock_thread).
///
/// It is the session advisory lock `pg_advisory_lock(class, hashtext(thread_id))`
/// held on a connection of its own. Release it with [`unlock`](Self::unlock),
/// which returns that connection to the saver's lock pool. Dropping the guard
/// releases it too, by closing the connection (the server releases a session's
/// locks when it ends); so do a crash of the process and a lost connection, so
/// a dead worker never blocks a thread.
///
/// Two threads whose ids hash alike share a lock: they are then serialised too,
/// which costs waiting, never correctness.
///
/// The lock protects what runs while it is held: take it before reading the
/// thread's state to run on it, keep it until the run (or the `update_state`) has
/// returned. Checkpoint operations themselves do not check it; code that runs a
/// thread without the lock is not stopped.
pub struct ThreadLock {
    /// `None` once released. While `Some`, dropping the guard closes the
    /// connection: that releases a held lock, and also one still being waited for
    /// (a `pg_advisory_lock` left waiting on a pooled connection would be granted
    /// later, to nobody).
    conn: Option<Object>,
    thread_id: String,
    /// Where the lock is registered while held, for a lock taken by
    /// `lock_thread` / `try_lock_thread` (not for the lock of a run).
    registry: Option<HeldLocks>,
}

impl fmt::Debug for ThreadLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadLock")
            .field("thread_id", &self.thread_id)
            .field("held", &self.conn.is_some())
            .finish()
    }
}

impl ThreadLock {
    /// Takes the lock (`wait`: blocking until it is free; otherwise `None` if it is
    /// held).
    pub(crate) async fn acquire(
        pool: &Pool,
        thread_id: &str,
        wait: bool,
        registry: Option<&HeldLocks>,
    ) -> Result<Option<ThreadLock>, PgError> {
        let context = || format!("lock of thread `{thread_id}`");
        let conn = pool.get().await?;
        // From here, a cancelled or failed acquisition closes the connection.
        let mut guard = ThreadLock {
            conn: Some(conn),
            thread_id: thread_id.to_owned(),
            registry: None,
        };
        let Some(conn) = guard.conn.as_ref() else {
            return Ok(None);
        };
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
        let taken: bool = row.try_get(0).map_err(PgError::query(context()))?;
        if !taken {
            // Nothing is held or pending: the connection can go back to the pool.
            guard.conn = None;
            return Ok(None);
        }
        if let Some(registry) = registry {
            registry.add(thread_id);
            guard.registry = Some(registry.clone());
        }
        Ok(Some(guard))
    }

    /// The thread this lock is for.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// Whether the lock is still held: its connection is open. A lock whose
    /// connection was lost (server restart, `pg_terminate_backend`) is released by
    /// the server; a worker that must not run unprotected can check this before
    /// each step of its own.
    pub fn is_held(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Releases the lock and returns its connection to the pool.
    pub async fn unlock(mut self) -> Result<(), PgError> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(());
        };
        let context = || format!("unlock of thread `{}`", self.thread_id);
        let stmt = conn
            .prepare_cached("SELECT pg_advisory_unlock($1, hashtext($2))")
            .await
            .map_err(PgError::query(context()))?;
        let row = conn
            .query_one(&stmt, &[&LOCK_CLASS_THREAD_RUN, &self.thread_id])
            .await
            .map_err(PgError::query(context()))?;
        let released: bool = row.try_get(0).map_err(PgError::query(context()))?;
        if released {
            // Unlocked: the connection holds nothing and may be reused.
            self.conn = None;
            if let Some(registry) = self.registry.take() {
                registry.remove(&self.thread_id);
            }
            Ok(())
        } else {
            // The server says it was not held (the session was replaced?); the
            // connection is closed by `drop` to be sure.
            Err(PgError::InvalidInput(format!(
                "thread `{}` was not locked by this connection any more",
                self.thread_id
            )))
        }
    }
}

impl Drop for ThreadLock {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.take() {
            registry.remove(&self.thread_id);
        }
        if let Some(conn) = self.conn.take() {
            // Still held, or possibly about to be granted: end the session instead
            // of returning it to the pool, so the server releases the lock.
            drop(Object::take(conn));
        }
    }
}
