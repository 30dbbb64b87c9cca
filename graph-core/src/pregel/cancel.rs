//! The stores of cancelled nested runs, by thread: a run lets its thread go
//! only once they are done.
//!
//! A graph nested in a task writes through its root run's saver view, fenced
//! by the root's lease (PostgreSQL: `Checkpointer::begin_run`). Cancelled, a
//! nested run stores what it had made in a tokio task of its own
//! (`Run::store_when_cancelled`); if the root let its thread go first, that
//! write would find the lease gone and be refused. So the nested run's store
//! is registered here, and the root's release (at its end, or its own
//! cancellation) waits for the stores registered for its thread first.
//!
//! A nested run polled inline by its task is dropped before its root's
//! cancellation runs, so its store is registered in time. One that runs in a
//! tokio task of its own (a step's concurrent tasks, every fourth level of
//! nesting) is dropped when that task is aborted, which the runtime does
//! later: its store may still be refused (see docs/semantics.md §2.10).
//!
//! Not the lease's *closing* marks (`lease::ThreadLease::closing`), which let
//! a new run of a thread wait for a cancelled one: they hold one mark per
//! thread, ended by the first closer's drop, and a root run without a
//! writer view shares its key with its nested runs, so it would wait for its
//! own mark.

use crate::checkpoint::{Checkpointer, SharedStr};
use hashbrown::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tokio::task::JoinHandle;

/// The saver view's address and the thread.
type Key = (usize, SharedStr);

/// How many stores are registered: a run with none to wait for (nearly
/// every run) takes no lock.
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

fn stores() -> std::sync::MutexGuard<'static, HashMap<Key, Vec<JoinHandle<()>>>> {
    static STORES: OnceLock<Mutex<HashMap<Key, Vec<JoinHandle<()>>>>> = OnceLock::new();
    STORES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn key(saver: &Arc<dyn Checkpointer>, thread: &SharedStr) -> Key {
    (super::lease::saver_address(saver), thread.clone())
}

/// A cancelled nested run of `thread`, writing through `saver`, stores in
/// `store`.
pub(super) fn register(saver: &Arc<dyn Checkpointer>, thread: &SharedStr, store: JoinHandle<()>) {
    let mut stores = stores();
    // Stores no root waited for (their root had let its thread go, or was
    // gone) are dropped once done, so the table does not grow.
    stores.retain(|_, pending| {
        pending.retain(|store| !store.is_finished());
        !pending.is_empty()
    });
    stores.entry(key(saver, thread)).or_default().push(store);
    REGISTERED.store(stores.values().map(Vec::len).sum(), Ordering::SeqCst);
}

/// Waits for the stores registered for `thread` through `saver` (those
/// registered while it waits too). Only a root run waits: a registered store
/// waits for none, so no two wait for each other.
pub(super) async fn settle(saver: &Arc<dyn Checkpointer>, thread: &SharedStr) {
    if REGISTERED.load(Ordering::SeqCst) == 0 {
        return;
    }
    let key = key(saver, thread);
    loop {
        let pending = {
            let mut stores = stores();
            let Some(pending) = stores.remove(&key) else {
                return;
            };
            REGISTERED.store(stores.values().map(Vec::len).sum(), Ordering::SeqCst);
            pending
        };
        for store in pending {
            // A store that panicked or was aborted has nothing left to wait for.
            let _ = store.await;
        }
    }
}
