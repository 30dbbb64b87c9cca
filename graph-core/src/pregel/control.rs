//! The engine's own channels: branch triggers and join barriers.

use crate::channels::{
    Channel, EphemeralValue, LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish,
};
use crate::compiled::ControlKind;
use crate::error::InvalidUpdateError;
use std::collections::BTreeSet;

/// One control channel with its value.
#[derive(Clone)]
pub(crate) enum ControlChannel {
    Branch(EphemeralValue<()>),
    DeferredBranch(LastValueAfterFinish<()>),
    Join(NamedBarrierValue, BTreeSet<String>),
    DeferredJoin(NamedBarrierValueAfterFinish, BTreeSet<String>),
}

impl ControlChannel {
    pub(crate) fn new(kind: &ControlKind) -> Self {
        match kind {
            ControlKind::Branch => {
                ControlChannel::Branch(EphemeralValue::with_guard("branch", false))
            }
            ControlKind::DeferredBranch => {
                ControlChannel::DeferredBranch(LastValueAfterFinish::new("branch"))
            }
            ControlKind::Join(names) => {
                ControlChannel::Join(NamedBarrierValue::new("join", names), BTreeSet::new())
            }
            ControlKind::DeferredJoin(names) => ControlChannel::DeferredJoin(
                NamedBarrierValueAfterFinish::new("join", names),
                BTreeSet::new(),
            ),
        }
    }

    /// Triggers a branch channel with `n` writes.
    pub(crate) fn trigger(&mut self, n: usize) -> Result<bool, InvalidUpdateError> {
        match self {
            ControlChannel::Branch(c) => c.update(&mut (), std::iter::repeat_n((), n)),
            ControlChannel::DeferredBranch(c) => c.update(&mut (), std::iter::repeat_n((), n)),
            _ => Ok(false),
        }
    }

    /// Writes source names into a join channel.
    pub(crate) fn join(&mut self, names: Vec<String>) -> Result<bool, InvalidUpdateError> {
        match self {
            ControlChannel::Join(c, seen) => c.update(seen, names.into_iter()),
            ControlChannel::DeferredJoin(c, seen) => c.update(seen, names.into_iter()),
            _ => Ok(false),
        }
    }

    pub(crate) fn new_step(&mut self) -> bool {
        match self {
            ControlChannel::Branch(c) => c.update(&mut (), std::iter::empty()).unwrap_or(false),
            _ => false,
        }
    }

    pub(crate) fn is_available(&self) -> bool {
        match self {
            ControlChannel::Branch(c) => c.is_available(&()),
            ControlChannel::DeferredBranch(c) => c.is_available(&()),
            ControlChannel::Join(c, seen) => c.is_available(seen),
            ControlChannel::DeferredJoin(c, seen) => c.is_available(seen),
        }
    }

    pub(crate) fn consume(&mut self) -> bool {
        match self {
            ControlChannel::Branch(c) => c.consume(&mut ()),
            ControlChannel::DeferredBranch(c) => c.consume(&mut ()),
            ControlChannel::Join(c, seen) => c.consume(seen),
            ControlChannel::DeferredJoin(c, seen) => c.consume(seen),
        }
    }

    pub(crate) fn finish(&mut self) -> bool {
        match self {
            ControlChannel::Branch(c) => c.finish(&mut ()),
            ControlChannel::DeferredBranch(c) => c.finish(&mut ()),
            ControlChannel::Join(c, seen) => c.finish(seen),
            ControlChannel::DeferredJoin(c, seen) => c.finish(seen),
        }
    }

    /// Whether the channel holds nothing: restored from no stored value, it
    /// would be exactly as it is. A checkpoint then need not list it.
    pub(crate) fn is_blank(&self) -> bool {
        match self {
            ControlChannel::Branch(c) => c.checkpoint(&()).is_none(),
            ControlChannel::DeferredBranch(c) => c.checkpoint(&()).is_none(),
            ControlChannel::Join(_, seen) => seen.is_empty(),
            ControlChannel::DeferredJoin(c, seen) => c
                .checkpoint(seen)
                .is_none_or(|(seen, finished)| seen.is_empty() && !finished),
        }
    }

    pub(crate) fn is_ephemeral(&self) -> bool {
        matches!(self, ControlChannel::Branch(_))
    }

    pub(crate) fn has_finish(&self) -> bool {
        matches!(
            self,
            ControlChannel::DeferredBranch(_) | ControlChannel::DeferredJoin(..)
        )
    }
}
