//! One run per thread at a time (issue 7 §4): a run holds a lease on its
//! `(saver, thread, namespace)` for as long as it may write checkpoints, and a
//! second run of the same thread in this process fails at once with
//! [`GraphError::ThreadBusy`] instead of interleaving its checkpoints with the
//! first's. Across processes, the saver's own lock does the same: a root run
//! also calls `Checkpointer::begin_run`, where `PostgresSaver` takes the
//! thread's advisory lock without waiting (see `Run::begin_run`).

use crate::checkpoint::{Checkpointer, SharedStr};
use crate::error::GraphError;
use hashbrown::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Saver address, thread, namespace; the lease and the active set each hold
/// one (the texts are shared: no allocation per run).
type Key = (usize, SharedStr, Arc<str>);

fn active() -> &'static Mutex<HashSet<Key>> {
    static ACTIVE: OnceLock<Mutex<HashSet<Key>>> = OnceLock::new();
    ACTIVE.get_or_init(Default::default)
}

/// The right to write a thread's checkpoints in one namespace; released on drop.
pub(crate) struct ThreadLease(Key);

impl ThreadLease {
    pub(crate) fn acquire(
        saver: &Arc<dyn Checkpointer>,
        thread_id: &SharedStr,
        checkpoint_ns: &Arc<str>,
    ) -> Result<Self, GraphError> {
        // The saver's address tells savers apart: two graphs sharing one saver
        // share its threads; two savers never do.
        let saver = Arc::as_ptr(saver).cast::<()>() as usize;
        let key = (saver, thread_id.clone(), Arc::clone(checkpoint_ns));
        let mut active = active().lock().unwrap_or_else(PoisonError::into_inner);
        if !active.insert(key.clone()) {
            return Err(GraphError::ThreadBusy {
                thread_id: thread_id.to_string(),
                checkpoint_ns: checkpoint_ns.to_string(),
            });
        }
        Ok(ThreadLease(key))
    }
}

impl Drop for ThreadLease {
    fn drop(&mut self) {
        active()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}
