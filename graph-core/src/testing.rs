//! Step-by-step tests of a compiled graph (feature `test-util`): a [`Stepper`]
//! runs a graph one superstep at a time, shows the tasks about to run, each
//! task's writes, the state after the step and its interrupts, and lets a test
//! run a stand-in instead of a node: a fixed output, an error (a failing tool), or
//! any future (a slow model).
//!
//! ```
//! use stategraph::prelude::*;
//! use stategraph::testing::{Stepper, TaskStatus};
//!
//! #[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
//! struct Doc {
//!     text: String,
//!     checked: bool,
//! }
//!
//! #[node]
//! fn draft(_: &Doc) -> DocUpdate {
//!     Doc::update().text("draft".into())
//! }
//!
//! #[node]
//! fn check(doc: &Doc) -> DocUpdate {
//!     Doc::update().checked(!doc.text.is_empty())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = StateGraph::<Doc>::new()
//!     .add_node(draft)
//!     .add_node(check)
//!     .add_edge(START, draft)
//!     .add_edge(draft, check)
//!     .compile()?;
//!
//! let mut stepper = Stepper::new(&app, Doc::update(), &RunConfig::new());
//! assert_eq!(stepper.upcoming().await?.nodes(), ["draft"]);
//!
//! // `draft` does not run: the test gives its output.
//! stepper.fake_output("draft", Doc::update().text("faked".into()));
//! let step = stepper.step().await?;
//! assert_eq!(step.state.text, "faked");
//! assert!(step.task("draft").is_some_and(|t| t.faked));
//!
//! // `check` runs for real, and the run ends after it.
//! let step = stepper.step().await?;
//! assert!(matches!(step.task("check").map(|t| &t.status), Some(TaskStatus::Completed)));
//! assert!(step.state.checked && step.finished);
//! # Ok(())
//! # }
//! ```
//!
//! The stepper drives the run itself, as a test's `invoke` would: the graph's
//! checkpointer, store, cache, retry policies and timeouts all apply, and a
//! stand-in runs under the node's retry policy and timeout. Only the run the
//! stepper starts parks between steps (its subgraphs run whole, inside their
//! task); every other run of the graph is untouched.

use crate::context::Context;
use crate::error::{GraphError, NodeError};
use crate::graph::{CompiledGraph, DefaultContext};
use crate::interrupt::{Breakpoint, Interrupt};
use crate::io::{GraphInput, GraphOutput};
use crate::node::{IntoNodeOutput, NodeFuture, NodeOutput};
use crate::pregel::gate::{Fake, Gate, Parked};
use crate::pregel::{EventSink, Run};
use crate::state::State;
use crate::stream::{StreamEvent, StreamMode};
use crate::RunConfig;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

type RunFuture<S> =
    Pin<Box<dyn Future<Output = Result<GraphOutput<Arc<S>>, GraphError>> + std::marker::Send>>;

/// Runs a compiled graph one superstep at a time (see the [module](self) docs).
///
/// Between [`step`](Self::step)s the run is parked before its next step's
/// tasks: [`upcoming`](Self::upcoming) shows them, and
/// [`fake_output`](Self::fake_output), [`fake_error`](Self::fake_error) and
/// [`fake_with`](Self::fake_with) replace a node's run in that step.
pub struct Stepper<S: State> {
    run: Option<RunFuture<S>>,
    gate: Arc<Gate<S>>,
    events: UnboundedReceiver<StreamEvent<S>>,
    /// The step the run is parked before.
    parked: Option<Upcoming<S>>,
    /// How the run ended, until a step reports it.
    ended: Option<Result<GraphOutput<Arc<S>>, GraphError>>,
    /// Stand-ins for the next step, by node name.
    fakes: Vec<(String, Fake<S>)>,
    /// The run ended and a step reported it: nothing is left to step.
    done: bool,
}

impl<S: State> std::fmt::Debug for Stepper<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepper")
            .field("state", &std::any::type_name::<S>())
            .field("parked_before_step", &self.parked.as_ref().map(|p| p.step))
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// A task the next superstep runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedTask {
    /// The node it runs.
    pub node: Arc<str>,
    /// The task id.
    pub id: String,
    /// Started by a `Send` (a PUSH task) rather than by an edge.
    pub send: bool,
    /// Its writes were stored by an earlier attempt of this step (a resumed
    /// run): it does not run again, and cannot be faked.
    pub restored: bool,
}

/// The superstep a [`Stepper`] is parked before.
#[non_exhaustive]
pub struct Upcoming<S> {
    /// The step number (`metadata.step` of the checkpoint it writes).
    pub step: i64,
    /// Its tasks, in task order (the hidden `__start__` task left out).
    pub tasks: Vec<PlannedTask>,
    /// The state the tasks read.
    pub state: Arc<S>,
}

impl<S> Upcoming<S> {
    /// The nodes of the tasks, in task order.
    pub fn nodes(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| &*t.node).collect()
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Upcoming<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upcoming")
            .field("step", &self.step)
            .field("tasks", &self.tasks)
            .field("state", &self.state)
            .finish()
    }
}

/// How a task of a step ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// It returned its writes.
    Completed,
    /// It failed: the error's message, as the `tasks` stream reports it (the
    /// step's [`Step::error`] has the error itself).
    Failed(String),
    /// It paused at these interrupts.
    Interrupted(Vec<Interrupt>),
    /// It did not end: a sibling failed first and it was cancelled.
    Cancelled,
}

/// One task of a step and what it did.
#[non_exhaustive]
pub struct TaskRun<S: State> {
    /// The node.
    pub node: Arc<str>,
    /// The task id.
    pub id: String,
    /// Its state updates, in order (empty unless it completed).
    pub writes: Vec<S::Update>,
    /// How it ended.
    pub status: TaskStatus,
    /// A stand-in ran instead of the node.
    pub faked: bool,
}

impl<S: State> std::fmt::Debug for TaskRun<S>
where
    S::Update: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRun")
            .field("node", &self.node)
            .field("id", &self.id)
            .field("writes", &self.writes)
            .field("status", &self.status)
            .field("faked", &self.faked)
            .finish()
    }
}

/// What one superstep did ([`Stepper::step`]).
#[non_exhaustive]
pub struct Step<S: State> {
    /// The step number.
    pub step: i64,
    /// The tasks that ran, in the order they started (tasks whose writes were
    /// restored from a checkpoint do not run and are not listed).
    pub tasks: Vec<TaskRun<S>>,
    /// The state after the step's writes were applied; when the step paused at
    /// an interrupt or failed, the state it started from (nothing was applied).
    pub state: Arc<S>,
    /// The interrupts the run paused at after this step.
    pub interrupts: Vec<Interrupt>,
    /// The static breakpoint the run stopped at after this step.
    pub breakpoint: Option<Breakpoint>,
    /// The step failed: the run's error (each task's part is in its status).
    pub error: Option<GraphError>,
    /// The run ended with this step (completed, paused or failed): there is no
    /// next step.
    pub finished: bool,
}

impl<S: State> Step<S> {
    /// The first task of `node` in this step.
    pub fn task(&self, node: &str) -> Option<&TaskRun<S>> {
        self.tasks.iter().find(|t| &*t.node == node)
    }

    /// The writes of `node`'s tasks in this step, in task order.
    pub fn writes(&self, node: &str) -> Vec<&S::Update> {
        self.tasks
            .iter()
            .filter(|t| &*t.node == node)
            .flat_map(|t| &t.writes)
            .collect()
    }

    /// The nodes of the tasks, in the order they started.
    pub fn nodes(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| &*t.node).collect()
    }
}

impl<S: State + std::fmt::Debug> std::fmt::Debug for Step<S>
where
    S::Update: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("step", &self.step)
            .field("tasks", &self.tasks)
            .field("state", &self.state)
            .field("interrupts", &self.interrupts)
            .field("breakpoint", &self.breakpoint)
            .field("error", &self.error)
            .field("finished", &self.finished)
            .finish()
    }
}

/// Why a [`Stepper`] could not step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// The run failed before its first step (its input, config or checkpoint).
    #[error("the run failed before its first step: {0}")]
    Run(#[source] GraphError),
    /// Every step was run already.
    #[error(
        "the run has ended (completed, paused or failed) and its last step was reported; \
         start a new Stepper (on the same thread, to resume it)"
    )]
    Ended,
    /// A stand-in was given for a node that has no task to run in the step.
    #[error(
        "no task of node `{node}` runs in step {step} (its tasks: {upcoming:?}); fake a node \
         of the step about to run (see `Stepper::upcoming`)"
    )]
    NotInStep {
        /// The node named.
        node: String,
        /// The step about to run.
        step: i64,
        /// The nodes its tasks run (restored tasks left out).
        upcoming: Vec<String>,
    },
}

impl<S: State> Stepper<S> {
    /// A stepper of a run of `graph` from `input` (as `invoke` takes it), with
    /// `config`. Nothing runs before the first [`upcoming`](Self::upcoming) or
    /// [`step`](Self::step).
    pub fn new<C: ?Sized + DefaultContext>(
        graph: &CompiledGraph<S, C>,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
    ) -> Self {
        let (tx, events) = unbounded_channel();
        let sink = EventSink::to_stream(StreamMode::Tasks.into(), tx);
        let gate = Arc::new(Gate::new());
        let (graph_, saver, cache, store) = (
            Arc::clone(&graph.graph),
            graph.saver.clone(),
            graph.cache.clone(),
            graph.store.clone(),
        );
        let (config, input, run_gate) = (config.clone(), input.into(), Arc::clone(&gate));
        let run = async move {
            let mut run = Run::new(graph_, config, Some(sink), saver)?;
            run.with_cache(cache)
                .with_context(C::default_context())
                .with_store(store)
                .with_gate(run_gate);
            run.run(input).await
        };
        Stepper {
            run: Some(Box::pin(run)),
            gate,
            events,
            parked: None,
            ended: None,
            fakes: Vec::new(),
            done: false,
        }
    }

    /// Runs until the run parks before its next step or ends.
    async fn drive(&mut self) {
        std::future::poll_fn(|cx| {
            let Some(run) = self.run.as_mut() else {
                return Poll::Ready(());
            };
            match run.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    self.run = None;
                    self.ended = Some(result);
                    Poll::Ready(())
                }
                Poll::Pending => match self.gate.take_parked() {
                    Some(Parked { step, tasks, state }) => {
                        let tasks = tasks
                            .into_iter()
                            .map(|t| PlannedTask {
                                node: t.node,
                                id: t.id,
                                send: t.push,
                                restored: t.restored,
                            })
                            .collect();
                        self.parked = Some(Upcoming { step, tasks, state });
                        Poll::Ready(())
                    }
                    None => Poll::Pending,
                },
            }
        })
        .await;
    }

    /// The step about to run: runs the graph up to it if needed.
    /// [`StepError::Ended`] when no step is left (the next [`step`](Self::step)
    /// then reports how the run ended, once); [`StepError::Run`] when the run
    /// failed before its first step.
    pub async fn upcoming(&mut self) -> Result<&Upcoming<S>, StepError> {
        if self.parked.is_none() && self.run.is_some() {
            self.drive().await;
        }
        // An error left here came before any step: no step reports it.
        if self.parked.is_none()
            && matches!(self.ended, Some(Err(_)))
            && let Some(Err(e)) = self.ended.take()
        {
            self.done = true;
            return Err(StepError::Run(e));
        }
        self.parked.as_ref().ok_or(StepError::Ended)
    }

    /// Whether the run has ended and its last step was reported.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// In the next step, `node`'s tasks return `output` instead of running the
    /// node (on every attempt, under the node's retry policy).
    pub fn fake_output(&mut self, node: &str, output: impl IntoNodeOutput<S>) -> &mut Self {
        let given = match output.into_output() {
            Ok(out) => match out.try_clone() {
                Some(copy) => Given::Cloned(copy),
                // A command for the parent graph is not cloned: given once.
                None => Given::Once(Mutex::new(Some(out))),
            },
            Err(e) => Given::Error(e.to_string()),
        };
        let fake: Fake<S> = Arc::new(move |_ctx: Context| -> NodeFuture<S> {
            let result = match &given {
                Given::Cloned(out) => out.try_clone().ok_or_else(given_once),
                Given::Once(slot) => slot
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .ok_or_else(given_once),
                Given::Error(message) => Err(NodeError::msg(message)),
            };
            NodeFuture::ready(result)
        });
        self.fakes.push((node.to_owned(), fake));
        self
    }

    /// In the next step, `node`'s tasks fail with the error `make` returns
    /// (called for each attempt) instead of running the node: a failing tool, a
    /// model that is down. A [`NodeError::transient`] error is retried as the
    /// node's retry policy says.
    pub fn fake_error<E: Into<NodeError>>(
        &mut self,
        node: &str,
        make: impl Fn() -> E + std::marker::Send + Sync + 'static,
    ) -> &mut Self {
        let fake: Fake<S> = Arc::new(move |_ctx: Context| -> NodeFuture<S> {
            NodeFuture::ready(Err(make().into()))
        });
        self.fakes.push((node.to_owned(), fake));
        self
    }

    /// In the next step, `node`'s tasks run `fake` instead of the node (for
    /// each attempt, given the attempt's context): a slow model
    /// (`tokio::time::sleep` first), a tool that fails on its first attempt only.
    pub fn fake_with<F, R>(
        &mut self,
        node: &str,
        fake: impl Fn(Context) -> F + std::marker::Send + Sync + 'static,
    ) -> &mut Self
    where
        F: Future<Output = R> + std::marker::Send + 'static,
        R: IntoNodeOutput<S>,
    {
        let fake: Fake<S> = Arc::new(move |ctx: Context| -> NodeFuture<S> {
            let fut = fake(ctx);
            NodeFuture::new(async move { fut.await.into_output() })
        });
        self.fakes.push((node.to_owned(), fake));
        self
    }

    /// Runs the next superstep (with the stand-ins given since the last step) and
    /// reports it. The run then parks before the step after it, or ends.
    pub async fn step(&mut self) -> Result<Step<S>, StepError> {
        let ended = match self.upcoming().await {
            Ok(_) => false,
            Err(StepError::Ended) => true,
            Err(e) => return Err(e),
        };
        // The run ended (paused, completed) before any step: a final report,
        // without tasks, once.
        if ended && (self.done || self.ended.is_none()) {
            return Err(StepError::Ended);
        }
        let before = self.parked.take();
        let Some(before) = before else {
            return self.final_report(None, Vec::new());
        };
        let fakes = match self.resolve_fakes(&before) {
            Ok(fakes) => fakes,
            Err(e) => {
                self.parked = Some(before);
                return Err(e);
            }
        };
        let faked: Vec<String> = fakes.keys().cloned().collect();
        self.gate.release(fakes);
        self.drive().await;
        let mut tasks: Vec<TaskRun<S>> = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            match event {
                StreamEvent::TaskStart { id, name, .. } => tasks.push(TaskRun {
                    faked: faked.contains(&id),
                    node: name,
                    id,
                    writes: Vec::new(),
                    status: TaskStatus::Cancelled,
                }),
                StreamEvent::TaskResult {
                    id,
                    error,
                    updates,
                    interrupts,
                    ..
                } => {
                    if let Some(task) = tasks.iter_mut().find(|t| t.id == id) {
                        task.status = match (error, interrupts.is_empty()) {
                            (Some(message), _) => TaskStatus::Failed(message),
                            (None, false) => TaskStatus::Interrupted(interrupts),
                            (None, true) => TaskStatus::Completed,
                        };
                        task.writes = updates;
                    }
                }
                _ => {}
            }
        }
        match &self.parked {
            Some(next) => Ok(Step {
                step: before.step,
                tasks,
                state: Arc::clone(&next.state),
                interrupts: Vec::new(),
                breakpoint: None,
                error: None,
                finished: false,
            }),
            None => self.final_report(Some(before), tasks),
        }
    }

    /// The report of the step the run ended with.
    fn final_report(
        &mut self,
        before: Option<Upcoming<S>>,
        tasks: Vec<TaskRun<S>>,
    ) -> Result<Step<S>, StepError> {
        self.done = true;
        let step = before.as_ref().map_or(-1, |b| b.step);
        let start_state = || before.as_ref().map(|b| Arc::clone(&b.state));
        let report = |state, interrupts, breakpoint, error| Step {
            step,
            tasks,
            state,
            interrupts,
            breakpoint,
            error,
            finished: true,
        };
        Ok(match self.ended.take() {
            Some(Ok(out)) => report(out.state, out.interrupts, out.breakpoint, None),
            Some(Err(e)) => report(start_state().unwrap_or_default(), Vec::new(), None, Some(e)),
            None => return Err(StepError::Ended),
        })
    }

    /// The stand-ins given for the step `before`, by task id.
    fn resolve_fakes(
        &mut self,
        before: &Upcoming<S>,
    ) -> Result<HashMap<String, Fake<S>>, StepError> {
        let mut by_task = HashMap::new();
        for (node, fake) in self.fakes.drain(..) {
            let mut found = false;
            for task in before
                .tasks
                .iter()
                .filter(|t| !t.restored && *t.node == *node)
            {
                by_task.insert(task.id.clone(), Arc::clone(&fake));
                found = true;
            }
            if !found {
                return Err(StepError::NotInStep {
                    node,
                    step: before.step,
                    upcoming: before
                        .tasks
                        .iter()
                        .filter(|t| !t.restored)
                        .map(|t| t.node.to_string())
                        .collect(),
                });
            }
        }
        Ok(by_task)
    }

    /// Steps until the run ends; returns every step's report.
    pub async fn run_to_end(&mut self) -> Result<Vec<Step<S>>, StepError> {
        let mut steps = Vec::new();
        while !self.done {
            steps.push(self.step().await?);
        }
        Ok(steps)
    }
}

/// A faked output, as [`Stepper::fake_output`] keeps it.
enum Given<S: State> {
    /// Cloned for each attempt.
    Cloned(NodeOutput<S>),
    /// Given to the first attempt only (it carries a command for the parent).
    Once(Mutex<Option<NodeOutput<S>>>),
    /// The output could not be made: each attempt fails with this message.
    Error(String),
}

fn given_once() -> NodeError {
    NodeError::msg(
        "a faked output carrying a command for the parent graph is given once, but the node \
         was retried; fake it with `fake_with` instead",
    )
}
