//! [`RunGuard`]: what a checkpointer holds while a run writes a thread (see
//! [`Checkpointer::begin_run`](super::Checkpointer::begin_run)).

use super::{CheckpointConfig, CheckpointError, Checkpointer, StepPut};
use futures::future::BoxFuture;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// What releasing a guard does.
enum Release {
    /// Runs a closure and awaits the future it returns.
    Call(Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>),
    /// Drops a value whose `Drop` lets the thread go (no future to box).
    Drop(Box<dyn Send>),
    /// Stores the run's last checkpoints, if given, and lets the thread go,
    /// in one call (see [`RunGuard::storing`]).
    Storing(Box<dyn FnOnce(Option<LastPuts>) -> BoxFuture<'static, StoreResult> + Send>),
}

/// What [`RunGuard::storing`]'s closure is handed: the run's last checkpoints,
/// the first a child of the config's checkpoint, each of those after it a
/// child of the one before (as [`Checkpointer::put_chain`] takes them).
pub type LastPuts = (CheckpointConfig, Vec<StepPut>);

type StoreResult = Result<(), CheckpointError>;

/// Held by the engine from the start of a run of a thread until the run ends; from
/// [`Checkpointer::begin_run`](super::Checkpointer::begin_run).
///
/// When the run ends (with a result or an error), the engine awaits
/// [`release`](Self::release) before it returns to its caller, so a run started
/// right after finds the thread free. A run that is cancelled (its future dropped)
/// drops the guard without releasing it: whatever the guard owns is dropped, and
/// must release the thread then (a PostgreSQL guard closes its connection, which
/// ends the server session and its advisory lock).
///
/// A guard may carry a **writer** ([`with_writer`](Self::with_writer)): a view of
/// the saver through which the run (and every subgraph it runs) stores its
/// checkpoints and writes while it holds the guard. Savers shared by several
/// processes return one that checks, in the same transaction as each write,
/// that the run still holds the thread (a fencing token), so that a run whose
/// lock was lost without its noticing fails with
/// [`CheckpointError::LeaseLost`](super::CheckpointError::LeaseLost) instead of
/// forking the thread.
#[must_use = "a guard released at once protects nothing"]
pub struct RunGuard {
    release: Option<Release>,
    writer: Option<Arc<dyn Checkpointer>>,
}

impl RunGuard {
    /// A guard that holds nothing (the default of savers without a lock).
    pub fn none() -> Self {
        RunGuard {
            release: None,
            writer: None,
        }
    }

    /// A guard that runs `release` when the run ends.
    pub fn new<F, Fut>(release: F) -> Self
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        RunGuard {
            release: Some(Release::Call(Box::new(move || Box::pin(release())))),
            writer: None,
        }
    }

    /// A guard that lets the thread go with `release`, which may be handed the
    /// run's last checkpoints to store first ([`release_after`](Self::release_after)):
    /// a saver that does both in one call (one transaction: the SQLite saver's
    /// leased runs) spares a run's end a round trip to its database.
    ///
    /// `release` must let the thread go whatever happens to the puts, and
    /// return the puts' error, if any. Handed `None` (the run stored
    /// everything itself, or failed), it only lets the thread go; its error is
    /// then ignored, as [`new`](Self::new)'s release has none.
    pub fn storing<F, Fut>(release: F) -> Self
    where
        F: FnOnce(Option<LastPuts>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), CheckpointError>> + Send + 'static,
    {
        RunGuard {
            release: Some(Release::Storing(Box::new(move |last| {
                Box::pin(release(last))
            }))),
            writer: None,
        }
    }

    /// A guard that drops `held` when the run ends (its `Drop` releases the
    /// thread): one allocation, where [`new`](Self::new) takes two.
    pub(crate) fn dropping(held: impl Send + 'static) -> Self {
        RunGuard {
            release: Some(Release::Drop(Box::new(held))),
            writer: None,
        }
    }

    /// The guard, with the saver view the run writes through while it holds it
    /// (see the type's docs). Reads go through it too.
    pub fn with_writer(mut self, writer: Arc<dyn Checkpointer>) -> Self {
        self.writer = Some(writer);
        self
    }

    /// The saver view the run writes through, if the guard has one.
    pub fn writer(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.writer.as_ref()
    }

    /// Whether the guard holds something.
    pub fn is_held(&self) -> bool {
        self.release.is_some()
    }

    /// Releases what the guard holds.
    pub async fn release(mut self) {
        self.writer = None;
        match self.release.take() {
            Some(Release::Call(release)) => release().await,
            Some(Release::Drop(held)) => drop(held),
            Some(Release::Storing(release)) => drop(release(None).await),
            None => {}
        }
    }

    /// Stores `puts` (a chain, the first a child of `parent`'s checkpoint) and
    /// releases the guard: in one call when the guard was made
    /// [`storing`](Self::storing), else through `saver`'s
    /// [`put_chain`](Checkpointer::put_chain), then [`release`](Self::release).
    /// The guard is released even when the puts fail; their error is returned.
    ///
    /// The engine ends a run this way when its last checkpoints are still held
    /// back (durability `sync`: stored before any node runs after them, and at
    /// the latest here, before the run returns).
    pub async fn release_after(
        mut self,
        saver: &dyn Checkpointer,
        parent: &CheckpointConfig,
        puts: Vec<StepPut>,
    ) -> Result<(), CheckpointError> {
        self.writer = None;
        if let Some(Release::Storing(_)) = &self.release
            && let Some(Release::Storing(release)) = self.release.take()
        {
            return release(Some((parent.clone(), puts))).await;
        }
        let stored = saver.put_chain(parent, puts).await;
        self.release().await;
        stored.map(drop)
    }
}

impl fmt::Debug for RunGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunGuard")
            .field("held", &self.is_held())
            .field("writer", &self.writer.is_some())
            .finish()
    }
}
