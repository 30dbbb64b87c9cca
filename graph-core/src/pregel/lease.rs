//! One run per thread at a time (issue 7 §4): a run holds a lease on its
//! `(saver, thread, namespace)` for as long as it may write checkpoints, and a
//! second run of the same thread in this process fails at once with
//! [`GraphError::ThreadBusy`] instead of interleaving its checkpoints with the
//! first's. Across processes, the saver's own lock does the same: a root run
//! also calls `Checkpointer::begin_run`, where `PostgresSaver` takes the
//! thread's advisory lock without waiting (see `Run::begin_run`).
//!
//! A run cancelled while it still stores what it made (see
//! `Run::store_when_cancelled`) keeps its lease until that is done, marked
//! *closing*: a run of the thread started meanwhile in this process waits for
//! it, rather than failing, and then reads what it stored.

use crate::checkpoint::{Checkpointer, SharedStr};
use crate::error::GraphError;
use hashbrown::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tokio::sync::watch;

/// Saver address, thread, namespace; the lease and the active set each hold
/// one (the texts are shared: no allocation per run).
type Key = (usize, SharedStr, Arc<str>);

/// The held leases, and the threads (saver address, thread) of cancelled
/// runs still storing, each with the sender its waiters watch (dropped, which
/// they see, with the closing run's lease). A thread's saver guard covers all
/// its namespaces: so does its closing.
#[derive(Default)]
struct Active {
    held: HashSet<Key>,
    closing: HashMap<(usize, SharedStr), watch::Sender<()>>,
}

fn lock() -> std::sync::MutexGuard<'static, Active> {
    static ACTIVE: OnceLock<Mutex<Active>> = OnceLock::new();
    ACTIVE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// What tells savers apart: two graphs sharing one saver share its threads;
/// two savers never do. (A run with a guard's writer writes through that
/// view, which graphs nested in it share.)
pub(super) fn saver_address(saver: &Arc<dyn Checkpointer>) -> usize {
    Arc::as_ptr(saver).cast::<()>() as usize
}

/// The right to write a thread's checkpoints in one namespace; released on drop.
pub(crate) struct ThreadLease {
    key: Key,
    /// Marked by [`closing`](Self::closing).
    closing: bool,
}

impl ThreadLease {
    /// The lease, or [`GraphError::ThreadBusy`] while another run holds it;
    /// while a cancelled run of the thread is still storing
    /// ([`closing`](Self::closing)), that run is waited for first.
    pub(crate) async fn acquire(
        saver: &Arc<dyn Checkpointer>,
        thread_id: &SharedStr,
        checkpoint_ns: &Arc<str>,
    ) -> Result<Self, GraphError> {
        let saver = saver_address(saver);
        let key = (saver, thread_id.clone(), Arc::clone(checkpoint_ns));
        loop {
            let mut closed = {
                let mut active = lock();
                let closing = match active.closing.is_empty() {
                    true => None,
                    false => active
                        .closing
                        .get(&(saver, thread_id.clone()))
                        .map(watch::Sender::subscribe),
                };
                match closing {
                    Some(closed) => closed,
                    None if active.held.insert(key.clone()) => {
                        return Ok(ThreadLease {
                            key,
                            closing: false,
                        })
                    }
                    None => {
                        return Err(GraphError::ThreadBusy {
                            thread_id: thread_id.to_string(),
                            checkpoint_ns: checkpoint_ns.to_string(),
                        })
                    }
                }
            };
            // Ends when the closing run's lease is dropped.
            while closed.changed().await.is_ok() {}
        }
    }

    /// Marks the lease's thread as held by a cancelled run that is still
    /// storing, until the lease is dropped: runs of the thread in this
    /// process wait for it instead of failing.
    pub(crate) fn closing(&mut self) {
        let (saver, thread, _) = &self.key;
        lock()
            .closing
            .entry((*saver, thread.clone()))
            .or_insert_with(|| watch::channel(()).0);
        self.closing = true;
    }
}

impl Drop for ThreadLease {
    fn drop(&mut self) {
        let closing = {
            let mut active = lock();
            active.held.remove(&self.key);
            let (saver, thread, _) = &self.key;
            self.closing
                .then(|| active.closing.remove(&(*saver, thread.clone())))
                .flatten()
        };
        // Dropped after the lock: its waiters wake and look again.
        drop(closing);
    }
}
