//! The stores of cancelled nested runs, by thread: a root run lets its
//! thread go only once they are done.
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
//! nesting) is dropped only when the runtime carries out that task's abort,
//! after the root's cancellation began: so the step (or the parent) that
//! aborts such a task registers the task itself, and the root waits for it to
//! end, which is after the nested runs inside it were dropped and had
//! registered their stores.
//!
//! Not the lease's *closing* marks (`lease::ThreadLease::closing`), which let
//! a new run of a thread wait for a cancelled one: they hold one mark per
//! thread, ended by the first closer's drop, and a root run without a
//! writer view shares its key with its nested runs, so it would wait for its
//! own mark.

use crate::checkpoint::{Checkpointer, SharedStr};
use hashbrown::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};
use tokio::task::JoinHandle;

/// The saver view's address and the thread.
type Key = (usize, SharedStr);

/// A task the thread's release waits for: a nested run's store, or an
/// aborted task whose nested runs store when it is dropped.
trait Pending: Send {
    fn is_finished(&self) -> bool;
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<()>;
}

impl<T: Send + 'static> Pending for JoinHandle<T> {
    fn is_finished(&self) -> bool {
        JoinHandle::is_finished(self)
    }

    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        // A task that panicked or was aborted has nothing left to wait for.
        Pin::new(self).poll(cx).map(drop)
    }
}

type Table = HashMap<Key, Vec<Box<dyn Pending>>>;

/// How many tasks are registered: a run with none to wait for (nearly
/// every run) takes no lock.
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

fn table() -> std::sync::MutexGuard<'static, Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// [`Thread::settle`] for the thread of a run writing through `saver`: at
/// every root run's end, so with nothing registered (nearly always) it is
/// one atomic load, without a copy of the thread's name.
pub(super) async fn settle(saver: &Arc<dyn Checkpointer>, thread: &SharedStr) {
    if REGISTERED.load(Ordering::SeqCst) != 0 {
        Thread::of(saver, thread).settle().await;
    }
}

/// Aborts `task`, a task of a run writing to `thread` (when it has a saver);
/// one that has not ended yet is registered, so that the thread's root run
/// waits for the runtime to drop it (and for what its nested runs then store).
pub(super) fn abandon<T: Send + 'static>(task: JoinHandle<T>, thread: Option<&Thread>) {
    task.abort();
    if let Some(thread) = thread
        && !task.is_finished()
    {
        thread.register(task);
    }
}

/// Where the tasks a thread's root run waits for are registered: the thread
/// of a run that writes through `saver`.
#[derive(Clone)]
pub(super) struct Thread(Key);

impl Thread {
    pub(super) fn of(saver: &Arc<dyn Checkpointer>, thread: &SharedStr) -> Self {
        Thread((super::lease::saver_address(saver), thread.clone()))
    }

    /// Registers `task` (a cancelled nested run's store, or a task of the
    /// thread's run that was aborted): the root's release waits for its end.
    pub(super) fn register<T: Send + 'static>(&self, task: JoinHandle<T>) {
        let mut table = table();
        // Tasks no root waited for (their root had let its thread go, or was
        // gone) are dropped once done, so the table does not grow.
        table.retain(|_, pending| {
            pending.retain(|task| !task.is_finished());
            !pending.is_empty()
        });
        table
            .entry(self.0.clone())
            .or_default()
            .push(Box::new(task));
        REGISTERED.store(table.values().map(Vec::len).sum(), Ordering::SeqCst);
    }

    /// Whether tasks are registered for the thread.
    pub(super) fn has_pending(&self) -> bool {
        REGISTERED.load(Ordering::SeqCst) != 0
            && table().get(&self.0).is_some_and(|p| !p.is_empty())
    }

    /// Waits for the tasks registered for the thread (those registered while
    /// it waits too). Only a root run waits: a registered task waits for
    /// none, so no two wait for each other.
    pub(super) async fn settle(&self) {
        if REGISTERED.load(Ordering::SeqCst) == 0 {
            return;
        }
        loop {
            let pending = {
                let mut table = table();
                let Some(pending) = table.remove(&self.0) else {
                    return;
                };
                REGISTERED.store(table.values().map(Vec::len).sum(), Ordering::SeqCst);
                pending
            };
            for mut task in pending {
                std::future::poll_fn(|cx| task.poll_end(cx)).await;
            }
        }
    }
}
