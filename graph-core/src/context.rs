//! [`Context`]: what a running node can know and do besides reading its input.

use crate::config::RunConfig;
use std::sync::Arc;

pub(crate) type CustomSink = Arc<dyn Fn(&Arc<str>, serde_json::Value) + Send + Sync>;

/// The context of one task: its step, ids, the run's config, and the custom stream.
///
/// Take it as a second parameter of a `#[node]` fn (`ctx: &Context`).
#[derive(Clone)]
pub struct Context {
    inner: Arc<TaskInfo>,
}

struct TaskInfo {
    node: Arc<str>,
    task_id: String,
    step: i64,
    stop: i64,
    config: Arc<RunConfig>,
    custom: Option<CustomSink>,
    attempt: u32,
}

impl Context {
    pub(crate) fn new(
        node: Arc<str>,
        task_id: String,
        step: i64,
        stop: i64,
        config: Arc<RunConfig>,
        custom: Option<CustomSink>,
    ) -> Self {
        Context {
            inner: Arc::new(TaskInfo {
                node,
                task_id,
                step,
                stop,
                config,
                custom,
                attempt: 1,
            }),
        }
    }

    /// The same task's context for attempt `attempt` (retries).
    pub(crate) fn for_attempt(&self, attempt: u32) -> Self {
        let i = &self.inner;
        Context {
            inner: Arc::new(TaskInfo {
                node: Arc::clone(&i.node),
                task_id: i.task_id.clone(),
                step: i.step,
                stop: i.stop,
                config: Arc::clone(&i.config),
                custom: i.custom.clone(),
                attempt,
            }),
        }
    }

    /// Which attempt this is (1 for the first run; more under a `RetryPolicy`).
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// The name of the running node.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The id of the running task (deterministic: same checkpoint, same id).
    pub fn task_id(&self) -> &str {
        &self.inner.task_id
    }

    /// The current superstep (the `__start__` step is 0).
    pub fn step(&self) -> i64 {
        self.inner.step
    }

    /// Supersteps left before the recursion limit, this one included.
    pub fn remaining_steps(&self) -> i64 {
        self.inner.stop - self.inner.step
    }

    /// Whether this is the last superstep the recursion limit allows.
    pub fn is_last_step(&self) -> bool {
        self.inner.step == self.inner.stop - 1
    }

    /// The thread id of the run, if any.
    pub fn thread_id(&self) -> Option<&str> {
        self.inner.config.thread_id()
    }

    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.inner.config
    }

    /// Emits `value` on the `custom` stream mode right away (a no-op when the caller
    /// did not ask for that mode). Values that fail to serialise are sent as `null`.
    pub fn write_custom(&self, value: impl serde::Serialize) {
        if let Some(sink) = &self.inner.custom {
            let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
            sink(&self.inner.node, value);
        }
    }

    /// Whether the caller is listening to the `custom` stream mode.
    pub fn is_streaming_custom(&self) -> bool {
        self.inner.custom.is_some()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("node", &self.inner.node)
            .field("task_id", &self.inner.task_id)
            .field("step", &self.inner.step)
            .finish_non_exhaustive()
    }
}
