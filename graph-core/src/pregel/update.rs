//! `update_state` and `bulk_update_state`: writes applied as if nodes had
//! produced them, stored as new checkpoints (docs/semantics.md §7).

use super::writes::TaskResult;
use super::{Run, Task, COPY, INPUT};
use crate::checkpoint::{CheckpointConfig, CheckpointSource, CheckpointTuple};
use crate::error::{ConfigError, GraphError};
use crate::ids::{self, TaskOrder};
use crate::snapshot::NodeUpdate;
use crate::state::State;
use crate::unwind;
use std::sync::Arc;

impl<S: State> Run<S> {
    /// `update_state`: writes `values` as if node `as_node` had produced them,
    /// on top of the addressed (or latest) checkpoint, and stores the result as a
    /// new `update` checkpoint. Returns its config.
    pub(crate) async fn update_state(
        self,
        values: Option<S::Update>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig, GraphError> {
        self.bulk_update_state(vec![vec![NodeUpdate {
            values,
            as_node: as_node.map(str::to_owned),
        }]])
        .await
    }

    /// `bulk_update_state`: each superstep is a list of `(values, as_node)` applied
    /// together and stored as one checkpoint (docs/semantics.md §7.4).
    pub(crate) async fn bulk_update_state(
        mut self,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError> {
        if supersteps.is_empty() {
            return Err(GraphError::InvalidConfig(ConfigError::NoSupersteps));
        }
        if supersteps.iter().any(Vec::is_empty) {
            return Err(GraphError::InvalidConfig(ConfigError::NoUpdates));
        }
        let _lease = self.lease().await?;
        let guard = self.begin_run().await?;
        self.write_through(&guard);
        let result = unwind::contain(self.bulk_update_steps(supersteps)).await;
        guard.release().await;
        result
    }

    pub(super) async fn bulk_update_steps(
        mut self,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError> {
        let invalid = |m: &str| GraphError::InvalidUpdate(crate::error::InvalidUpdateError::new(m));
        let mut loaded = self.load().await?;
        let limit = self.limit();
        for updates in supersteps {
            let special = updates.iter().find_map(|u| {
                u.as_node
                    .as_deref()
                    .filter(|n| [COPY, INPUT, crate::END].contains(n))
            });
            if let Some(special) = special
                && updates.len() > 1
            {
                return Err(invalid(&format!(
                    "{special} cannot be combined with other updates in one superstep"
                )));
            }
            if updates.len() > 1 && updates.iter().any(|u| u.as_node.is_none()) {
                return Err(invalid(
                    "as_node is required when applying multiple updates",
                ));
            }
            match special {
                Some(COPY) => {
                    let copied = self.copy_checkpoint(loaded).await?;
                    return Ok(copied);
                }
                Some(INPUT) => {
                    // The values are graph input: an `input` checkpoint, `__start__` next.
                    let update = updates.into_iter().next().and_then(|u| u.values);
                    let update = update.ok_or_else(|| invalid("__input__ needs values"))?;
                    self.schedule.limit_steps(limit);
                    self.apply_graph_input(update)?;
                    self.store_update(CheckpointSource::Input).await?;
                }
                Some(_) => {
                    // END: tasks that completed keep their writes, the others are
                    // marked as run without writes: nothing is left to run.
                    self.schedule.limit_steps(1);
                    let mut tasks = self.prepare()?;
                    let restored = match &loaded {
                        Some(tuple) if !tuple.pending_writes.is_empty() => {
                            self.restore_pending(tuple, &tasks, &tuple.pending_writes, true)?
                                .0
                        }
                        _ => tasks.iter().map(|_| None).collect(),
                    };
                    let results = restored
                        .into_iter()
                        .map(|w| TaskResult::Restored(w.unwrap_or_default()))
                        .collect();
                    for task in &mut tasks {
                        task.input = None;
                    }
                    self.apply(&tasks, results, None, true)?;
                    self.store_update(CheckpointSource::Update).await?;
                }
                None => {
                    let graph = Arc::clone(&self.graph);
                    let mut tasks = Vec::with_capacity(updates.len());
                    let mut results = Vec::with_capacity(updates.len());
                    for (i, NodeUpdate { values, as_node }) in updates.into_iter().enumerate() {
                        let node = match as_node.as_deref() {
                            Some(name) => *graph
                                .node_by_name
                                .get(name)
                                .ok_or_else(|| invalid(&format!("Node {name} does not exist")))?,
                            None => self.schedule.infer_as_node(self.graph.nodes.len())?,
                        };
                        let mut out = crate::node::NodeOutput::default();
                        if let Some(values) = values {
                            out = out.with_update(values);
                        }
                        let task = Task {
                            node,
                            // A pseudo task (LangGraph's triggers `[__interrupt__]`):
                            // no trigger is consumed, but the step is bumped.
                            path: TaskOrder::Push(i),
                            id: String::new(),
                            input: None,
                        };
                        results.push(TaskResult::Restored(self.resolve_alone(&task, out)?));
                        tasks.push(task);
                    }
                    if loaded.is_none() && self.schedule.versions.max == 0 {
                        self.schedule.step = 0;
                    }
                    self.apply(&tasks, results, None, true)?;
                    self.store_update(CheckpointSource::Update).await?;
                }
            }
            // The next superstep builds on the checkpoint just stored.
            loaded = None;
            self.schedule.step += 1;
        }
        self.current_config()
    }

    /// Writes graph input to `__start__`. Tasks still pending at the current
    /// checkpoint are discarded: their triggers are marked seen, they never run.
    /// On a fresh thread there are none, and the write does not bump the step.
    pub(super) fn apply_graph_input(&mut self, update: S::Update) -> Result<(), GraphError> {
        let discarded = self.prepare()?;
        let results = discarded
            .iter()
            .map(|_| TaskResult::Restored(Default::default()))
            .collect();
        let bump = !discarded.is_empty();
        self.apply(&discarded, results, Some(vec![update]), bump)
    }

    /// `update_state(.., as_node = "__copy__")`: the checkpoint again, unchanged, as a
    /// sibling (same parent) with a new id and source `fork`.
    pub(super) async fn copy_checkpoint(
        self,
        loaded: Option<CheckpointTuple>,
    ) -> Result<CheckpointConfig, GraphError> {
        let Some(p) = &self.persist.saver else {
            return Err(GraphError::NoCheckpointer("update_state"));
        };
        let Some(tuple) = loaded else {
            return Err(GraphError::InvalidUpdate(
                crate::error::InvalidUpdateError::new(
                    "Cannot copy a checkpoint of a thread that has none",
                ),
            ));
        };
        let mut checkpoint = tuple.checkpoint.clone();
        checkpoint.id = ids::format_uuid(&ids::checkpoint_id(tuple.metadata.step + 1));
        checkpoint.ts = ids::now_iso8601();
        let mut metadata = tuple.metadata.clone();
        metadata.source = CheckpointSource::Fork;
        metadata.step = tuple.metadata.step + 1;
        let parent = CheckpointConfig {
            checkpoint_id: tuple
                .parent_config
                .as_ref()
                .and_then(|c| c.checkpoint_id.clone()),
            ..tuple.config.clone()
        };
        // Every version is already stored: the copy adds no blob.
        let stored = p
            .saver
            .put(&parent, checkpoint, metadata, Default::default())
            .await?;
        Ok(stored)
    }
}
