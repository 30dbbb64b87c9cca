//! A test's hold on a run (feature `test-util`, for `crate::testing::Stepper`):
//! before a superstep's tasks start, the run parks at its [`Gate`] until the test
//! releases it, with stand-ins for some of the tasks' nodes.
//!
//! Only a root run made by the stepper has a gate: every other run skips the
//! check (one `Option` test per superstep, and only in builds with the feature).

use super::{Run, Task};
use crate::context::Context;
use crate::node::{ErasedNode, ErasedSubgraph, NodeFuture, TaskInput};
use crate::state::State;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};

/// Runs instead of a task's node, for each of its attempts.
pub(crate) type Fake<S> = Arc<dyn Fn(Context) -> NodeFuture<S> + std::marker::Send + Sync>;

/// A task about to run, as the gate shows it.
pub(crate) struct Planned {
    pub(crate) node: Arc<str>,
    pub(crate) id: String,
    pub(crate) push: bool,
    pub(crate) restored: bool,
}

/// Where a run stopped: the step about to run, its tasks, the state they read.
pub(crate) struct Parked<S> {
    pub(crate) step: i64,
    pub(crate) tasks: Vec<Planned>,
    pub(crate) state: Arc<S>,
}

/// The run's side and the test's side of the hold, behind one lock.
pub(crate) struct Gate<S: State> {
    inner: Mutex<Hold<S>>,
}

struct Hold<S: State> {
    /// Set by the run when it parks, taken by the test.
    parked: Option<Parked<S>>,
    /// Set by the test: the run may go on.
    released: bool,
    /// The stand-ins of the released step, by task id.
    fakes: HashMap<String, Fake<S>>,
    /// The run's waker while parked.
    waker: Option<Waker>,
}

impl<S: State> Gate<S> {
    pub(crate) fn new() -> Self {
        Gate {
            inner: Mutex::new(Hold {
                parked: None,
                released: false,
                fakes: HashMap::new(),
                waker: None,
            }),
        }
    }

    fn hold(&self) -> std::sync::MutexGuard<'_, Hold<S>> {
        // The lock guards plain data: a panic elsewhere leaves it usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The parked run's step, if the run is parked (taken: asked once per park).
    pub(crate) fn take_parked(&self) -> Option<Parked<S>> {
        self.hold().parked.take()
    }

    /// Lets the parked run go on, its tasks in `fakes` running their stand-in.
    pub(crate) fn release(&self, fakes: HashMap<String, Fake<S>>) {
        let mut hold = self.hold();
        hold.released = true;
        hold.fakes = fakes;
        if let Some(waker) = hold.waker.take() {
            waker.wake();
        }
    }

    /// Parks the run (pending until released).
    async fn park(&self, parked: Parked<S>) {
        {
            let mut hold = self.hold();
            hold.parked = Some(parked);
            hold.released = false;
            hold.fakes.clear();
        }
        std::future::poll_fn(|cx| {
            let mut hold = self.hold();
            if hold.released {
                hold.released = false;
                return Poll::Ready(());
            }
            hold.waker = Some(cx.waker().clone());
            Poll::Pending
        })
        .await;
    }

    /// The stand-in of task `id`'s node, if the test gave one.
    fn fake(&self, id: &str) -> Option<Fake<S>> {
        self.hold().fakes.get(id).cloned()
    }
}

/// A task's node with its run replaced by a [`Fake`]; the rest (input type,
/// routes, blocking, cache key) is the node's own.
struct Faked<S: State> {
    fake: Fake<S>,
    node: Arc<dyn ErasedNode<S>>,
}

impl<S: State> ErasedNode<S> for Faked<S> {
    fn call(&self, _input: TaskInput<S>, ctx: Context) -> Result<NodeFuture<S>, crate::NodeError> {
        Ok((self.fake)(ctx))
    }
    fn input_type(&self) -> (std::any::TypeId, &'static str) {
        self.node.input_type()
    }
    fn reads_state(&self) -> bool {
        self.node.reads_state()
    }
    fn project(&self, state: &S) -> Option<Arc<dyn std::any::Any + std::marker::Send + Sync>> {
        self.node.project(state)
    }
    fn targets(&self) -> crate::command::Targets {
        self.node.targets()
    }
    fn is_blocking(&self) -> bool {
        // A stand-in is a future: it never blocks its thread.
        false
    }
    fn as_subgraph(&self) -> Option<&dyn ErasedSubgraph> {
        None
    }
    fn cache_key(&self, input: &TaskInput<S>) -> Option<u128> {
        self.node.cache_key(input)
    }
    fn decode_send(
        &self,
        name: std::borrow::Cow<'static, str>,
        payload: &crate::checkpoint::Blob,
    ) -> Result<crate::command::Send, serde_json::Error> {
        self.node.decode_send(name, payload)
    }
}

impl<S: State> Run<S> {
    /// The run with a gate before each superstep's tasks.
    pub(crate) fn with_gate(&mut self, gate: Arc<Gate<S>>) -> &mut Self {
        self.gate = Some(gate);
        self
    }

    /// Parks at the gate, if the run has one, before `tasks` start.
    pub(super) async fn at_gate(&self, tasks: &[Task<S>], restored: &[bool]) {
        let Some(gate) = &self.gate else {
            return;
        };
        let planned = tasks
            .iter()
            .zip(restored)
            .filter(|(task, _)| task.node != 0)
            .map(|(task, &restored)| Planned {
                node: Arc::clone(&self.graph.nodes[task.node].name),
                id: task.id.clone(),
                push: matches!(task.path, crate::ids::TaskOrder::Push(_)),
                restored,
            })
            .collect::<Vec<_>>();
        // A step of the hidden `__start__` task alone (the input, without a
        // checkpointer) is not one a test sees: its writes show in the next.
        if planned.is_empty() {
            return;
        }
        let parked = Parked {
            step: self.schedule.step,
            tasks: planned,
            state: Arc::clone(&self.state),
        };
        gate.park(parked).await;
    }

    /// `runner`, or the stand-in the gate holds for `task`.
    pub(super) fn faked(
        &self,
        task: &Task<S>,
        runner: &Arc<dyn ErasedNode<S>>,
    ) -> Option<Arc<dyn ErasedNode<S>>> {
        let fake = self.gate.as_ref()?.fake(&task.id)?;
        Some(Arc::new(Faked {
            fake,
            node: Arc::clone(runner),
        }))
    }
}
