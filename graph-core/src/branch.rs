//! Conditional edges: routers and what they may return ([`IntoRoutes`]).

use crate::command::{Destination, GotoTarget, Route, Send, Targets};
use crate::state::State;
use std::borrow::Cow;

/// One destination chosen by a router.
#[derive(Debug, Clone)]
pub enum BranchRoute {
    /// The node with this name.
    Node(Cow<'static, str>),
    /// `END`.
    End,
    /// A PUSH task.
    Send(Send),
}

/// What a router of a conditional edge may return.
#[diagnostic::on_unimplemented(
    message = "a router cannot return `{Self}`",
    label = "not a routing result",
    note = "return a `#[derive(Goto)]` enum, a node name (`&'static str` / `String`), a `stategraph::Send`, or a `Vec` of one of these"
)]
pub trait IntoRoutes {
    /// Appends the chosen destinations.
    fn into_routes(self, out: &mut Vec<BranchRoute>);

    /// The destinations this type can produce.
    fn targets() -> Targets;
}

fn push_goto<G: GotoTarget>(g: &G, out: &mut Vec<BranchRoute>) {
    out.push(match g.destination() {
        Destination::End => BranchRoute::End,
        Destination::Node(n) => BranchRoute::Node(Cow::Owned(n.to_owned())),
    });
}

// Not recommended: a router returning `bool` is told "a router cannot return
// `bool`" with the list of what it can return, rather than that `bool` is not
// a `GotoTarget` with the list of every `#[derive(Goto)]` enum in scope.
#[diagnostic::do_not_recommend]
impl<G: GotoTarget> IntoRoutes for G {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        push_goto(&self, out);
    }

    fn targets() -> Targets {
        G::targets()
    }
}

impl<G: GotoTarget> IntoRoutes for Vec<G> {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        for g in &self {
            push_goto(g, out);
        }
    }

    fn targets() -> Targets {
        G::targets()
    }
}

impl IntoRoutes for Send {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        out.push(BranchRoute::Send(self));
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl IntoRoutes for Vec<Send> {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        out.extend(self.into_iter().map(BranchRoute::Send));
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl<G: GotoTarget> IntoRoutes for Vec<Route<G>> {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        for r in self {
            match r {
                Route::To(g) => push_goto(&g, out),
                Route::Send(s) => out.push(BranchRoute::Send(s)),
            }
        }
    }

    fn targets() -> Targets {
        match G::targets() {
            Targets::None => Targets::Dynamic,
            other => other,
        }
    }
}

pub(crate) trait Router<S: State>: std::marker::Send + Sync {
    fn route(&self, state: &S, out: &mut Vec<BranchRoute>);
    fn targets(&self) -> Targets;
}

pub(crate) struct BranchFn<F, R> {
    f: F,
    _marker: std::marker::PhantomData<fn() -> R>,
}

impl<F, R> BranchFn<F, R> {
    pub(crate) fn new(f: F) -> Self {
        BranchFn {
            f,
            _marker: std::marker::PhantomData,
        }
    }
}

impl<S, F, R> Router<S> for BranchFn<F, R>
where
    S: State,
    F: Fn(&S) -> R + std::marker::Send + Sync + 'static,
    R: IntoRoutes,
{
    fn route(&self, state: &S, out: &mut Vec<BranchRoute>) {
        (self.f)(state).into_routes(out);
    }

    fn targets(&self) -> Targets {
        R::targets()
    }
}
