//! A superstep that does not complete (docs/semantics.md §2.6, §2.11, §5.3, §5.6):
//! tasks paused at interrupts, a static breakpoint, or a failure. The checkpoint
//! the step started from stays the thread's latest; what the step's tasks did is
//! stored as its pending writes, so a resume re-runs only the tasks that must run
//! again.

use super::persist::{self, ERROR};
use super::writes::{TaskResult, TaskWrites};
use super::{Run, Task};
use crate::checkpoint::Blob;
use crate::error::GraphError;
use crate::interrupt::{Breakpoint, Breakpoints, Interrupt};
use crate::io::GraphOutput;
use crate::state::State;
use crate::stream::{StreamEvent, StreamMode};
use std::sync::Arc;

/// A task that paused at an interrupt.
pub(crate) struct TaskInterrupt {
    pub(crate) interrupts: Vec<Interrupt>,
    /// The answers it consumed, stored so that its re-run gets them again.
    pub(crate) answers: Option<Vec<Blob>>,
}

fn storage_error(what: &str, e: serde_json::Error) -> GraphError {
    GraphError::Checkpoint(crate::checkpoint::CheckpointError::Storage(
        format!("cannot serialise {what}: {e}").into(),
    ))
}

impl<S: State> Run<S> {
    /// Whether a static breakpoint stops the run at `tasks`: one of them matches
    /// and something changed since the thread was last resumed (so resuming does
    /// not stop at the same breakpoint again).
    pub(super) fn should_interrupt(&self, at: &Breakpoints, tasks: &[Task<S>]) -> bool {
        if at.is_none() {
            return false;
        }
        self.interrupts
            .changed_since_resume(self.schedule.versions.max)
            && tasks
                .iter()
                .any(|t| at.matches(&self.graph.nodes[t.node].name))
    }

    fn breakpoint_nodes(&self, at: &Breakpoints, tasks: &[Task<S>]) -> Vec<String> {
        let mut names: Vec<String> = tasks
            .iter()
            .map(|t| &self.graph.nodes[t.node].name)
            .filter(|n| at.matches(n))
            .map(|n| n.to_string())
            .collect();
        names.dedup();
        names
    }

    /// `interrupt_before` matched: the tasks do not run. Writes restored for
    /// tasks that had completed are applied to the returned state (not stored).
    pub(super) async fn stop_before(
        &mut self,
        tasks: &[Task<S>],
        restored: Vec<Option<TaskWrites<S>>>,
    ) -> Result<GraphOutput<Arc<S>>, GraphError> {
        let nodes = self.breakpoint_nodes(&self.interrupts.before, tasks);
        self.save_on_exit().await?;
        let (done, results): (Vec<Task<S>>, Vec<TaskResult<S>>) = tasks
            .iter()
            .zip(restored)
            .filter_map(|(t, r)| r.map(|w| (t.without_input(), TaskResult::Restored(w))))
            .unzip();
        if !done.is_empty() {
            let events = self.stream.events.take();
            let changed_fields = {
                self.apply(&done, results, None, true)?;
                self.schedule
                    .updated
                    .iter()
                    .next()
                    .is_some_and(|c| c < self.graph.num_fields())
            };
            self.stream.events = events;
            if changed_fields {
                self.stream.emit_if(StreamMode::Values, || {
                    StreamEvent::Values(Arc::clone(&self.state))
                });
            }
        }
        self.stream
            .emit_if(StreamMode::Updates, || StreamEvent::Interrupt(Vec::new()));
        Ok(GraphOutput {
            state: Arc::clone(&self.state),
            interrupts: Vec::new(),
            breakpoint: Some(Breakpoint::Before(nodes)),
        })
    }

    /// `interrupt_after` matched the tasks that just ran (their step is stored).
    pub(super) async fn stop_after(
        &mut self,
        tasks: &[Task<S>],
    ) -> Result<GraphOutput<Arc<S>>, GraphError> {
        let nodes = self.breakpoint_nodes(&self.interrupts.after, tasks);
        self.save_on_exit().await?;
        self.stream
            .emit_if(StreamMode::Updates, || StreamEvent::Interrupt(Vec::new()));
        Ok(GraphOutput {
            state: Arc::clone(&self.state),
            interrupts: Vec::new(),
            breakpoint: Some(Breakpoint::After(nodes)),
        })
    }

    /// Some tasks paused at interrupts (the others completed): the step's writes
    /// are stored as pending writes of the checkpoint it started from, and applied
    /// to the returned state only.
    pub(super) async fn pause_at_interrupts(
        &mut self,
        tasks: &[Task<S>],
        mut results: Vec<Option<TaskResult<S>>>,
    ) -> Result<GraphOutput<Arc<S>>, GraphError> {
        if self.persist.saver.is_none() && self.nested.is_none() {
            // Nothing could keep the pause until it is answered (LangGraph
            // returns it and fails at the resume; we fail where it is asked).
            // (A subgraph's static breakpoint, with no interrupt, pauses as
            // the parent's breakpoints do.)
            let asked = tasks
                .iter()
                .zip(&results)
                .find_map(|(task, result)| match result {
                    Some(TaskResult::Interrupted(paused)) => {
                        Some((task, paused.interrupts.first()?))
                    }
                    _ => None,
                });
            if let Some((task, first)) = asked {
                return Err(GraphError::InterruptWithoutCheckpointer {
                    node: self.graph.nodes[task.node].name.to_string(),
                    step: self.schedule.step,
                    value: first.value.clone(),
                });
            }
        }
        let mut all = Vec::new();
        let mut nested_breakpoints = Vec::new();
        for (task, result) in tasks.iter().zip(&results) {
            let Some(TaskResult::Interrupted(paused)) = result else {
                continue;
            };
            let name = &self.graph.nodes[task.node].name;
            if paused.interrupts.is_empty() {
                nested_breakpoints.push(name.to_string());
            }
            self.stream
                .emit_at(StreamMode::Tasks, self.schedule.step, || {
                    StreamEvent::TaskResult {
                        id: task.id.clone(),
                        name: Arc::clone(name),
                        error: None,
                        updates: Vec::new(),
                        interrupts: paused.interrupts.clone(),
                    }
                });
            self.stream.emit_if(StreamMode::Updates, || {
                StreamEvent::Interrupt(paused.interrupts.clone())
            });
            self.stream
                .emit_if(StreamMode::Values, || StreamEvent::ValuesAtInterrupt {
                    values: Arc::clone(&self.state),
                    interrupts: paused.interrupts.clone(),
                });
            all.extend(paused.interrupts.iter().cloned());
        }
        self.persist_step(tasks, &mut results, None).await?;
        let (done, results): (Vec<Task<S>>, Vec<TaskResult<S>>) = tasks
            .iter()
            .zip(results)
            .filter_map(|(t, r)| match r {
                Some(r @ (TaskResult::Restored(_) | TaskResult::Output(_))) => {
                    Some((t.without_input(), r))
                }
                _ => None,
            })
            .unzip();
        if !done.is_empty() {
            self.apply(&done, results, None, true)?;
        }
        Ok(GraphOutput {
            state: Arc::clone(&self.state),
            interrupts: all,
            breakpoint: (!nested_breakpoints.is_empty())
                .then_some(Breakpoint::Nested(nested_breakpoints)),
        })
    }

    /// Stores what a step that did not complete produced, as pending writes of
    /// the checkpoint it started from (stored first if it was not): the writes of
    /// tasks that completed (resolved in place into `Restored`), the interrupts
    /// and answers of tasks that paused, and the error of the task that failed.
    pub(super) async fn persist_step(
        &mut self,
        tasks: &[Task<S>],
        results: &mut [Option<TaskResult<S>>],
        failure: Option<&GraphError>,
    ) -> Result<(), GraphError> {
        let mut rows: Vec<(String, Vec<(String, Blob)>)> = Vec::new();
        for (task, slot) in tasks.iter().zip(results.iter_mut()) {
            match slot.take() {
                Some(TaskResult::Output(out)) => {
                    let writes = self.resolve_alone(task, out)?;
                    if self.persist.saver.is_some() {
                        rows.push((task.id.clone(), self.encode_writes(&writes)?));
                    }
                    *slot = Some(TaskResult::Restored(writes));
                }
                Some(TaskResult::Interrupted(paused)) if paused.interrupts.is_empty() => {
                    // A breakpoint inside a subgraph: the subgraph stored its own
                    // state, the task stores nothing and re-runs on resume.
                    *slot = Some(TaskResult::Interrupted(paused));
                }
                Some(TaskResult::Interrupted(paused)) => {
                    let mut writes = vec![(
                        persist::INTERRUPT.to_owned(),
                        Blob::encode(&paused.interrupts)
                            .map_err(|e| storage_error("an interrupt", e))?,
                    )];
                    if let Some(answers) = &paused.answers {
                        writes.push((
                            persist::RESUME.to_owned(),
                            Blob::encode(answers).map_err(|e| storage_error("resume values", e))?,
                        ));
                    }
                    rows.push((task.id.clone(), writes));
                    *slot = Some(TaskResult::Interrupted(paused));
                }
                other => *slot = other,
            }
        }
        if let Some((failure, task_id)) = failure.and_then(|f| Some((f, f.failed_task()?))) {
            let text = Blob::encode(&failure.task_error_text())
                .map_err(|e| storage_error("an error", e))?;
            rows.push((task_id.to_owned(), vec![(ERROR.to_owned(), text)]));
        }
        if self.persist.saver.is_none() {
            return Ok(());
        }
        let source = self.persist.pending_source;
        self.put_current(source).await?;
        self.put_step_writes().await?;
        self.persist.flush_puts().await?;
        if let Some(p) = &self.persist.saver {
            for (task_id, writes) in rows {
                p.saver.put_writes(&p.config, writes, &task_id).await?;
            }
        }
        Ok(())
    }
}

impl<S: State> Task<S> {
    /// The task without its input (for applying stored writes).
    pub(super) fn without_input(&self) -> Task<S> {
        Task {
            node: self.node,
            path: self.path.clone(),
            id: self.id.clone(),
            input: None,
        }
    }
}
