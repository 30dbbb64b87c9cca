//! A saver for tests: the in-memory saver, with a hook called before each of
//! its puts and, optionally, the guard its runs get (`Checkpointer::begin_run`;
//! without one, the trait's default: runs write through the saver itself, so
//! every put meets the hook).

use futures::future::BoxFuture;
use stategraph::checkpoint::{
    ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata,
    CheckpointTuple, Checkpointer, InMemorySaver, ListOptions, Retention, RunGuard,
};
use std::sync::Arc;

type PutHook = Box<dyn Fn(&CheckpointMetadata) + Send + Sync>;
type GuardHook = Box<dyn Fn(Arc<InMemorySaver>) -> RunGuard + Send + Sync>;
type NestedHook = Box<dyn Fn() + Send + Sync>;

pub(crate) struct HookedSaver {
    inner: Arc<InMemorySaver>,
    on_put: PutHook,
    guard: Option<GuardHook>,
    /// Puts in a subgraph's namespace wait for a permit of the gate, and
    /// call the hook once stored.
    nested: Option<(Arc<tokio::sync::Semaphore>, NestedHook)>,
}

impl HookedSaver {
    /// `inner`, with no hooks yet.
    pub(crate) fn new(inner: Arc<InMemorySaver>) -> Self {
        HookedSaver {
            inner,
            on_put: Box::new(|_| {}),
            guard: None,
            nested: None,
        }
    }

    /// Holds each put in a subgraph's namespace until `gate` has a permit,
    /// and calls `stored` once it is stored.
    pub(crate) fn gate_nested_puts(
        mut self,
        gate: Arc<tokio::sync::Semaphore>,
        stored: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        self.nested = Some((gate, Box::new(stored)));
        self
    }

    /// Calls `hook` with each put's metadata before the put (a hook that
    /// panics makes the put panic).
    pub(crate) fn on_put(
        mut self,
        hook: impl Fn(&CheckpointMetadata) + Send + Sync + 'static,
    ) -> Self {
        self.on_put = Box::new(hook);
        self
    }

    /// Gives each run the guard `guard` makes (handed the inner saver).
    pub(crate) fn guard(
        mut self,
        guard: impl Fn(Arc<InMemorySaver>) -> RunGuard + Send + Sync + 'static,
    ) -> Self {
        self.guard = Some(Box::new(guard));
        self
    }
}

impl Checkpointer for HookedSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        self.inner.get_tuple(config)
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        self.inner.list(config, options)
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        (self.on_put)(&metadata);
        match &self.nested {
            Some((gate, stored)) if !config.checkpoint_ns.is_empty() => Box::pin(async move {
                drop(gate.acquire().await);
                let put = self
                    .inner
                    .put(config, checkpoint, metadata, new_versions)
                    .await;
                stored();
                put
            }),
            _ => self.inner.put(config, checkpoint, metadata, new_versions),
        }
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, stategraph::checkpoint::Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.put_writes(config, writes, task_id)
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_thread(thread_id)
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        self.inner.prune(thread_id, retention)
    }

    fn begin_run<'a>(
        &'a self,
        _thread_id: &'a str,
        _checkpoint_ns: &'a str,
    ) -> BoxFuture<'a, Result<RunGuard, CheckpointError>> {
        let guard = match &self.guard {
            Some(guard) => guard(Arc::clone(&self.inner)),
            None => RunGuard::none(),
        };
        Box::pin(std::future::ready(Ok(guard)))
    }
}
