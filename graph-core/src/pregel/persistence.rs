//! Persistence: the saver a run stores through, the checkpoint the state is
//! at, and when it is stored (durability), with the lease on the thread
//! (docs/semantics.md §6). Building and reading checkpoints is `persist`'s.

use super::{lease, persist, Run};
use crate::checkpoint::{
    CheckpointConfig, CheckpointSource, CheckpointTuple, Checkpointer, SharedStr,
};
use crate::config::Durability;
use crate::error::GraphError;
use crate::ids;
use crate::state::State;
use std::sync::Arc;

/// A task's writes as pending-write rows: its id, and each write's channel
/// and value.
pub(super) type Rows = (String, Vec<(String, crate::checkpoint::Blob)>);

/// Where a run persists: the saver, the checkpoint its next put descends from,
/// and what the run tracks to build each checkpoint in what changed. Boxed in
/// the run: a run without a saver (a subgraph in a fan-out, say) stays small.
pub(super) struct Saver {
    pub(super) saver: Arc<dyn Checkpointer>,
    /// Thread and namespace; `checkpoint_id` = the last checkpoint stored (the parent).
    pub(super) config: CheckpointConfig,
    /// `config`'s thread, shared with the run's config (the lease and the
    /// warm states key by it without copying it).
    pub(super) thread: crate::checkpoint::SharedStr,
    /// The id of the parent of the last checkpoint stored or loaded, in
    /// `config`'s thread and namespace (LangGraph's `prev_checkpoint_config`):
    /// what `checkpoints` events report as their `parent_config`. An id, not
    /// a config: most runs stream no checkpoint events.
    pub(super) parent_id: Option<SharedStr>,
    pub(super) durability: Durability,
    pub(super) book: persist::Book,
    /// Pending-write rows (task id, rows) of the current step's tasks that
    /// completed when no sibling was left running: stored against the current
    /// checkpoint by the next put, before it (LangGraph's `put_writes` per
    /// task), in the put's own background task under durability `async`.
    /// Under `exit`: the rows of the tasks that completed while a sibling ran,
    /// held for a cancellation, a pause or a failure, which store them after
    /// the current checkpoint; dropped when the step ends.
    /// (Here, in the boxed saver, a run without one stays as small.)
    pub(super) step_writes: Vec<Rows>,
    /// With a saver that stores appended items: what each state field's next
    /// checkpoint may store that way.
    pub(super) appends: Option<super::append::Appends>,
}

impl Saver {
    /// Where the tasks this run's thread waits for when it is let go are
    /// registered ([`cancel`](super::cancel)).
    pub(super) fn cancel_thread(&self) -> super::cancel::Thread {
        super::cancel::Thread::of(&self.saver, &self.thread)
    }
}

/// The checkpoint a run's state is at, and how it gets stored, owned by the run.
pub(crate) struct Persist {
    /// The saver, when the run has one.
    pub(super) saver: Option<Box<Saver>>,
    /// The id of the current checkpoint (the state the next step starts from).
    pub(super) checkpoint: [u8; 16],
    /// Whether the current checkpoint has been stored (or is being stored).
    pub(super) saved: bool,
    /// The put running in the background (durability `async`).
    pub(super) background_put: Option<BackgroundPut>,
    /// Source and step of the current checkpoint (stored later under `exit`).
    pub(super) pending_source: CheckpointSource,
    pub(super) checkpoint_step: i64,
    /// Version strings read from a checkpoint, kept verbatim (they key stored
    /// blobs), by channel; empty until a checkpoint is restored.
    pub(super) restored_versions: Vec<Option<(u64, crate::checkpoint::SharedStr)>>,
    /// The random fraction of version strings made by this run.
    pub(super) version_salt: [u8; VERSION_SALT_LEN],
    /// The checkpoint read when the run took its thread
    /// ([`Run::begin_run`]), until [`Run::load`] takes it.
    pub(super) preloaded: Option<Option<CheckpointTuple>>,
    /// Under durability `sync`, the checkpoints made since the last put (with
    /// the config of that put), held back until a node is about to run: the
    /// run's `input` checkpoint is then stored with the `__start__` step's in
    /// one call (`Checkpointer::put_chain`), and a run's last checkpoint with
    /// the release of its thread (`RunGuard::release_after`). Whatever else
    /// touches the saver first stores them ([`flush_puts`](Self::flush_puts)).
    pub(super) deferred: Option<Box<crate::checkpoint::LastPuts>>,
    /// Whether the run's end stores the held-back checkpoints, with the
    /// release of its thread (a root run with a saver): its last steps then
    /// leave them held back.
    pub(super) stored_at_release: bool,
    /// The `checkpoints` event of the run's last checkpoint, held back until
    /// the release has stored it (durability `sync`: as LangGraph, whose
    /// event follows the put it waited for).
    pub(super) event_at_release: bool,
}

/// Stores `put` (the writes, then the checkpoint) in a tokio task (durability
/// `async`). A function of its own, not generic over the state, so that tokio's
/// task code for it is compiled once rather than for every state type.
fn spawn_put(
    saver: Arc<dyn crate::checkpoint::Checkpointer>,
    parent: crate::checkpoint::CheckpointConfig,
    put: crate::checkpoint::StepPut,
) -> BackgroundPut {
    tokio::spawn(async move { put.put_to(&*saver, &parent).await.map(drop) })
}

/// A put (or a step's early writes) going on in a tokio task.
pub(super) type BackgroundPut =
    tokio::task::JoinHandle<Result<(), crate::checkpoint::CheckpointError>>;

/// What a [`BackgroundPut`] ended with; a task that panicked or was aborted
/// is a storage error.
pub(super) fn background_result(
    joined: Result<Result<(), crate::checkpoint::CheckpointError>, tokio::task::JoinError>,
) -> Result<(), crate::checkpoint::CheckpointError> {
    joined.unwrap_or_else(|e| {
        Err(crate::checkpoint::CheckpointError::Storage(
            format!("storing a checkpoint in the background failed: {e}").into(),
        ))
    })
}

/// The random fraction of the version strings a run makes, LangGraph's
/// `.{random():016}` (e.g. `.0.8719233457614553`): two runs forking one checkpoint
/// make the same version numbers, and must not collide on a blob key.
fn version_salt() -> [u8; VERSION_SALT_LEN] {
    let mut salt = *b".0.0000000000000000";
    ids::put_digits(&mut salt[3..], fastrand::u64(..10_000_000_000_000_000));
    salt
}

/// The length of a run's version salt (`.0.` and 16 digits).
pub(crate) const VERSION_SALT_LEN: usize = 19;

impl Persist {
    /// The persistence of a run, storing through `saver` (none: the run
    /// stores nothing).
    pub(super) fn new(saver: Option<Box<Saver>>, spare: &mut super::spare::Spare) -> Self {
        let restored_versions = std::mem::take(&mut spare.restored_versions);
        Persist {
            saver,
            checkpoint: [0; 16],
            saved: false,
            background_put: None,
            pending_source: CheckpointSource::Input,
            checkpoint_step: -1,
            restored_versions,
            version_salt: version_salt(),
            preloaded: None,
            deferred: None,
            stored_at_release: false,
            event_at_release: false,
        }
    }

    /// The state at `step` is a new checkpoint of `source`, not yet stored.
    pub(super) fn new_checkpoint(&mut self, step: i64, source: CheckpointSource) {
        if let Some(p) = self
            .saver
            .as_mut()
            .filter(|p| p.durability == Durability::Exit)
        {
            // Held in case the run was cancelled during the step (durability
            // `exit`); the step ended: the new checkpoint holds what they wrote.
            p.step_writes.clear();
        }
        self.checkpoint = ids::checkpoint_id(step);
        self.saved = false;
        self.pending_source = source;
        self.checkpoint_step = step;
    }

    /// The saver's durability, if the run has a saver.
    pub(super) fn durability(&self) -> Option<Durability> {
        self.saver.as_ref().map(|p| p.durability)
    }

    /// Stores the held-back checkpoints, if any, and waits for the
    /// checkpoint being stored in the background (durability `async`).
    pub(super) async fn flush_puts(&mut self) -> Result<(), GraphError> {
        self.store_held(false).await?;
        self.flush_background().await
    }

    /// Holds `put` back, after the puts held before it (see
    /// [`deferred`](Self::deferred)).
    fn hold(&mut self, put: crate::checkpoint::StepPut) {
        if let Some(p) = &self.saver {
            self.deferred
                .get_or_insert_with(|| Box::new((p.config.clone(), Vec::new())))
                .1
                .push(put);
        }
    }

    /// Drops the put held back last.
    fn unhold_last(&mut self) {
        if let Some(chain) = &mut self.deferred {
            chain.1.pop();
            if chain.1.is_empty() {
                self.deferred = None;
            }
        }
    }

    /// Stores the puts held back: one as [`store`](Self::store) does, several
    /// in one `put_chain`.
    async fn store_held(&mut self, in_background: bool) -> Result<(), GraphError> {
        let Some(chain) = self.deferred.take() else {
            return Ok(());
        };
        let (parent, mut puts) = *chain;
        if puts.len() == 1
            && let Some(put) = puts.pop()
        {
            return self.store(Some(parent), put, in_background).await;
        }
        if let Some(p) = &self.saver {
            p.saver.put_chain(&parent, puts).await?;
        }
        Ok(())
    }

    /// Stores `put`, a child of `parent` (of the saver's config when `None`):
    /// in a tokio task when `in_background` (durability `async`), else in one
    /// call, so that a saver can store the step in one transaction.
    async fn store(
        &mut self,
        parent: Option<crate::checkpoint::CheckpointConfig>,
        put: crate::checkpoint::StepPut,
        in_background: bool,
    ) -> Result<(), GraphError> {
        let Some(p) = &self.saver else {
            return Ok(());
        };
        let parent = parent.as_ref().unwrap_or(&p.config);
        if in_background {
            self.background_put = Some(spawn_put(Arc::clone(&p.saver), parent.clone(), put));
        } else {
            put.put_to(&*p.saver, parent).await?;
        }
        Ok(())
    }

    /// [`flush_puts`](Self::flush_puts) where the run's steps end: the
    /// held-back checkpoints stay held back when the run's end stores them
    /// ([`stored_at_release`](Self::stored_at_release)).
    pub(super) async fn flush_at_end(&mut self) -> Result<(), GraphError> {
        if self.stored_at_release {
            self.flush_background().await
        } else {
            self.flush_puts().await
        }
    }

    /// Waits for the checkpoint being stored in the background (durability `async`).
    async fn flush_background(&mut self) -> Result<(), GraphError> {
        // Kept until it has finished: a run cancelled while it waits lets its
        // thread go only after (`Run::store_when_cancelled`).
        if let Some(handle) = &mut self.background_put {
            let joined = handle.await;
            self.background_put = None;
            background_result(joined)?;
        }
        Ok(())
    }
}

impl<S: State> Run<S> {
    /// A run that fails still waits for the checkpoint it was storing in the
    /// background (durability `async`) before it returns and gives up its
    /// thread: the next run then reads that checkpoint, not the one before it.
    /// The tasks of its last step that completed keep their writes (as
    /// LangGraph's, stored as each completed), though the step could not apply
    /// them.
    pub(super) async fn settle_puts(&mut self, failure: &GraphError) {
        if let Err(e) = self.put_step_writes().await {
            tracing::warn!(error = %e, %failure, "a failed run could not store its step's writes");
        }
        if let Err(e) = self.persist.flush_puts().await {
            tracing::warn!(error = %e, %failure, "a failed run could not store its last checkpoint");
        }
    }

    /// The saver's guard of the thread of a run that is not nested in another
    /// ([`Checkpointer::begin_run`]): across processes, what the lease is within
    /// one. A run at a subgraph's namespace (`update_state` of a subgraph's
    /// state) holds the whole thread too; a nested run is covered by its root's.
    ///
    /// The saver reads the run's checkpoint in the same call
    /// ([`Checkpointer::begin_run_and_load`]); [`load`](Self::load) takes it.
    pub(super) async fn begin_run(&mut self) -> Result<crate::checkpoint::RunGuard, GraphError> {
        use crate::checkpoint::RunGuard;
        let Some(p) = self
            .persist
            .saver
            .as_ref()
            .filter(|_| self.nested.is_none())
        else {
            return Ok(RunGuard::none());
        };
        let (guard, loaded) = p.saver.begin_run_and_load(&p.config).await?;
        self.persist.preloaded = Some(loaded);
        self.persist.stored_at_release = true;
        Ok(guard)
    }

    /// The end of a run that holds its thread: the checkpoints still held
    /// back are stored with the guard's release (one call when the saver can),
    /// and the run keeps its state warm once they are. A run that failed has
    /// stored what it could ([`settle_puts`](Self::settle_puts)).
    pub(super) async fn end_run(
        &mut self,
        guard: crate::checkpoint::RunGuard,
        result: Result<super::GraphOutput<Arc<S>>, GraphError>,
    ) -> Result<super::GraphOutput<Arc<S>>, GraphError> {
        if let Some(p) = self
            .persist
            .saver
            .as_ref()
            .filter(|_| self.nested.is_none())
        {
            // Nested runs cancelled by their task (a node that stopped
            // waiting for a subgraph) store before the thread is let go.
            super::cancel::settle(&p.saver, &p.thread).await;
        }
        let output = match result {
            Ok(output) => output,
            Err(e) => {
                self.settle_puts(&e).await;
                guard.release().await;
                return Err(e);
            }
        };
        match (&self.persist.saver, self.persist.deferred.take()) {
            (Some(p), Some(deferred)) => {
                let (parent, puts) = *deferred;
                guard.release_after(&*p.saver, &parent, puts).await?;
            }
            _ => guard.release().await,
        }
        if std::mem::take(&mut self.persist.event_at_release) {
            self.emit_checkpoint(&[]);
        }
        self.keep_warm();
        Ok(output)
    }

    /// A run dropped while it holds its thread (cancelled: a stream whose
    /// reader stopped reading, an `invoke` under a timeout): the checkpoints
    /// it made and has not stored (held back under `sync`; under `exit`, the
    /// current one) are handed to its guard's release, as LangGraph's loop
    /// stores its current checkpoint when it exits, however it exits. What
    /// the reader was shown is then what the thread reads.
    ///
    /// The release starts here: a saver that answers at once (in memory) has
    /// stored and let the thread go before the run's drop returns; one that
    /// must wait for its database goes on in a tokio task (its thread is busy
    /// until then, as while the run ran). Without a tokio runtime (another
    /// executor drove the run) only that first poll runs: what the saver
    /// stored or queued in it is kept (the in-memory saver's put, the SQLite
    /// saver's job), the rest is dropped with a warning. While panicking,
    /// nothing more is stored and the guard is dropped, which lets the thread
    /// go.
    pub(super) fn store_when_cancelled(
        &mut self,
        guard: crate::checkpoint::RunGuard,
        mut lease: Option<lease::ThreadLease>,
    ) {
        if std::thread::panicking() {
            return;
        }
        let runtime = tokio::runtime::Handle::try_current().ok();
        let (puts, writes) = match self.unstored_puts() {
            Ok(puts) => puts,
            Err(e) => {
                tracing::warn!(error = %e, "a cancelled run could not make its last checkpoint");
                (None, Vec::new())
            }
        };
        let background = self.persist.background_put.take();
        let nested = self.nested.is_some();
        // With nothing of its own to store, the run still releases its guard
        // where a runtime can finish that (PostgreSQL removes its lease row
        // once the writes under way have ended, rather than leaving it for
        // the next run to fence out with a warning), and a root run waits for
        // the tasks it aborted and its nested runs' stores first. Without a
        // runtime the guard is dropped.
        let own = puts.is_some() || background.is_some();
        let Some(p) = self.persist.saver.as_ref().filter(|p| {
            own || (runtime.is_some() && guard.is_held())
                || (!nested && p.cancel_thread().has_pending())
        }) else {
            return;
        };
        // A run of the thread started meanwhile in this process waits for
        // this one to finish storing, rather than failing with `ThreadBusy`.
        if let Some(lease) = &mut lease {
            lease.closing();
        }
        let (saver, thread) = (Arc::clone(&p.saver), p.cancel_thread());
        let mut release = Box::pin(async move {
            // The root run: nested runs cancelled with it store first (their
            // writes go through its lease). A nested run's store waits for
            // nothing (no two stores wait for each other).
            if !nested {
                thread.settle().await;
            }
            // The put still going on in the background first (durability
            // `async`): the thread is let go once it is stored. What was made
            // after a put that failed is not stored: it names values that put
            // held.
            let mut puts = puts;
            if let Some(background) = background
                && let Err(e) = background_result(background.await)
            {
                tracing::warn!(error = %e, "a cancelled run's last put failed");
                puts = None;
            }
            let stored = match puts {
                Some((parent, puts)) if writes.is_empty() => {
                    guard.release_after(&*saver, &parent, puts).await
                }
                Some((parent, puts)) => {
                    // The writes of the tasks that completed in the step the
                    // run was cancelled in go with the last checkpoint, before
                    // the thread is let go.
                    let stored = async {
                        let last = saver.put_chain(&parent, puts).await?;
                        for (task_id, rows) in writes {
                            saver.put_writes(&last, rows, &task_id).await?;
                        }
                        Ok(())
                    }
                    .await;
                    guard.release().await;
                    stored
                }
                None => {
                    guard.release().await;
                    Ok(())
                }
            };
            drop(lease);
            if let Err(e) = stored {
                tracing::warn!(error = %e, "a cancelled run could not store its last checkpoint");
            }
        });
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if release.as_mut().poll(&mut cx).is_pending() {
            match runtime {
                // The root run's release waits for a nested one's store.
                Some(runtime) if nested => {
                    p.cancel_thread().register(runtime.spawn(release));
                }
                Some(runtime) => drop(runtime.spawn(release)),
                None => tracing::warn!(
                    "a cancelled run's saver did not store at once and no tokio runtime is there \
                     to finish it: what it had not stored is dropped"
                ),
            }
        }
    }

    /// The checkpoints a cancelled run made and has not stored, as a chain,
    /// and the pending writes of the last one's tasks to store after it
    /// (durability `exit`; see
    /// [`store_when_cancelled`](Self::store_when_cancelled)).
    fn unstored_puts(
        &mut self,
    ) -> Result<(Option<crate::checkpoint::LastPuts>, Vec<Rows>), GraphError> {
        let mut chain = self.persist.deferred.take();
        let mut writes = Vec::new();
        if self.persist.durability() == Some(Durability::Exit) && !self.persist.saved {
            let (put, _) = self.step_put(self.persist.pending_source)?;
            if let Some(p) = &mut self.persist.saver {
                writes = std::mem::take(&mut p.step_writes);
                chain
                    .get_or_insert_with(|| Box::new((p.config.clone(), Vec::new())))
                    .1
                    .push(put);
            }
        }
        Ok((chain.map(|chain| *chain), writes))
    }

    /// Stores through the guard's writer when it has one (a saver view that
    /// fences this run's writes; see `RunGuard::with_writer`). Graphs nested in
    /// the run use it too: they take the saver from the run.
    pub(super) fn write_through(&mut self, guard: &crate::checkpoint::RunGuard) {
        if let (Some(p), Some(writer)) = (&mut self.persist.saver, guard.writer()) {
            p.saver = Arc::clone(writer);
        }
    }

    /// The lease on this run's thread and namespace (none without a saver).
    pub(super) async fn lease(&self) -> Result<Option<lease::ThreadLease>, GraphError> {
        match &self.persist.saver {
            Some(p) => lease::ThreadLease::acquire(&p.saver, &p.thread, &self.ns)
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    /// Loads the thread's checkpoint (the addressed one, or the latest).
    pub(super) async fn load(&mut self) -> Result<Option<CheckpointTuple>, GraphError> {
        let Some(p) = &self.persist.saver else {
            self.persist.checkpoint = ids::checkpoint_id(self.schedule.step);
            return Ok(None);
        };
        let tuple = match self.persist.preloaded.take() {
            Some(loaded) => loaded,
            None => p.saver.get_tuple(&p.config).await?,
        };
        match &tuple {
            Some(tuple) => {
                let warm = self.warm.as_ref().and_then(|warm| {
                    warm.take(
                        &p.config.thread_id,
                        &p.config.checkpoint_ns,
                        &tuple.checkpoint.id,
                    )
                });
                self.restore_from(tuple, warm)?;
                self.persist.checkpoint_step = tuple.metadata.step;
                self.persist.pending_source = tuple.metadata.source;
                self.schedule.step = tuple.metadata.step + 1;
                if let Some(bytes) = ids::parse_uuid(&tuple.checkpoint.id) {
                    self.persist.checkpoint = bytes;
                }
                self.persist.saved = true;
                if let Some(p) = &mut self.persist.saver {
                    // The tuple's config names this checkpoint: its text is shared.
                    p.config.checkpoint_id = Some(match &tuple.config.checkpoint_id {
                        Some(id) if *id == tuple.checkpoint.id => id.clone(),
                        _ => tuple.checkpoint.id.as_str().into(),
                    });
                    // (Copied: `update_state`'s `__copy__` reads the tuple's.)
                    p.parent_id = tuple
                        .parent_config
                        .as_ref()
                        .and_then(|parent| parent.checkpoint_id.clone());
                }
            }
            None => {
                // A thread's first run leaves nothing warm: many threads run
                // once, and keeping the state would cost the output a copy.
                self.warm = None;
                if let Some(id) = &p.config.checkpoint_id {
                    return Err(GraphError::Checkpoint(
                        crate::checkpoint::CheckpointError::NotFound {
                            thread_id: p.config.thread_id.to_string(),
                            checkpoint_ns: p.config.checkpoint_ns.to_string(),
                            checkpoint_id: id.to_string(),
                        },
                    ));
                }
                self.persist.checkpoint = ids::checkpoint_id(self.schedule.step);
            }
        }
        Ok(tuple)
    }

    /// A run that ended with its state stored (as the checkpoint it loaded or
    /// the last it put, nothing changed since) leaves the state for the next
    /// run of its thread (see `warm`).
    pub(super) fn keep_warm(&self) {
        let (Some(warm), Some(p)) = (&self.warm, &self.persist.saver) else {
            return;
        };
        let Some(id) = &p.config.checkpoint_id else {
            return;
        };
        if self.persist.saved
            && self.persist.background_put.is_none()
            && self.schedule.versions.changed.is_empty()
        {
            warm.keep(
                &p.thread,
                &self.ns,
                id,
                Arc::clone(&self.state),
                self.fields.clone(),
            );
        }
    }

    /// Creates the checkpoint of the current state and stores it as the durability
    /// mode says; the step's new checkpoint id is taken either way.
    pub(super) async fn save(&mut self, source: CheckpointSource) -> Result<(), GraphError> {
        self.persist.new_checkpoint(self.schedule.step, source);
        match self.persist.durability() {
            Some(Durability::Exit) | None => Ok(()),
            // Stored before the next node runs, or with the thread's release
            // (see `Persist::deferred`).
            Some(Durability::Sync) if source != CheckpointSource::Update => {
                self.put_checkpoint(source, true).await
            }
            Some(_) => self.put_current(source).await,
        }
    }

    /// Stores the state as a checkpoint of `source` at the current step.
    /// Whatever the durability mode (updates and forks are stored at once).
    pub(super) async fn store_update(
        &mut self,
        source: CheckpointSource,
    ) -> Result<(), GraphError> {
        self.persist.new_checkpoint(self.schedule.step, source);
        self.put_current(source).await?;
        self.persist.flush_puts().await
    }

    /// Stores the current checkpoint (if not stored yet).
    pub(super) async fn put_current(&mut self, source: CheckpointSource) -> Result<(), GraphError> {
        self.put_checkpoint(source, false).await
    }

    /// Stores the current checkpoint (if not stored yet), with the held-back
    /// `input` checkpoint before it if there is one; `defer`: holds this one
    /// back instead (see `Persist::deferred`).
    async fn put_checkpoint(
        &mut self,
        source: CheckpointSource,
        defer: bool,
    ) -> Result<(), GraphError> {
        if self.persist.saved {
            return Ok(());
        }
        let Some(durability) = self.persist.durability() else {
            return Ok(());
        };
        let in_background = durability == Durability::Async
            && source == CheckpointSource::Loop
            && tokio::runtime::Handle::try_current().is_ok();
        let (put, shared_id) = self.step_put(source)?;
        if defer || self.persist.deferred.is_some() || self.persist.background_put.is_some() {
            // Held back (after any held before it) while the put before it
            // finishes: a run cancelled meanwhile stores it with the release
            // of its thread (`store_when_cancelled`).
            self.persist.hold(put);
            // Puts are ordered: the previous one finishes before the next starts.
            if let Err(e) = self.persist.flush_background().await {
                // Never stored after a put that failed: it names values that
                // put held.
                self.persist.unhold_last();
                return Err(e);
            }
            if !defer {
                self.persist.store_held(in_background).await?;
            }
        } else {
            self.persist.store(None, put, in_background).await?;
        }
        let Some(p) = &mut self.persist.saver else {
            return Ok(());
        };
        // The next checkpoint descends from this one.
        p.parent_id = p.config.checkpoint_id.replace(shared_id);
        self.persist.saved = true;
        Ok(())
    }

    /// The current checkpoint as a put (with the step's pending writes), and
    /// its id.
    fn step_put(
        &mut self,
        source: CheckpointSource,
    ) -> Result<(crate::checkpoint::StepPut, SharedStr), GraphError> {
        let id = ids::format_uuid(&self.persist.checkpoint);
        let shared_id = SharedStr::from(id.as_str());
        // `update_state` checkpoints record no updated channels (docs/semantics.md
        // §6.1, §7.3): whoever loads one considers every node.
        let with_updated = self.schedule.updated_known && source != CheckpointSource::Update;
        let (checkpoint, new_versions, appends) = self.create_checkpoint(id, with_updated)?;
        // The checkpoint holds every change so far: the next one holds only later ones.
        self.schedule.versions.clear_changed();
        let metadata = self.metadata(source, self.persist.checkpoint_step);
        // The rows held under `exit` are the writes of this checkpoint's own
        // tasks, stored after it (`put_step_writes`); otherwise they are its
        // parent's, stored first.
        let writes = self
            .persist
            .saver
            .as_mut()
            .filter(|p| p.durability != Durability::Exit)
            .map(|p| std::mem::take(&mut p.step_writes))
            .unwrap_or_default();
        let put =
            crate::checkpoint::StepPut::new(writes, checkpoint, metadata, new_versions, appends);
        Ok((put, shared_id))
    }

    /// Stores the rows of [`Saver::step_writes`] against the current
    /// checkpoint, now (a step that pauses, leaves for the parent or fails to
    /// apply its writes puts no checkpoint of its own that would store them).
    pub(super) async fn put_step_writes(&mut self) -> Result<(), GraphError> {
        if self
            .persist
            .saver
            .as_ref()
            .is_none_or(|p| p.step_writes.is_empty())
        {
            return Ok(());
        }
        if !self.persist.saved {
            // Held under `exit` for a checkpoint the run does not store (its
            // last step failed to apply its writes): nothing to store them
            // against.
            if let Some(p) = &mut self.persist.saver {
                p.step_writes.clear();
            }
            return Ok(());
        }
        self.persist.flush_puts().await?;
        if let Some(p) = &mut self.persist.saver {
            for (task_id, rows) in std::mem::take(&mut p.step_writes) {
                p.saver.put_writes(&p.config, rows, &task_id).await?;
            }
        }
        Ok(())
    }

    /// The end of a run: the final checkpoint is stored (durability `exit`) and
    /// every background put has completed.
    pub(super) async fn save_on_exit(&mut self) -> Result<(), GraphError> {
        let source = self.persist.pending_source;
        // Held back for the thread's release when the run's end stores it.
        let defer = self.persist.stored_at_release;
        self.put_checkpoint(source, defer).await?;
        self.persist.flush_at_end().await
    }

    pub(super) fn current_config(&self) -> Result<CheckpointConfig, GraphError> {
        self.persist
            .saver
            .as_ref()
            .map(|p| p.config.clone())
            .ok_or(GraphError::NoCheckpointer("update_state"))
    }

    /// Node `node` ran and saw versions up to `seen` (see `persist::Book::ran`).
    pub(super) fn ran(&mut self, node: usize, seen: u64) {
        if let Some(p) = &mut self.persist.saver {
            p.book.ran(&self.graph.nodes, node, seen);
        }
    }
}
