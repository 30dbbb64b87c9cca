//! `compile()`'s layout step: the builder's nodes, edges and branches laid out as
//! the engine's [`Graph`]: channel ids, triggers and writers.

use super::StateGraph;
use crate::compiled::{join_channel_name, CompiledNode, ControlKind, EdgeWrite, Graph};
use crate::state::{FieldSet, State};
use crate::START;
use hashbrown::HashMap;
use std::any::TypeId;
use std::sync::Arc;

pub(crate) fn build<S: State, C: ?Sized + 'static>(graph: StateGraph<S, C>) -> Graph<S> {
    let StateGraph {
        nodes: defs,
        edges,
        branches,
        errors: _,
        retry: default_retry,
        interrupt_before,
        interrupt_after,
        destinations: _,
        direct_input,
        context: _,
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
        projects: false,
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
        let input_is_state = def.runner.reads_state();
        let projects = input_is_state && def.runner.input_type().0 != TypeId::of::<S>();
        nodes.push(CompiledNode {
            name: Arc::from(def.name.as_str()),
            runner: Some(def.runner),
            triggers: vec![id],
            edges: Vec::new(),
            branches: Vec::new(),
            input_is_state,
            projects,
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
        sort_by_name(&mut node.triggers, &channel_names);
        for &t in &node.triggers {
            trigger_to_nodes[t].push(i);
            triggers_any.insert(t);
        }
    }
    let node_names: Vec<Arc<str>> = nodes.iter().map(|n| Arc::clone(&n.name)).collect();
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    sort_by_name(&mut order, &node_names);
    let mut node_rank = vec![0; nodes.len()];
    for (rank, &i) in order.iter().enumerate() {
        node_rank[i] = rank;
    }
    let mut channels_by_name: Vec<usize> = (0..channel_names.len()).collect();
    sort_by_name(&mut channels_by_name, &channel_names);
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
        node_rank,
        control,
        trigger_to_nodes,
        triggers_any,
        branch_of,
        interrupt_before,
        interrupt_after,
        direct_input,
        spares: Default::default(),
    }
}

/// Sorts `ids` (indices into `names`) by name, keeping the order of equal names.
/// Not generic: `build` is compiled once per state type, and the sort inside it
/// was the bulk of that (compile-time cost only).
fn sort_by_name(ids: &mut [usize], names: &[Arc<str>]) {
    ids.sort_by(|a, b| names[*a].cmp(&names[*b]));
}
