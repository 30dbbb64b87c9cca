//! The compiled form of a graph, as the engine runs it: flat channel ids, node
//! triggers and writers. The builder (`crate::graph`) lays it out at `compile()`;
//! the engine (`crate::pregel`) only reads it.

use crate::branch::Router;
use crate::node::ErasedNode;
use crate::retry::RetryPolicy;
use crate::state::{FieldSet, State};
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
    /// Whether the node's input is a [`View`](crate::View) of the state, which its
    /// PULL tasks project from the state.
    pub(crate) projects: bool,
    /// The node's retry policy (its own, or the graph's).
    pub(crate) retry: Option<RetryPolicy>,
    /// The longest an attempt of the node may run.
    pub(crate) timeout: Option<std::time::Duration>,
    /// How the node's results are cached.
    pub(crate) cache: Option<crate::cache::CachePolicy>,
}

/// Sorts node ids by their place in name order (`node_rank`, from
/// [`Graph::node_rank`]). Not generic over the state, so that the sort is
/// compiled once rather than for every state type.
pub(crate) fn sort_by_rank(nodes: &mut [usize], node_rank: &[usize]) {
    nodes.sort_unstable_by_key(|&n| node_rank[n]);
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
    /// Each node's place in name order (PULL task order), by node id.
    pub(crate) node_rank: Vec<usize>,
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
    /// New input is applied by the `input` checkpoint itself, whose next step
    /// runs the nodes after `START` (the Functional API's entrypoints).
    pub(crate) direct_input: bool,
    /// Buffers of finished runs, for the next.
    pub(crate) spares: RunSpares,
}

/// The buffers finished runs of a graph leave for its next runs. They are
/// the engine's own type (`pregel`'s `Spare`), which this module cannot name
/// (the engine comes after it in the module order), so they are kept as
/// `Any`: the engine puts in and takes out only its own.
#[derive(Default)]
pub(crate) struct RunSpares(pub(crate) std::sync::Mutex<Vec<Box<dyn std::any::Any + Send>>>);

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
