//! Scheduling: which tasks a superstep runs. Channel versions, what each node
//! has seen of its triggers, the channels the last step updated, the step
//! counter and the recursion limit, and the task ids (docs/semantics.md §2).

use super::{Run, Task};
use crate::error::{GraphError, SendError};
use crate::ids::{TaskIds, TaskOrder};
use crate::node::TaskInput;
use crate::state::{FieldSet, State};
use std::sync::Arc;

/// Channel versions, indexed by channel id (0 = never written). The maximum is
/// tracked so a step's next version costs O(1), not O(channels), and so are the
/// channels whose version changed since the last stored checkpoint: storing one
/// costs what changed, not the size of the graph.
#[derive(Clone)]
pub(crate) struct Versions {
    pub(super) values: Vec<u64>,
    pub(super) max: u64,
    /// Channels set since [`clear_changed`](Self::clear_changed), in the order
    /// first set (tracked only for a run that stores checkpoints).
    pub(super) changed: smallvec::SmallVec<[usize; 8]>,
    pub(super) is_changed: FieldSet,
    pub(super) track: bool,
}

impl Versions {
    /// `values` is an empty vector to fill (a spare's, see `spare`).
    pub(super) fn new(n: usize, track: bool, mut values: Vec<u64>) -> Self {
        values.resize(n, 0);
        Versions {
            values,
            max: 0,
            changed: smallvec::SmallVec::new(),
            is_changed: FieldSet::default(),
            track,
        }
    }

    pub(super) fn set(&mut self, channel: usize, version: u64) {
        self.values[channel] = version;
        self.max = self.max.max(version);
        if self.track && !self.is_changed.contains(channel) {
            self.is_changed.insert(channel);
            self.changed.push(channel);
        }
    }

    /// Whether `channel` was set since the last stored checkpoint.
    pub(super) fn is_changed(&self, channel: usize) -> bool {
        self.is_changed.contains(channel)
    }

    /// The channels set since the last stored checkpoint.
    pub(super) fn changed(&self) -> &[usize] {
        &self.changed
    }

    /// Every version is stored now.
    pub(super) fn clear_changed(&mut self) {
        for c in self.changed.drain(..) {
            self.is_changed.remove(c);
        }
    }
}

impl std::ops::Index<usize> for Versions {
    type Output = u64;

    fn index(&self, channel: usize) -> &u64 {
        &self.values[channel]
    }
}

/// An entry of `Schedule::seen`, made (all 0, one per trigger, in one of
/// `rows` if there is one) if it is `None`.
pub(super) fn seen_row<'a>(
    entry: &'a mut Option<Vec<u64>>,
    rows: &mut Vec<Vec<u64>>,
    triggers: usize,
) -> &'a mut Vec<u64> {
    entry.get_or_insert_with(|| match rows.pop() {
        Some(mut row) => {
            row.clear();
            row.resize(triggers, 0);
            row
        }
        None => vec![0; triggers],
    })
}

/// What decides the next superstep's tasks, owned by the run.
pub(crate) struct Schedule {
    pub(super) versions: Versions,
    /// Per node: the version of each trigger when the node last ran.
    pub(super) seen: Vec<Option<Vec<u64>>>,
    /// Channels updated (and available) by the previous step.
    pub(super) updated: FieldSet,
    /// Whether `updated` is known (false right after loading an old checkpoint).
    pub(super) updated_known: bool,
    /// Control channels of the ephemeral kind currently holding a value.
    pub(super) live_branches: Vec<usize>,
    pub(super) step: i64,
    /// The first step past the recursion limit.
    pub(super) stop: i64,
    pub(super) ids: TaskIds,
    /// `prepare`'s list of nodes to check, kept between steps.
    pub(super) candidates: Vec<usize>,
    /// Vectors for entries of `seen`, left by an earlier run (see `spare`).
    pub(super) spare_rows: Vec<Vec<u64>>,
}

impl Schedule {
    /// The schedule of a run that has not started: nothing written, step -1.
    /// `track` records the channels changed since the last stored checkpoint
    /// (only a run with a saver stores checkpoints).
    /// Its vectors are `spare`'s (see `spare`).
    pub(super) fn new(
        channels: usize,
        nodes: usize,
        track: bool,
        spare: &mut super::spare::Spare,
    ) -> Self {
        let mut seen = std::mem::take(&mut spare.seen);
        seen.resize(nodes, None);
        let live_branches = std::mem::take(&mut spare.live_branches);
        let candidates = std::mem::take(&mut spare.candidates);
        let spare_rows = std::mem::take(&mut spare.seen_rows);
        Schedule {
            versions: Versions::new(channels, track, std::mem::take(&mut spare.versions)),
            seen,
            updated: FieldSet::with_capacity(channels),
            updated_known: true,
            live_branches,
            step: -1,
            stop: 0,
            ids: TaskIds::default(),
            candidates,
            spare_rows,
        }
    }

    /// Node `node`'s entry of `seen`, made (all 0, one per trigger) if the
    /// node has none yet.
    pub(super) fn seen_of(&mut self, node: usize, triggers: usize) -> &mut Vec<u64> {
        seen_row(&mut self.seen[node], &mut self.spare_rows, triggers)
    }

    /// The version every channel written by the next step gets.
    pub(super) fn next_version(&self) -> u64 {
        self.versions.max + 1
    }

    /// The recursion limit counts from here: a run may take `limit` more steps.
    pub(super) fn limit_steps(&mut self, limit: i64) {
        self.stop = self.step + limit + 1;
    }

    /// The node an update without `as_node` is attributed to (docs/semantics.md
    /// §7.3): the one node that ran last, among `nodes` nodes.
    pub(super) fn infer_as_node(&self, nodes: usize) -> Result<usize, GraphError> {
        if nodes == 2 {
            return Ok(1);
        }
        let latest: Vec<(usize, u64)> = self
            .seen
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(n, seen)| {
                seen.as_ref()
                    .map(|s| (n, s.iter().copied().max().unwrap_or(0)))
            })
            .collect();
        let Some(max) = latest.iter().map(|(_, v)| *v).max() else {
            return Ok(0);
        };
        let at_max: Vec<usize> = latest
            .iter()
            .filter(|(_, v)| *v == max)
            .map(|(n, _)| *n)
            .collect();
        match at_max.as_slice() {
            [only] => Ok(*only),
            _ => Err(GraphError::InvalidUpdate(
                crate::error::InvalidUpdateError::new("Ambiguous update, specify as_node"),
            )),
        }
    }
}

impl<S: State> Run<S> {
    pub(super) fn channel_available(&self, c: usize) -> bool {
        let g = &self.graph;
        if c < g.num_fields() {
            self.state.is_available(&self.fields, c)
        } else if c == g.start_channel() {
            self.start_input.is_some()
        } else if c == g.tasks_channel() {
            !self.sends.is_empty()
        } else {
            self.control[c - g.control_base()].is_available()
        }
    }

    /// The namespace a task of node `name` hashes into its id: the node's name,
    /// under this run's namespace in a subgraph.
    pub(super) fn task_ns<'a>(&self, name: &'a str) -> std::borrow::Cow<'a, str> {
        if self.ns.is_empty() {
            std::borrow::Cow::Borrowed(name)
        } else {
            std::borrow::Cow::Owned(format!("{}|{name}", self.ns))
        }
    }

    /// The tasks of the current step: PUSH tasks for pending `Send`s, then PULL
    /// tasks for nodes whose triggers have new versions (in node-name order).
    pub(super) fn prepare(&mut self) -> Result<Vec<Task<S>>, GraphError> {
        let graph = Arc::clone(&self.graph);
        // The last step's vector when it left one (see `Run::superstep`).
        let mut tasks = std::mem::take(&mut self.spare_tasks);
        tasks.reserve_exact(self.sends.len() + 1);
        let mut step = itoa::Buffer::new();
        let step_str = step.format(self.schedule.step);

        for (i, send) in self.sends.iter().enumerate() {
            let Some(&node) = graph.node_by_name.get(send.node()) else {
                tracing::warn!(
                    node = send.node(),
                    "Ignoring unknown node name {} in pending sends",
                    send.node()
                );
                continue;
            };
            let Some(runner) = graph.nodes[node].runner.as_ref() else {
                tracing::warn!("Ignoring a Send to __start__");
                continue;
            };
            let (expected, expected_name) = runner.input_type();
            let (actual, actual_name) = send.payload_type();
            if expected != actual {
                return Err(GraphError::InvalidSend(SendError::PayloadType {
                    node: send.node().to_string(),
                    payload_type: actual_name,
                    input_type: expected_name,
                }));
            }
            let name = &graph.nodes[node].name;
            let mut index_text = itoa::Buffer::new();
            let index = index_text.format(i);
            let task_ns = self.task_ns(name);
            let id = self.schedule.ids.id(
                &self.persist.checkpoint,
                &task_ns,
                [step_str, name, "__pregel_push", index].into_iter(),
            );
            tasks.push(Task {
                node,
                path: TaskOrder::Push(i),
                id,
                input: Some(TaskInput::Payload(send.payload_arc())),
            });
        }

        if self.schedule.versions.max == 0 {
            return Ok(tasks);
        }
        let mut candidates = std::mem::take(&mut self.schedule.candidates);
        candidates.clear();
        if self.schedule.updated_known {
            for c in self.schedule.updated.iter() {
                candidates.extend_from_slice(&graph.trigger_to_nodes[c]);
            }
            crate::compiled::sort_by_rank(&mut candidates, &graph.node_rank);
            candidates.dedup();
        } else {
            candidates.extend(0..graph.nodes.len());
        }
        for &node in &candidates {
            let spec = &graph.nodes[node];
            let seen = self.schedule.seen[node].as_deref();
            let fires = spec.triggers.iter().enumerate().any(|(i, &c)| {
                self.channel_available(c) && seen.is_none_or(|s| self.schedule.versions[c] > s[i])
            });
            if !fires {
                continue;
            }
            if !spec.input_is_state {
                let (_, input) = spec
                    .runner
                    .as_ref()
                    .map_or((std::any::TypeId::of::<()>(), "?"), |r| r.input_type());
                return Err(GraphError::InvalidSend(SendError::RoutedToPayloadNode {
                    node: spec.name.to_string(),
                    input_type: input,
                }));
            }
            let parts = [step_str, &*spec.name, "__pregel_pull"]
                .into_iter()
                .chain(spec.triggers.iter().map(|&c| &*graph.channel_names[c]));
            let task_ns = self.task_ns(&spec.name);
            let id = self
                .schedule
                .ids
                .id(&self.persist.checkpoint, &task_ns, parts);
            let input = if node == 0 {
                None
            } else if spec.projects {
                // A view: only its fields are cloned out of the state.
                spec.runner
                    .as_ref()
                    .and_then(|runner| runner.project(&self.state))
                    .map(TaskInput::Payload)
            } else {
                Some(TaskInput::State(Arc::clone(&self.state)))
            };
            tasks.push(Task {
                node,
                path: TaskOrder::Pull(graph.node_rank[node]),
                id,
                input,
            });
        }
        self.schedule.candidates = candidates;
        Ok(tasks)
    }
}
