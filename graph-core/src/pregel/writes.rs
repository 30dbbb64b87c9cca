//! `apply_writes` (docs/semantics.md §2.7): writes of a superstep are applied in
//! task-path order, channel by channel, then unwritten ephemeral channels are
//! cleared and, if nothing would run next, channels are finished.

use super::{Run, Task};
use crate::branch::BranchRoute;
use crate::command::Send;
use crate::compiled::{EdgeWrite, Graph};
use crate::context::{Context, StreamSinks};
use crate::error::{GraphError, InvalidUpdateError, NodeError, PanicSite};
use crate::ids::TaskOrder;
use crate::node::{NodeOutput, RouteWrite};
use crate::state::{FieldSet, State, StateUpdate};
use crate::stream::{StreamEvent, StreamMode};
use crate::unwind;
use crate::{END, START};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::Arc;

/// A write to an engine-owned channel.
pub(crate) enum ControlWrite {
    Trigger(usize),
    Join(usize, Arc<str>),
    Send(Send),
}

/// Everything one task wrote: state updates and engine-channel writes.
pub(crate) struct TaskWrites<S: State> {
    pub(crate) updates: Vec<S::Update>,
    pub(crate) control: ControlWrites,
}

/// A task's engine-channel writes: usually an edge or two, kept inline.
pub(crate) type ControlWrites = SmallVec<[ControlWrite; 2]>;

impl<S: State> Default for TaskWrites<S> {
    fn default() -> Self {
        TaskWrites {
            updates: Vec::new(),
            control: SmallVec::new(),
        }
    }
}

/// How a task's writes reach `apply`.
pub(crate) enum TaskResult<S: State> {
    /// A node just ran: its routes, edges and routers are still to be resolved.
    Output(NodeOutput<S>),
    /// Writes restored from pending writes (the task does not run again).
    Restored(TaskWrites<S>),
    /// The task paused at an interrupt: it wrote nothing.
    Interrupted(super::TaskInterrupt),
}

/// Turns a node name from a `Command` goto into a trigger write.
fn goto_write<S: State>(graph: &Graph<S>, from: &str, target: &str, out: &mut ControlWrites) {
    match graph.node_by_name.get(target) {
        Some(&n) if n != 0 => out.push(ControlWrite::Trigger(graph.branch_of[n])),
        _ => {
            tracing::warn!("Task {from} wrote to unknown channel branch:to:{target}, ignoring it.")
        }
    }
}

/// Runs the conditional edges of `task`'s node against `state`; a router that
/// panics is [`PanicSite::Router`], one that returns `Err` is
/// [`GraphError::RouterFailed`], a name missing from its path map is
/// [`GraphError::UnmappedRoute`]. `ctx` makes the task's context for routers
/// that take it.
fn route<S: State>(
    graph: &Graph<S>,
    task: &Task<S>,
    step: i64,
    state: &S,
    ctx: &dyn Fn() -> Context,
    out: &mut ControlWrites,
) -> Result<(), GraphError> {
    let spec = &graph.nodes[task.node];
    let mut routes = Vec::new();
    for router in &spec.branches {
        routes.clear();
        unwind::catch(|| router.route(state, ctx, &mut routes))
            .map_err(|panic| {
                panic.at(PanicSite::Router {
                    node: spec.name.to_string(),
                    task_id: task.id.clone(),
                    step,
                })
            })?
            .map_err(|error| GraphError::RouterFailed {
                node: spec.name.to_string(),
                router: router.name().to_owned(),
                task_id: task.id.clone(),
                step,
                source: if error.is_interrupt() {
                    NodeError::msg(
                        "a router cannot interrupt: call `Context::interrupt` in a node (the \
                         router's source node, or a node it routes to)",
                    )
                    .into_boxed()
                } else {
                    error.into_boxed()
                },
            })?;
        for r in routes.drain(..) {
            let r = match (router.path_map(), r) {
                (_, r @ BranchRoute::Send(_)) | (None, r) => r,
                (Some(map), r) => {
                    let key = match &r {
                        BranchRoute::Node(name) => name.as_ref(),
                        _ => END,
                    };
                    match map.get(key) {
                        Some(END) => BranchRoute::End,
                        Some(target) => BranchRoute::Node(Cow::Owned(target.to_owned())),
                        None => {
                            return Err(GraphError::UnmappedRoute {
                                node: spec.name.to_string(),
                                router: router.name().to_owned(),
                                key: key.to_owned(),
                                keys: map.iter().map(|(k, _)| k.to_owned()).collect(),
                            })
                        }
                    }
                }
            };
            match r {
                BranchRoute::End => {}
                BranchRoute::Node(name) if name == START => {
                    return Err(InvalidUpdateError::new(format!(
                        "Branch did not return a valid destination (a conditional edge of `{}` \
                         returned START)",
                        spec.name
                    ))
                    .into())
                }
                BranchRoute::Node(name) => goto_write(graph, &spec.name, &name, out),
                BranchRoute::Send(s) if s.node() == END => {
                    return Err(
                        InvalidUpdateError::new("Cannot send a packet to the END node").into(),
                    )
                }
                BranchRoute::Send(s) => out.push(ControlWrite::Send(s)),
            }
        }
    }
    Ok(())
}

/// The writes of a node's routes and static edges (not its conditional edges).
fn routes_and_edges<S: State>(
    graph: &Graph<S>,
    node: usize,
    out: &mut NodeOutput<S>,
    writes: &mut ControlWrites,
) {
    let spec = &graph.nodes[node];
    for r in out.routes.drain(..) {
        match r {
            RouteWrite::Node(name) => goto_write(graph, &spec.name, &name, writes),
            RouteWrite::Send(s) => writes.push(ControlWrite::Send(s)),
        }
    }
    for edge in &spec.edges {
        writes.push(match edge {
            EdgeWrite::Branch(c) => ControlWrite::Trigger(*c),
            EdgeWrite::Join(c, name) => ControlWrite::Join(*c, Arc::clone(name)),
        });
    }
}

impl<S: State> Run<S> {
    /// The context a router of `task`'s node is given: the task's node, id and
    /// step, the run's config and stream; no interrupt answers (a router cannot
    /// pause).
    fn router_context(&self, task: &Task<S>) -> Context {
        Context::new(
            Arc::clone(&self.graph.nodes[task.node].name),
            task.id.clone(),
            Arc::new(self.step_scope()),
            StreamSinks {
                custom: self.custom_sink(),
                messages: self.message_sink(),
                calls: None,
            },
            None,
        )
    }

    /// Resolves one finished task's writes on its own (routers read a private copy
    /// with only this task's updates). Used where the copy-free strategies of
    /// `apply` do not fit: persisting the writes of a step that failed.
    pub(crate) fn resolve_alone(
        &self,
        task: &Task<S>,
        mut out: NodeOutput<S>,
    ) -> Result<TaskWrites<S>, GraphError> {
        let graph = &self.graph;
        let mut control = ControlWrites::new();
        routes_and_edges(graph, task.node, &mut out, &mut control);
        if !graph.nodes[task.node].branches.is_empty() {
            if out.updates.iter().all(|u| u.is_empty()) {
                route(
                    graph,
                    task,
                    self.schedule.step,
                    &self.state,
                    &|| self.router_context(task),
                    &mut control,
                )?;
            } else {
                self.route_on_own_writes(task, &out.updates, &mut control)?;
            }
        }
        Ok(TaskWrites {
            updates: out.updates,
            control,
        })
    }

    /// Runs `node`'s conditional edges on a private copy of the state with only
    /// `updates` (the node's own writes) applied: LangGraph's "fresh" read, for when
    /// the shared state cannot serve it.
    fn route_on_own_writes(
        &self,
        task: &Task<S>,
        updates: &[S::Update],
        out: &mut ControlWrites,
    ) -> Result<(), GraphError> {
        let mut fresh = (*self.state).clone();
        let mut channels = self.fields.clone();
        let mut own = updates.to_vec();
        unwind::catch(|| fresh.apply_updates(&mut channels, &mut own, &mut FieldSet::default()))
            .map_err(|panic| panic.applying(self.schedule.step))??;
        route(
            &self.graph,
            task,
            self.schedule.step,
            &fresh,
            &|| self.router_context(task),
            out,
        )
    }

    /// Applies one superstep's writes. `input`, when given, is written to
    /// `__start__`; `bump` is false only for a step without triggers (input on a
    /// fresh thread), which neither clears nor finishes channels.
    pub(super) fn apply(
        &mut self,
        tasks: &[Task<S>],
        results: Vec<TaskResult<S>>,
        input: Option<Vec<S::Update>>,
        bump: bool,
    ) -> Result<(), GraphError> {
        let graph = Arc::clone(&self.graph);
        // Per-task scratch lists, inline for the common step of a few tasks.
        let mut order: SmallVec<[usize; 8]> = (0..tasks.len()).collect();
        // Generic (compiled per state type): a non-generic sort would need the
        // paths collected first, which cost more at run time than it saved.
        order.sort_by(|a, b| tasks[*a].path.cmp(&tasks[*b].path));

        let mut outputs: SmallVec<[NodeOutput<S>; 4]> = SmallVec::with_capacity(results.len());
        let mut control: SmallVec<[ControlWrites; 4]> =
            (0..tasks.len()).map(|_| ControlWrites::new()).collect();
        let mut restored: SmallVec<[bool; 8]> = smallvec::smallvec![false; tasks.len()];
        for (i, result) in results.into_iter().enumerate() {
            match result {
                TaskResult::Output(out) => outputs.push(out),
                TaskResult::Restored(writes) => {
                    restored[i] = true;
                    control[i] = writes.control;
                    outputs.push(NodeOutput {
                        updates: writes.updates,
                        routes: Vec::new(),
                        parent: None,
                    });
                }
                TaskResult::Interrupted(_) => {
                    restored[i] = true;
                    outputs.push(NodeOutput::default());
                }
            }
        }

        if let Some(events) = &self.stream.events {
            let (updates, results) = (
                events.wants(StreamMode::Updates),
                events.wants(StreamMode::Tasks),
            );
            for (task, out) in tasks.iter().zip(&outputs) {
                if task.node == 0 {
                    continue;
                }
                let name = &graph.nodes[task.node].name;
                if updates {
                    events.emit(StreamEvent::Updates {
                        node: Arc::clone(name),
                        updates: out.updates.clone(),
                    });
                }
                // `update_state`'s pseudo task has no id and is not reported.
                if results && !task.id.is_empty() {
                    events.emit_at(
                        self.schedule.step,
                        StreamEvent::TaskResult {
                            id: task.id.clone(),
                            name: Arc::clone(name),
                            error: None,
                            updates: out.updates.clone(),
                            interrupts: Vec::new(),
                        },
                    );
                }
            }
        }

        // versions_seen: each PULL task saw its triggers' current versions.
        for task in tasks {
            if let TaskOrder::Pull(_) = task.path {
                let triggers = &graph.nodes[task.node].triggers;
                let schedule = &mut self.schedule;
                let seen = super::schedule::seen_row(
                    &mut schedule.seen[task.node],
                    &mut schedule.spare_rows,
                    triggers.len(),
                );
                for (i, &c) in triggers.iter().enumerate() {
                    if schedule.versions[c] > 0 {
                        seen[i] = schedule.versions[c];
                    }
                }
                let latest = seen.iter().copied().max().unwrap_or(0);
                self.ran(task.node, latest);
            }
        }

        let nv = self.schedule.next_version();
        let base = graph.control_base();

        // Consume the channels that triggered tasks.
        let mut consumed: SmallVec<[usize; 8]> = tasks
            .iter()
            .filter(|t| matches!(t.path, TaskOrder::Pull(_)))
            .flat_map(|t| graph.nodes[t.node].triggers.iter().copied())
            .filter(|&c| c >= base)
            .collect();
        consumed.sort_unstable();
        consumed.dedup();
        for c in consumed {
            if self.control[c - base].consume() {
                self.schedule.versions.set(c, nv);
            }
        }

        // Control writes of tasks that ran: Command routes, static edges, routers.
        // A router reads the state with only its own task's writes applied: the
        // current state if the task wrote no field; the state after this step's field
        // writes if the task was the step's only writer; otherwise a private copy.
        let wrote_fields: SmallVec<[bool; 8]> = outputs
            .iter()
            .map(|o| o.updates.iter().any(|u| !u.is_empty()))
            .collect();
        let writers = wrote_fields.iter().filter(|w| **w).count() + usize::from(input.is_some());
        let mut route_after_fields: Option<usize> = None;
        for &ti in &order {
            if restored[ti] {
                continue;
            }
            let node = tasks[ti].node;
            routes_and_edges(&graph, node, &mut outputs[ti], &mut control[ti]);
            if graph.nodes[node].branches.is_empty() {
                continue;
            }
            if !wrote_fields[ti] {
                route(
                    &graph,
                    &tasks[ti],
                    self.schedule.step,
                    &self.state,
                    &|| self.router_context(&tasks[ti]),
                    &mut control[ti],
                )?;
            } else if writers == 1 {
                route_after_fields = Some(ti);
            } else {
                self.route_on_own_writes(&tasks[ti], &outputs[ti].updates, &mut control[ti])?;
            }
        }

        // State fields.
        let mut updated = std::mem::take(&mut self.schedule.updated);
        updated.clear();
        let mut updates: Vec<S::Update> = Vec::new();
        for &ti in &order {
            if updates.is_empty() {
                // The first writer's list is taken whole (no copy for one writer).
                updates = std::mem::take(&mut outputs[ti].updates);
            } else {
                updates.append(&mut outputs[ti].updates);
            }
        }
        let mut changed = FieldSet::default();
        if updates.iter().any(|u| !u.is_empty()) {
            let (state, fields) = (Arc::make_mut(&mut self.state), &mut self.fields);
            let appends = self.persist.saver.as_mut().and_then(|p| p.appends.as_mut());
            if let Some(appends) = appends {
                // Which leading items of each list field the step kept.
                let (applied, log) = crate::channels::kept_prefix::track(|| {
                    unwind::catch(|| state.apply_updates(fields, &mut updates, &mut changed))
                });
                applied.map_err(|panic| panic.applying(self.schedule.step))??;
                appends.applied(&changed, &log, S::field_index);
            } else {
                unwind::catch(|| state.apply_updates(fields, &mut updates, &mut changed))
                    .map_err(|panic| panic.applying(self.schedule.step))??;
            }
            self.mark(&changed, nv, &mut updated);
        }
        if let Some(ti) = route_after_fields {
            route(
                &graph,
                &tasks[ti],
                self.schedule.step,
                &self.state,
                &|| self.router_context(&tasks[ti]),
                &mut control[ti],
            )?;
        }

        // Graph input goes to `__start__` (an ephemeral channel).
        let start = graph.start_channel();
        if let Some(input) = input {
            self.start_input = Some(input);
            self.schedule.versions.set(start, nv);
            updated.insert(start);
        }

        // Control channels, grouped by channel, in task order.
        let mut triggers: SmallVec<[(usize, usize); 8]> = SmallVec::new();
        let mut joins: Vec<(usize, Vec<String>)> = Vec::new();
        let mut sends: Vec<Send> = Vec::new();
        let mut any_send_write = false;
        for &ti in &order {
            for w in control[ti].drain(..) {
                match w {
                    ControlWrite::Trigger(c) => match triggers.iter_mut().find(|(x, _)| *x == c) {
                        Some((_, n)) => *n += 1,
                        None => triggers.push((c, 1)),
                    },
                    ControlWrite::Join(c, name) => match joins.iter_mut().find(|(x, _)| *x == c) {
                        Some((_, names)) => names.push(name.to_string()),
                        None => joins.push((c, vec![name.to_string()])),
                    },
                    ControlWrite::Send(s) => {
                        any_send_write = true;
                        sends.push(s);
                    }
                }
            }
        }
        for (c, n) in triggers {
            let channel = &mut self.control[c - base];
            if channel.trigger(n)? {
                self.schedule.versions.set(c, nv);
                if channel.is_available() {
                    updated.insert(c);
                    if channel.is_ephemeral() && !self.schedule.live_branches.contains(&c) {
                        self.schedule.live_branches.push(c);
                    }
                }
            }
        }
        for (c, names) in joins {
            let channel = &mut self.control[c - base];
            if channel.join(names)? {
                self.schedule.versions.set(c, nv);
                if channel.is_available() {
                    updated.insert(c);
                }
            }
        }
        let tasks_channel = graph.tasks_channel();
        if any_send_write {
            // A non-accumulating topic: last step's sends are replaced.
            let changed = !self.sends.is_empty() || !sends.is_empty();
            self.sends = sends;
            if changed {
                self.schedule.versions.set(tasks_channel, nv);
                if !self.sends.is_empty() {
                    updated.insert(tasks_channel);
                }
            }
        }

        if bump {
            // A new step: channels not written in it hear `update([])`.
            changed.clear();
            Arc::make_mut(&mut self.state).notify_new_step(
                &mut self.fields,
                &updated,
                &mut changed,
            )?;
            self.mark(&changed, nv, &mut updated);
            if self.start_input.is_some() && !updated.contains(start) {
                self.start_input = None;
                self.schedule.versions.set(start, nv);
            }
            if !self.sends.is_empty() && !updated.contains(tasks_channel) {
                self.sends.clear();
                self.schedule.versions.set(tasks_channel, nv);
            }
            let (control_channels, versions) = (&mut self.control, &mut self.schedule.versions);
            self.schedule.live_branches.retain(|&c| {
                if updated.contains(c) {
                    return true;
                }
                if control_channels[c - base].new_step() {
                    versions.set(c, nv);
                }
                false
            });

            // Nothing triggers a node any more: finish (publishes deferred nodes).
            if !updated.intersects(&graph.triggers_any) {
                changed.clear();
                Arc::make_mut(&mut self.state).finish(&mut self.fields, &mut changed);
                self.mark(&changed, nv, &mut updated);
                for (i, channel) in self.control.iter_mut().enumerate() {
                    if channel.has_finish() && channel.finish() {
                        self.schedule.versions.set(base + i, nv);
                        if channel.is_available() {
                            updated.insert(base + i);
                        }
                    }
                }
            }
        }

        if let Some(events) = self.stream.wanting(StreamMode::Values)
            && updated
                .iter()
                .next()
                .is_some_and(|c| c < graph.num_fields())
        {
            events.emit(StreamEvent::Values(Arc::clone(&self.state)));
        }
        self.schedule.updated = updated;
        self.schedule.updated_known = true;
        Ok(())
    }

    /// Bumps the version of every changed field and records the available ones.
    fn mark(&mut self, changed: &FieldSet, nv: u64, updated: &mut FieldSet) {
        for f in changed.iter() {
            self.schedule.versions.set(f, nv);
            if self.state.is_available(&self.fields, f) {
                updated.insert(f);
            }
        }
    }
}
