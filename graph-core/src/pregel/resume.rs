//! Continuing a thread from its checkpoint (docs/semantics.md §2.1, §4.3, §5.4):
//! a `Command` given as input becomes writes not tied to a task (persisted, then
//! applied before the first superstep), resume values reach the tasks that asked,
//! and replaying an old checkpoint forks it.

use super::persist::{self, NULL_TASK_ID};
use super::writes::{ControlWrite, TaskResult, TaskWrites};
use super::{Run, Task};
use crate::checkpoint::{Blob, CheckpointSource, CheckpointTuple, PendingWrite};
use crate::command::{Destination, GotoTarget, Route};
use crate::error::{EmptyInputError, GraphError, InvalidUpdateError, ResumeError};
use crate::interrupt::decode_answers;
use crate::interrupt::{interrupt_id, Interrupt, NullResume, Resume};
use crate::io::InputCommand;
use crate::state::{FieldSet, State, StateUpdate};
use crate::stream::{StreamEvent, StreamMode};
use std::sync::Arc;

/// The interrupts of `pending` whose task has not completed since (a task that
/// completed has writes besides its control writes).
pub(super) fn waiting_interrupts(
    tuple: &CheckpointTuple,
    pending: &[PendingWrite],
) -> Result<Vec<Interrupt>, GraphError> {
    let mut out: Vec<Interrupt> = Vec::new();
    for w in pending.iter().filter(|w| w.channel == persist::INTERRUPT) {
        let completed = pending
            .iter()
            .any(|o| o.task_id == w.task_id && !persist::is_control(&o.channel));
        if completed || w.task_id == NULL_TASK_ID {
            continue;
        }
        out.extend(decode_interrupts(tuple, w)?);
    }
    Ok(out)
}

/// The interrupts stored in an `__interrupt__` write.
pub(super) fn decode_interrupts(
    tuple: &CheckpointTuple,
    w: &PendingWrite,
) -> Result<Vec<Interrupt>, GraphError> {
    w.value.decode().map_err(|e| {
        GraphError::Checkpoint(crate::checkpoint::CheckpointError::Corrupt {
            thread_id: tuple.config.thread_id.to_string(),
            checkpoint_id: tuple.checkpoint.id.clone(),
            what: format!("the interrupt of task {}", w.task_id),
            source: e.to_string().into(),
        })
    })
}

impl<S: State> Run<S> {
    /// A `Command` on a thread with no checkpoint (or a graph without a
    /// checkpointer): there is nothing to resume or route, so only its update
    /// counts, as ordinary input.
    pub(super) fn command_on_new_thread(
        &self,
        cmd: InputCommand<S>,
    ) -> Result<S::Update, GraphError> {
        if cmd.parent {
            return Err(InvalidUpdateError::new("There is no parent graph").into());
        }
        match &cmd.resume {
            Some(Resume::Invalid(error)) => return Err(GraphError::InvalidResume(error.clone())),
            Some(_) if self.persist.saver.is_none() => {
                return Err(GraphError::NoCheckpointer("Command::resume"))
            }
            Some(_) => {
                return Err(GraphError::InvalidResume(ResumeError::NoCheckpoint {
                    thread_id: self.config.thread_id().unwrap_or_default().to_owned(),
                }))
            }
            None => {}
        }
        if !cmd.goto.is_empty() {
            return Err(InvalidUpdateError::new(
                "Command::goto as graph input routes a thread that has a checkpoint; this thread \
                 has none — start it with input (routes from START decide where it goes)",
            )
            .into());
        }
        cmd.update
            .ok_or(GraphError::EmptyInput(EmptyInputError::EmptyCommand))
    }

    /// Continues the loaded checkpoint (input `None` or a `Command`), whose
    /// stored pending writes are `pending`: stores the command's writes,
    /// applies every write not tied to a task, forks when replaying, and
    /// returns the pending writes the first superstep uses.
    pub(super) async fn resume_from(
        &mut self,
        tuple: &CheckpointTuple,
        mut pending: Vec<PendingWrite>,
        cmd: Option<InputCommand<S>>,
        replaying: bool,
    ) -> Result<Vec<PendingWrite>, GraphError> {
        let resumes = cmd.as_ref().is_some_and(|c| c.resume.is_some());
        // Replaying re-asks every interrupt, unless the caller answers one now.
        let time_traveling = replaying && !resumes;
        if time_traveling {
            pending.retain(|w| w.channel != persist::RESUME);
        }
        if let Some(cmd) = cmd {
            self.store_command(tuple, cmd, &mut pending).await?;
        }
        if let Some(own) = pending
            .iter()
            .find(|w| w.task_id == NULL_TASK_ID && w.channel == persist::RESUME)
        {
            self.interrupts.null_resume = Some(Arc::new(NullResume::new(own.value.clone())));
        }
        self.apply_null_writes(tuple, &pending)?;
        // Breakpoints fire again only once something changes after this point.
        self.interrupts.seen = (0..self.graph.num_channels())
            .map(|c| self.schedule.versions[c])
            .collect();
        self.interrupts.seen_max = self.schedule.versions.max;
        self.interrupts.changed = false;
        if time_traveling
            && !matches!(
                tuple.metadata.source,
                CheckpointSource::Update | CheckpointSource::Fork
            )
        {
            // The fork has new task ids: the old interrupts no longer apply.
            pending.retain(|w| w.channel != persist::INTERRUPT);
            self.store_update(CheckpointSource::Fork).await?;
            self.schedule.step += 1;
            self.schedule.stop += 1;
        }
        if let Some(events) = self.stream.wanting(StreamMode::Values) {
            events.emit(StreamEvent::Values(Arc::clone(&self.state)));
        }
        Ok(pending)
    }

    /// Validates a `Command` given as input on a thread with a checkpoint, stores
    /// its writes as writes of no task, and adds them to `pending`.
    async fn store_command(
        &mut self,
        tuple: &CheckpointTuple,
        cmd: InputCommand<S>,
        pending: &mut Vec<PendingWrite>,
    ) -> Result<(), GraphError> {
        if cmd.parent {
            return Err(InvalidUpdateError::new("There is no parent graph").into());
        }
        let mut control = super::writes::ControlWrites::new();
        for route in &cmd.goto {
            match route {
                Route::To(target) => match target.destination() {
                    Destination::End => {}
                    Destination::Node(name) => match self.graph.node_by_name.get(name) {
                        Some(&n) if n != 0 => {
                            control.push(ControlWrite::Trigger(self.graph.branch_of[n]))
                        }
                        _ => {
                            return Err(InvalidUpdateError::new(format!(
                                "Command::goto names node `{name}`, which this graph does not have"
                            ))
                            .into())
                        }
                    },
                },
                Route::Send(send) => {
                    if !self.graph.node_by_name.contains_key(send.node()) {
                        return Err(InvalidUpdateError::new(format!(
                            "a Send in Command::goto names node `{}`, which this graph does not have",
                            send.node()
                        ))
                        .into());
                    }
                    control.push(ControlWrite::Send(send.clone()));
                }
            }
        }
        let mut rows = Vec::new();
        let writes = TaskWrites {
            updates: cmd.update.into_iter().filter(|u| !u.is_empty()).collect(),
            control,
        };
        if !writes.updates.is_empty() || !writes.control.is_empty() {
            rows = self.encode_writes(&writes)?;
        }
        let waiting = waiting_interrupts(tuple, pending)?;
        match cmd.resume {
            None => {}
            Some(Resume::Invalid(error)) => return Err(GraphError::InvalidResume(error)),
            Some(Resume::Value(value)) => {
                // Counted by interrupt id, as LangGraph does: the parallel
                // task calls of one entrypoint each have theirs.
                let ids: std::collections::BTreeSet<&str> =
                    waiting.iter().map(|w| w.id.as_str()).collect();
                if ids.len() > 1 {
                    return Err(GraphError::InvalidResume(ResumeError::Ambiguous {
                        pending: waiting.clone(),
                    }));
                }
                if ids.is_empty() && self.prepare()?.is_empty() {
                    return Err(self.nothing_to_resume());
                }
                rows.push((persist::RESUME.to_owned(), value));
            }
            Some(Resume::Map(map)) => {
                if waiting.is_empty() {
                    return Err(self.nothing_to_resume());
                }
                if let Some((id, _)) = map
                    .iter()
                    .find(|(id, _)| !waiting.iter().any(|w| &w.id == id))
                {
                    return Err(GraphError::InvalidResume(ResumeError::UnknownInterrupt {
                        id: id.clone(),
                        pending: waiting.clone(),
                    }));
                }
                self.interrupts.resume_map = map;
            }
        }
        if rows.is_empty() && self.interrupts.resume_map.is_empty() {
            return Err(GraphError::EmptyInput(EmptyInputError::EmptyCommand));
        }
        if rows.is_empty() {
            return Ok(());
        }
        // Writes of no task accumulate until the next checkpoint: the ones stored
        // before are stored again first (the saver keeps them; the new ones get the
        // following positions). A new resume value replaces the old one.
        let new_control = rows.iter().any(|(c, _)| persist::is_control(c));
        pending.retain(|w| {
            !(w.task_id == NULL_TASK_ID && new_control && persist::is_control(&w.channel))
        });
        let mut stored: Vec<(String, Blob)> = pending
            .iter()
            .filter(|w| w.task_id == NULL_TASK_ID && !persist::is_control(&w.channel))
            .map(|w| (w.channel.clone(), w.value.clone()))
            .collect();
        stored.extend(rows.iter().cloned());
        if let Some(p) = &self.persist.saver {
            p.saver.put_writes(&p.config, stored, NULL_TASK_ID).await?;
        }
        pending.extend(rows.into_iter().map(|(channel, value)| PendingWrite {
            task_id: NULL_TASK_ID.to_owned(),
            channel,
            value,
        }));
        Ok(())
    }

    fn nothing_to_resume(&self) -> GraphError {
        GraphError::InvalidResume(ResumeError::NothingToResume {
            thread_id: self.config.thread_id().unwrap_or_default().to_owned(),
        })
    }

    /// Applies the writes of no task (a `Command`'s update and gotos) to the
    /// channels, as LangGraph does before the first superstep: no step is bumped,
    /// no event is emitted, and the channels they update join those that decide
    /// which nodes run.
    pub(super) fn apply_null_writes(
        &mut self,
        tuple: &CheckpointTuple,
        pending: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let rows: Vec<&PendingWrite> = pending
            .iter()
            .filter(|w| w.task_id == NULL_TASK_ID)
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        let writes = self.decode_writes(tuple, &rows)?;
        if writes.updates.is_empty() && writes.control.is_empty() {
            return Ok(());
        }
        let pseudo = Task {
            node: 0,
            path: crate::ids::TaskOrder::Push(0),
            id: NULL_TASK_ID.to_owned(),
            input: None,
        };
        let (before, known) = (self.schedule.updated.clone(), self.schedule.updated_known);
        let events = self.stream.events.take();
        let applied = self.apply(&[pseudo], vec![TaskResult::Restored(writes)], None, false);
        self.stream.events = events;
        applied?;
        let mut updated: FieldSet = std::mem::take(&mut self.schedule.updated);
        for c in before.iter() {
            updated.insert(c);
        }
        self.schedule.updated = updated;
        self.schedule.updated_known = known;
        Ok(())
    }

    /// Per task: its stored writes when it completed before (and `attach`), and
    /// the answers it has for its interrupts (stored ones, then one from
    /// `Command::resume_map`).
    #[allow(clippy::type_complexity)]
    pub(super) fn restore_pending(
        &self,
        tuple: &CheckpointTuple,
        tasks: &[Task<S>],
        pending: &[PendingWrite],
        attach: bool,
    ) -> Result<(Vec<Option<TaskWrites<S>>>, Vec<Vec<Blob>>), GraphError> {
        let mut restored = Vec::with_capacity(tasks.len());
        let mut answers: Vec<Vec<Blob>> = Vec::new();
        for (i, task) in tasks.iter().enumerate() {
            let rows: Vec<&PendingWrite> =
                pending.iter().filter(|w| w.task_id == task.id).collect();
            let completed = rows.iter().any(|w| !persist::is_control(&w.channel));
            if attach && completed {
                restored.push(Some(self.decode_writes(tuple, &rows)?));
                continue;
            }
            restored.push(None);
            let mut mine: Vec<Blob> = rows
                .iter()
                .find(|w| w.channel == persist::RESUME)
                .map(|w| decode_answers(&w.value))
                .unwrap_or_default();
            if !self.interrupts.resume_map.is_empty() {
                let id = self.interrupt_id_of(task);
                if let Some((_, value)) = self.interrupts.resume_map.iter().find(|(k, _)| *k == id)
                {
                    mine.push(value.clone());
                }
            }
            if !mine.is_empty() {
                answers.resize_with(i + 1, Vec::new);
                answers[i] = mine;
            }
        }
        Ok((restored, answers))
    }

    /// The id of the interrupts `task` raises: a hash of its namespace.
    pub(super) fn interrupt_id_of(&self, task: &Task<S>) -> String {
        let name = &self.graph.nodes[task.node].name;
        interrupt_id(&crate::ids::task_namespace(&self.ns, name, &task.id))
    }
}
