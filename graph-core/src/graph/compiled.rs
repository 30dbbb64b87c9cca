//! The compiled layout of a graph: flat channel ids, node triggers and writers.

use super::branch::Router;
use super::StateGraph;
use crate::node::ErasedNode;
use crate::retry::RetryPolicy;
use crate::state::{FieldSet, State};
use crate::START;
use std::any::TypeId;
// hashbrown's default hasher (foldhash): the runtime looks names up here on
// every restore and every `Send`, and std's SipHash costs several times more.
use hashbrown::HashMap;
use std::sync::Arc;

/// Kind of an engine-owned control channel.
#[derive(Debug, Clone)]
pub(crate) enum ControlKind {
    /// `branch:to:{node}`: EphemeralValue(guard=false).
    Branch,
    /// `branch:to:{node}` of a deferred node: LastValueAfterFinish.
    DeferredBranch,
    /// `join:{a}+{b}:{node}`: NamedBarrierValue.
    Join(Vec<String>),
    /// A join into a deferred node: NamedBarrierValueAfterFinish.
    DeferredJoin(Vec<String>),
}

/// A static write a node makes after it runs.
#[derive(Debug, Clone)]
pub(crate) enum EdgeWrite {
    /// Trigger the branch channel with this id.
    Branch(usize),
    /// Write the source's name into the join channel with this id.
    Join(usize, Arc<str>),
}

pub(crate) struct CompiledNode<S: State> {
    pub(crate) name: Arc<str>,
    /// `None` for `__start__`, which the engine runs itself.
    pub(crate) runner: Option<Arc<dyn ErasedNode<S>>>,
    /// Trigger channel ids, sorted by channel name.
    pub(crate) triggers: Vec<usize>,
    pub(crate) edges: Vec<EdgeWrite>,
    pub(crate) branches: Vec<Arc<dyn Router<S>>>,
    pub(crate) input_is_state: bool,
    /// Position of the node in name order (PULL task order).
    pub(crate) rank: usize,
    /// The node's retry policy (its own, or the graph's).
    pub(crate) retry: Option<RetryPolicy>,
    /// The longest an attempt of the node may run.
    pub(crate) timeout: Option<std::time::Duration>,
    /// How the node's results are cached.
    pub(crate) cache: Option<crate::cache::CachePolicy>,
}

/// A compiled graph's structure; shared by every run.
pub(crate) struct Graph<S: State> {
    pub(crate) nodes: Vec<CompiledNode<S>>,
    pub(crate) node_by_name: HashMap<Arc<str>, usize>,
    /// Names of all channels: fields, `__start__`, `__pregel_tasks`, then control.
    pub(crate) channel_names: Vec<Arc<str>>,
    /// Channel id by name.
    pub(crate) channel_ids: HashMap<Arc<str>, usize>,
    /// Each channel's place in name order: a checkpoint's maps are built in
    /// this order.
    pub(crate) channel_rank: Vec<usize>,
    /// Kinds of control channels, indexed from [`Graph::control_base`].
    pub(crate) control: Vec<ControlKind>,
    /// Nodes triggered by each channel.
    pub(crate) trigger_to_nodes: Vec<Vec<usize>>,
    /// Channels that trigger at least one node.
    pub(crate) triggers_any: FieldSet,
    /// Branch channel id of each node (`usize::MAX` for `__start__`).
    pub(crate) branch_of: Vec<usize>,
    /// Static breakpoints set at build time.
    pub(crate) interrupt_before: crate::interrupt::Breakpoints,
    pub(crate) interrupt_after: crate::interrupt::Breakpoints,
}

impl<S: State> Graph<S> {
    pub(crate) fn num_fields(&self) -> usize {
        S::FIELDS.len()
    }

    pub(crate) fn start_channel(&self) -> usize {
        S::FIELDS.len()
    }

    pub(crate) fn tasks_channel(&self) -> usize {
        S::FIELDS.len() + 1
    }

    pub(crate) fn control_base(&self) -> usize {
        S::FIELDS.len() + 2
    }

    pub(crate) fn num_channels(&self) -> usize {
        self.channel_names.len()
    }
}

/// The barrier channel of a join edge: LangGraph's `join:{a}+{b}:{target}`.
pub(crate) fn join_channel_name(sources: &[String], target: &str) -> String {
    format!("join:{}:{target}", sources.join("+"))
}

pub(crate) fn build<S: State>(graph: StateGraph<S>) -> Graph<S> {
    let StateGraph {
        nodes: defs,
        edges,
        branches,
        errors: _,
        retry: default_retry,
        interrupt_before,
        interrupt_after,
        destinations: _,
    } = graph;

    let mut channel_names: Vec<Arc<str>> = S::FIELDS.iter().map(|f| Arc::from(*f)).collect();
    channel_names.push(Arc::from(START));
    channel_names.push(Arc::from(crate::checkpoint::TASKS_CHANNEL));
    let control_base = channel_names.len();
    let mut control = Vec::new();

    let mut nodes: Vec<CompiledNode<S>> = Vec::with_capacity(defs.len() + 1);
    nodes.push(CompiledNode {
        name: Arc::from(START),
        runner: None,
        triggers: vec![S::FIELDS.len()],
        edges: Vec::new(),
        branches: Vec::new(),
        input_is_state: true,
        rank: 0,
        retry: None,
        timeout: None,
        cache: None,
    });
    let mut branch_of = vec![usize::MAX];
    let mut deferred = vec![false];
    for def in defs {
        let id = control_base + control.len();
        channel_names.push(Arc::from(format!("branch:to:{}", def.name)));
        control.push(if def.defer {
            ControlKind::DeferredBranch
        } else {
            ControlKind::Branch
        });
        branch_of.push(id);
        deferred.push(def.defer);
        let input_is_state = def.runner.input_type().0 == TypeId::of::<S>();
        nodes.push(CompiledNode {
            name: Arc::from(def.name.as_str()),
            runner: Some(def.runner),
            triggers: vec![id],
            edges: Vec::new(),
            branches: Vec::new(),
            input_is_state,
            rank: 0,
            retry: def.retry.or_else(|| default_retry.clone()),
            timeout: def.timeout,
            cache: def.cache,
        });
    }
    let node_by_name: HashMap<Arc<str>, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (Arc::clone(&n.name), i))
        .collect();

    for edge in edges {
        let Some(&target) = node_by_name.get(edge.target.as_str()) else {
            continue; // END: no write
        };
        if edge.sources.len() == 1 {
            if let Some(&source) = node_by_name.get(edge.sources[0].as_str()) {
                nodes[source]
                    .edges
                    .push(EdgeWrite::Branch(branch_of[target]));
            }
        } else {
            let id = control_base + control.len();
            channel_names.push(Arc::from(join_channel_name(&edge.sources, &edge.target)));
            control.push(if deferred[target] {
                ControlKind::DeferredJoin(edge.sources.clone())
            } else {
                ControlKind::Join(edge.sources.clone())
            });
            nodes[target].triggers.push(id);
            for source in &edge.sources {
                if let Some(&s) = node_by_name.get(source.as_str()) {
                    nodes[s]
                        .edges
                        .push(EdgeWrite::Join(id, Arc::from(source.as_str())));
                }
            }
        }
    }
    for branch in branches {
        if let Some(&source) = node_by_name.get(branch.source.as_str()) {
            nodes[source].branches.push(branch.router);
        }
    }

    let mut trigger_to_nodes = vec![Vec::new(); channel_names.len()];
    let mut triggers_any = FieldSet::with_capacity(channel_names.len());
    for (i, node) in nodes.iter_mut().enumerate() {
        node.triggers
            .sort_by(|a, b| channel_names[*a].cmp(&channel_names[*b]));
        for &t in &node.triggers {
            trigger_to_nodes[t].push(i);
            triggers_any.insert(t);
        }
    }
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|a, b| nodes[*a].name.cmp(&nodes[*b].name));
    for (rank, &i) in order.iter().enumerate() {
        nodes[i].rank = rank;
    }
    let mut channels_by_name: Vec<usize> = (0..channel_names.len()).collect();
    channels_by_name.sort_by(|a, b| channel_names[*a].cmp(&channel_names[*b]));
    let mut channel_rank = vec![0; channel_names.len()];
    for (rank, &c) in channels_by_name.iter().enumerate() {
        channel_rank[c] = rank;
    }

    let channel_ids = channel_names
        .iter()
        .enumerate()
        .map(|(i, n)| (Arc::clone(n), i))
        .collect();
    Graph {
        nodes,
        node_by_name,
        channel_ids,
        channel_names,
        channel_rank,
        control,
        trigger_to_nodes,
        triggers_any,
        branch_of,
        interrupt_before,
        interrupt_after,
    }
}
