//! Building [`StateSnapshot`]s from stored checkpoints (docs/semantics.md §7.1,
//! §7.2).

use super::writes::TaskResult;
use super::{persist, Run};
use crate::checkpoint::{CheckpointTuple, PendingWrite};
use crate::error::GraphError;
use crate::ids::TaskOrder;
use crate::interrupt::Interrupt;
use crate::snapshot::{SnapshotTask, StateSnapshot, TaskPath};
use crate::state::State;
use std::sync::Arc;

impl<S: State> Run<S> {
    /// The snapshot of `tuple`. With `apply_pending` (the latest checkpoint, no id
    /// given), writes of tasks that completed are applied to the values.
    pub(crate) fn snapshot_of(
        mut self,
        tuple: &CheckpointTuple,
        apply_pending: bool,
    ) -> Result<StateSnapshot<S>, GraphError> {
        self.restore(tuple)?;
        self.schedule.step = tuple.metadata.step + 1;
        self.schedule.limit_steps(1);
        if let Some(bytes) = crate::ids::parse_uuid(&tuple.checkpoint.id) {
            self.persist.checkpoint = bytes;
        }
        let tasks = self.prepare()?;
        self.apply_null_writes(tuple, &tuple.pending_writes)?;
        let mut snapshot_tasks = Vec::with_capacity(tasks.len());
        let mut next = Vec::new();
        let mut with_writes = Vec::new();
        let mut results = Vec::new();
        let mut all_interrupts = Vec::new();
        for task in &tasks {
            let rows: Vec<&PendingWrite> = tuple
                .pending_writes
                .iter()
                .filter(|w| w.task_id == task.id)
                .collect();
            let error = rows.iter().find(|w| w.channel == persist::ERROR).map(|w| {
                w.value
                    .decode::<String>()
                    .unwrap_or_else(|_| w.value.as_str().to_owned())
            });
            let writes: Vec<&PendingWrite> = rows
                .iter()
                .copied()
                .filter(|w| !persist::is_control(&w.channel))
                .collect();
            // A task that completed since it paused no longer waits: the latest
            // state drops its interrupts; a checkpoint read as stored (by id,
            // in the history) keeps them, as LangGraph does.
            let mut interrupts: Vec<Interrupt> = Vec::new();
            if writes.is_empty() || !apply_pending {
                for w in rows.iter().filter(|w| w.channel == persist::INTERRUPT) {
                    interrupts.extend(super::resume::decode_interrupts(tuple, w)?);
                }
            }
            all_interrupts.extend(interrupts.iter().cloned());
            let name = self.graph.nodes[task.node].name.to_string();
            // A task's stored result is always shown; only for the latest checkpoint
            // are the writes attached (the task leaves `next`, values include them).
            let result = if writes.is_empty() {
                next.push(name.clone());
                None
            } else {
                let decoded = self.decode_writes(tuple, &writes)?;
                let updates = decoded.updates.clone();
                if apply_pending {
                    with_writes.push(task.without_input());
                    results.push(TaskResult::Restored(decoded));
                } else {
                    next.push(name.clone());
                }
                Some(updates)
            };
            let path = match task.path {
                TaskOrder::Pull(_) => TaskPath::Pull { node: name.clone() },
                TaskOrder::Push(index) => TaskPath::Push { index },
            };
            snapshot_tasks.push(SnapshotTask {
                id: task.id.clone(),
                name,
                path,
                error,
                result,
                interrupts,
                checkpoint_ns: match self.ns.is_empty() {
                    true => format!("{}:{}", self.graph.nodes[task.node].name, task.id),
                    false => format!(
                        "{}|{}:{}",
                        self.ns, self.graph.nodes[task.node].name, task.id
                    ),
                },
                state: None,
            });
        }
        if apply_pending && !with_writes.is_empty() {
            self.apply(&with_writes, results, None, true)?;
        }
        let values = Arc::try_unwrap(self.state).unwrap_or_else(|s| (*s).clone());
        Ok(StateSnapshot {
            values,
            next,
            config: tuple.config.clone(),
            metadata: Some(tuple.metadata.clone()),
            created_at: Some(tuple.checkpoint.ts.clone()),
            parent_config: tuple.parent_config.clone(),
            tasks: snapshot_tasks,
            interrupts: all_interrupts,
        })
    }
}
