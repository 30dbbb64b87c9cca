//! A run's lease on its thread: a row of `stategraph_thread_leases` with a
//! generation, checked in the same transaction as each of the run's writes.
//!
//! `begin_run` grants the lease while it holds the thread's advisory lock: it
//! replaces the thread's row with one naming the run (its owner id) and a new
//! generation from a sequence, so generations never repeat. Every `put` and
//! `put_writes` of the run reads that row `FOR SHARE` in its own transaction
//! and writes only if the row still names the run's generation; a later grant
//! (another worker's run, after this one's lock was lost), a `delete_thread` or
//! a `prune` replaces or removes the row, and waits for a write that holds it
//! shared. A run that lost its thread is therefore *fenced out*: its next write
//! fails with `CheckpointError::LeaseLost` and stores nothing, whatever it
//! believes about its lock. The run's release removes its row, once the
//! run's writes under way have ended (`LeasedSaver::in_flight`): a cancelled run's writes
//! run to their end on tasks of their own, and one that had not read the row
//! yet would otherwise be fenced out by its own run's release.

use crate::lock::LockState;
use crate::{to_the_end, PgError, PostgresSaver};
use futures::future::BoxFuture;
use graph_core::checkpoint::{
    Append, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointTuple, Checkpointer, ListOptions, NameMap, Retention, StepPut,
};
use std::sync::Arc;
use tokio_util::task::TaskTracker;

/// The lease table and the sequence of its generations (tables of stategraph's
/// own, outside LangGraph's migration numbering).
pub(crate) const CREATE: &str = "
CREATE SEQUENCE IF NOT EXISTS stategraph_thread_lease_generation;
CREATE TABLE IF NOT EXISTS stategraph_thread_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    generation BIGINT NOT NULL,
    granted_at TIMESTAMPTZ NOT NULL DEFAULT now()
);";

/// What a write of a leased run proves: the thread, the run's owner id and the
/// generation of its grant.
#[derive(Debug, Clone)]
pub(crate) struct Fence {
    pub(crate) thread_id: String,
    pub(crate) owner: String,
    pub(crate) generation: i64,
}

impl Fence {
    /// The error of a write this fence no longer allows; `holder` is the row
    /// found instead (owner, generation), if any.
    pub(crate) fn lost(&self, holder: Option<(String, i64)>) -> PgError {
        let reason = match holder {
            Some((owner, generation)) if owner == self.owner => format!(
                "the thread was granted again (generation {generation}, this run has \
                 {})",
                self.generation
            ),
            Some((owner, _)) => format!("another run (lease owner `{owner}`) has taken it over"),
            None => "its lease was removed: the thread was deleted or pruned, or taken over \
                     by a run that has ended since"
                .to_owned(),
        };
        PgError::LeaseLost {
            thread_id: self.thread_id.clone(),
            owner: self.owner.clone(),
            reason,
        }
    }
}

/// The saver as a run sees it while it holds its lease: reads as the saver's,
/// writes fenced by the lease (see the module docs).
pub(crate) struct LeasedSaver {
    pub(crate) saver: PostgresSaver,
    pub(crate) fence: Fence,
    /// The thread's lock (the run's own, or the `lock_thread` it runs under):
    /// once it is known lost, writes fail without asking the database.
    pub(crate) lock: Arc<LockState>,
    /// The run's writes under way: each runs to its end on a task of its own
    /// ([`to_the_end`]), also when the run that asked for it was cancelled,
    /// and holds a token until then; the run's release waits for them before
    /// it removes the lease row, which would fence them out.
    pub(crate) in_flight: TaskTracker,
}

impl LeasedSaver {
    fn check_lock(&self) -> Result<(), PgError> {
        match self.lock.lost() {
            Some(reason) => Err(PgError::LeaseLost {
                thread_id: self.fence.thread_id.clone(),
                owner: self.fence.owner.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// The fence for a write of `thread_id` (a run writes only its own thread;
    /// anything else is a bug of the caller's, refused rather than unfenced).
    fn fence_for(&self, thread_id: &str) -> Result<&Fence, PgError> {
        if thread_id != self.fence.thread_id {
            return Err(PgError::InvalidInput(format!(
                "a run holding thread `{}` cannot write thread `{thread_id}`",
                self.fence.thread_id
            )));
        }
        self.check_lock()?;
        Ok(&self.fence)
    }
}

impl LeasedSaver {
    /// What a write of `config` takes onto its own task ([`to_the_end`]): the
    /// saver, the fence (checked now, before anything is written) and the
    /// config.
    fn fenced(
        &self,
        config: &CheckpointConfig,
    ) -> Result<(PostgresSaver, Fence, CheckpointConfig), CheckpointError> {
        let fence = self.fence_for(&config.thread_id)?.clone();
        Ok((self.saver.clone(), fence, config.clone()))
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
        let write = self.fence_for(&config.thread_id).map(|fence| {
            let fenced = (fence.clone(), self.in_flight.token());
            self.saver.put_to_the_end(config, put, Some(fenced))
        });
        Box::pin(async move { write?.await })
    }

    /// The checkpoints one after the other, fenced, on one task (see
    /// [`to_the_end`]).
    fn put_chain<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        puts: Vec<StepPut>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        let write = self.fenced(config).map(|(saver, fence, config)| {
            self.in_flight.track_future(async move {
                saver.put_chain_fenced(config, puts, Some(&fence)).await
            })
        });
        Box::pin(async move { to_the_end(write?).await })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let task_id = task_id.to_owned();
        let write = self.fenced(config).map(|(saver, fence, config)| {
            self.in_flight.track_future(async move {
                saver
                    .put_writes_fenced(&config, writes, &task_id, Some(&fence))
                    .await
            })
        });
        Box::pin(async move { to_the_end(write?).await })
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
