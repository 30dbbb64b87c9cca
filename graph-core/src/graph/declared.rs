//! What `graph!` checks at compile time that its own tokens cannot tell: the
//! nodes a node's goto types or a router's return type name, read from
//! [`NodeSpec::GOTO_ROUTES`] and [`RouterFn::ROUTES`] in a const item of the
//! expansion, and whether every node is reached from START once those are
//! counted. Every fn here is `const`: a failed check is a panic in the const
//! item, which rustc reports as a compile error at the span of the user's token
//! the expansion gives it.

use crate::branch::RouterFn;
use crate::spec::{GotoRoute, IntoNodeSpec, NodeSpec};
use crate::state::State;

/// The routes a node's gotos name ([`NodeSpec::GOTO_ROUTES`]), one entry per goto
/// type (`None`: known only at run time).
pub const fn node_routes<M, N: IntoNodeSpec<M>>(
    _node: &N,
) -> &'static [Option<&'static [GotoRoute]>] {
    <N::Spec as NodeSpec>::GOTO_ROUTES
}

/// The routes a router's return type names (`None`: known only at run time).
pub const fn router_routes<S: State, C: ?Sized, M, F: RouterFn<S, M, C>>(
    _router: &F,
) -> Option<&'static [GotoRoute]> {
    F::ROUTES
}

/// The index standing for START as the source of `routes` in [`reached`]: its
/// conditional edges' routes are always followed.
pub const START: usize = usize::MAX;

/// The message of the first route in `routes` whose node is not in `names`.
pub const fn undeclared(
    names: &[&str],
    routes: &[Option<&'static [GotoRoute]>],
) -> Option<&'static str> {
    let mut i = 0;
    while i < routes.len() {
        if let Some(list) = routes[i] {
            let mut j = 0;
            while j < list.len() {
                if position(names, list[j].node).is_none() {
                    return Some(list[j].missing);
                }
                j += 1;
            }
        }
        i += 1;
    }
    None
}

/// Which of the `N` nodes named `names` are reached from START: by `entries`
/// (the targets of START's edges, and the nodes marked `dynamic`), by `edges`
/// (source, target) known from the declaration, and by the `routes` of a
/// reached source (source, the routes of its gotos or of its router; the
/// source [`START`] is always reached).
pub const fn reached<const N: usize>(
    names: &[&str; N],
    entries: &[usize],
    edges: &[(usize, usize)],
    routes: &[(usize, &[Option<&'static [GotoRoute]>])],
) -> [bool; N] {
    let mut reached = [false; N];
    let mut i = 0;
    while i < entries.len() {
        if entries[i] < N {
            reached[entries[i]] = true;
        }
        i += 1;
    }
    // Each round reaches at least one more node, or nothing changes.
    let mut round = 0;
    while round < N {
        let mut changed = false;
        let mut e = 0;
        while e < edges.len() {
            let (source, target) = edges[e];
            if source < N && target < N && reached[source] && !reached[target] {
                reached[target] = true;
                changed = true;
            }
            e += 1;
        }
        let mut r = 0;
        while r < routes.len() {
            let (source, lists) = routes[r];
            if source == START || source < N && reached[source] {
                let mut l = 0;
                while l < lists.len() {
                    if let Some(list) = lists[l] {
                        let mut k = 0;
                        while k < list.len() {
                            if let Some(target) = position(names, list[k].node)
                                && !reached[target]
                            {
                                reached[target] = true;
                                changed = true;
                            }
                            k += 1;
                        }
                    }
                    l += 1;
                }
            }
            r += 1;
        }
        if !changed {
            break;
        }
        round += 1;
    }
    reached
}

/// The index of `name` in `names`.
const fn position(names: &[&str], name: &str) -> Option<usize> {
    let mut i = 0;
    while i < names.len() {
        if same(names[i], name) {
            return Some(i);
        }
        i += 1;
    }
    None
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &[GotoRoute] = &[GotoRoute {
        node: "b",
        missing: "no b",
    }];

    #[test]
    fn finds_the_first_undeclared_route() {
        assert_eq!(undeclared(&["a", "b"], &[Some(ROUTES), None]), None);
        assert_eq!(undeclared(&["a"], &[None, Some(ROUTES)]), Some("no b"));
    }

    #[test]
    fn reaches_through_edges_and_routes() {
        let names = ["a", "b", "c", "d"];
        // START -> a; a routes to b; b -> c; d is not reached.
        let reached = reached(&names, &[0], &[(1, 2)], &[(0, &[Some(ROUTES)])]);
        assert_eq!(reached, [true, true, true, false]);
        // Routes of an unreached source do not count.
        let reached = reached_from_d(&names);
        assert_eq!(reached, [false, false, false, true]);
    }

    fn reached_from_d(names: &[&str; 4]) -> [bool; 4] {
        reached(names, &[3], &[(1, 2)], &[(0, &[Some(ROUTES)])])
    }
}
