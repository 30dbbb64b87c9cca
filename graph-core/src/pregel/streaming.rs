//! Streaming: where a run's events go, and the events the loop itself emits
//! (checkpoints, task starts and failures; docs/semantics.md §4).

use super::writes::TaskWrites;
use super::{Run, Task};
use crate::checkpoint::CheckpointConfig;
use crate::error::GraphError;
use crate::ids::{self, TaskOrder};
use crate::state::State;
use crate::stream::{Namespace, NestedEvents, StreamEvent, StreamMode, StreamModes, SubgraphEvent};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where a run reports its stream events.
pub(crate) struct EventSink<S: State> {
    modes: StreamModes,
    deliver: Box<dyn Fn(StreamEvent<S>) + std::marker::Send + Sync>,
    sent: std::sync::atomic::AtomicUsize,
}

impl<S: State> EventSink<S> {
    /// The sink of a root run: events go to the caller's stream.
    pub(crate) fn to_stream(modes: StreamModes, tx: UnboundedSender<StreamEvent<S>>) -> Self {
        EventSink {
            modes,
            // A dropped receiver means nobody listens any more; the run still completes.
            deliver: Box::new(move |event| drop(tx.send(event))),
            sent: Default::default(),
        }
    }

    /// The sink of a nested run at `ns`: events go up to the root's stream.
    pub(crate) fn nested(events: &NestedEvents, ns: &str) -> Self {
        let forward = Arc::clone(&events.forward);
        let namespace = Namespace::parse(ns);
        EventSink {
            modes: events.modes,
            deliver: Box::new(move |event| forward(namespace.clone(), SubgraphEvent::new(event))),
            sent: Default::default(),
        }
    }

    pub(super) fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
            || (matches!(mode, StreamMode::Checkpoints | StreamMode::Tasks)
                && self.modes.contains(StreamMode::Debug))
    }

    /// Emits a `checkpoints` or `tasks` event of step `step`: as it is if its
    /// mode was asked for, then wrapped in a `Debug` event if `debug` was
    /// (LangGraph's order).
    pub(super) fn emit_at(&self, step: i64, event: StreamEvent<S>) {
        if !self.modes.contains(StreamMode::Debug) {
            return self.emit(event);
        }
        let event = if self.modes.contains(event.mode()) {
            let Some(copy) = event.debug_copy() else {
                return self.emit(event);
            };
            self.emit(event);
            copy
        } else {
            event
        };
        self.emit(StreamEvent::Debug {
            step,
            event: Box::new(event),
        });
    }

    pub(super) fn emit(&self, event: StreamEvent<S>) {
        self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (self.deliver)(event);
    }

    pub(super) fn sent(&self) -> usize {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Where a run's events go, owned by the run.
pub(crate) struct Streaming<S: State> {
    /// The run's own events (none: nobody streams).
    pub(super) events: Option<Arc<EventSink<S>>>,
    /// Where graphs nested in this run send their events (`subgraphs` streaming).
    pub(super) nested_events: Option<NestedEvents>,
}

impl<S: State> Streaming<S> {
    /// A run's streaming to `events`; with `subgraphs`, nested graphs' events
    /// are forwarded to it too.
    pub(super) fn new(events: Option<EventSink<S>>) -> Self {
        let events = events.map(Arc::new);
        let nested_events = events
            .as_ref()
            .filter(|e| e.modes.includes_subgraphs())
            .map(|root| {
                let root = Arc::clone(root);
                NestedEvents {
                    modes: root.modes,
                    forward: Arc::new(move |namespace, event| {
                        root.emit(StreamEvent::Subgraph { namespace, event })
                    }),
                }
            });
        Streaming {
            events,
            nested_events,
        }
    }

    /// The sink, if it wants events of `mode`.
    pub(super) fn wanting(&self, mode: StreamMode) -> Option<&Arc<EventSink<S>>> {
        self.events.as_ref().filter(|e| e.wants(mode))
    }

    /// Emits the event `event` makes, if the sink wants `mode`.
    pub(super) fn emit_if(&self, mode: StreamMode, event: impl FnOnce() -> StreamEvent<S>) {
        if let Some(events) = self.wanting(mode) {
            events.emit(event());
        }
    }

    /// Emits the `checkpoints` or `tasks` event `event` makes, of step
    /// `step`, if the sink wants `mode` (or `debug`).
    pub(super) fn emit_at(
        &self,
        mode: StreamMode,
        step: i64,
        event: impl FnOnce() -> StreamEvent<S>,
    ) {
        if let Some(events) = self.wanting(mode) {
            events.emit_at(step, event());
        }
    }

    /// How many events the run has emitted so far.
    pub(super) fn sent(&self) -> usize {
        self.events.as_ref().map_or(0, |e| e.sent())
    }
}

impl<S: State> Run<S> {
    /// `checkpoints` mode: the checkpoint this step starts from (with a saver).
    pub(super) fn emit_checkpoint(&self, tasks: &[Task<S>]) {
        let (Some(events), Some(p)) = (&self.stream.events, &self.persist.saver) else {
            return;
        };
        if !events.wants(StreamMode::Checkpoints) {
            return;
        }
        let config = CheckpointConfig {
            checkpoint_id: Some(ids::format_uuid(&self.persist.checkpoint).into()),
            ..p.config.clone()
        };
        // As LangGraph: the parent of the checkpoint stored last (or loaded),
        // which under `exit` durability is the one the run started from.
        let parent_config = p.parent_id.as_ref().map(|id| CheckpointConfig {
            checkpoint_id: Some(id.clone()),
            ..p.config.clone()
        });
        let step = self.persist.checkpoint_step;
        events.emit_at(
            step,
            StreamEvent::Checkpoint(crate::stream::CheckpointEvent {
                config,
                parent_config,
                values: Arc::clone(&self.state),
                metadata: self.metadata(self.persist.pending_source, step),
                next: tasks
                    .iter()
                    .map(|t| self.graph.nodes[t.node].name.to_string())
                    .collect(),
            }),
        );
    }

    /// `tasks` mode: a start event per task that will run (hidden `__start__` excluded).
    pub(super) fn emit_task_starts(&self, tasks: &[Task<S>], restored: &[Option<TaskWrites<S>>]) {
        let Some(events) = self.stream.wanting(StreamMode::Tasks) else {
            return;
        };
        for (task, restored) in tasks.iter().zip(restored) {
            if task.node == 0 || restored.is_some() {
                continue;
            }
            let spec = &self.graph.nodes[task.node];
            let triggers = match task.path {
                TaskOrder::Push(_) => vec!["__pregel_push".to_owned()],
                TaskOrder::Pull(_) => spec
                    .triggers
                    .iter()
                    .map(|&c| self.graph.channel_names[c].to_string())
                    .collect(),
            };
            events.emit_at(
                self.schedule.step,
                StreamEvent::TaskStart {
                    id: task.id.clone(),
                    name: Arc::clone(&spec.name),
                    triggers,
                },
            );
        }
    }

    pub(super) fn emit_task_failure(&self, tasks: &[Task<S>], failure: &GraphError) {
        let Some(events) = self.stream.wanting(StreamMode::Tasks) else {
            return;
        };
        if let Some(task_id) = failure.failed_task()
            && let Some(task) = tasks.iter().find(|t| t.id == task_id)
        {
            events.emit_at(
                self.schedule.step,
                StreamEvent::TaskResult {
                    id: task.id.clone(),
                    name: Arc::clone(&self.graph.nodes[task.node].name),
                    error: Some(failure.task_error_text()),
                    updates: Vec::new(),
                    interrupts: Vec::new(),
                },
            );
        }
    }
}
