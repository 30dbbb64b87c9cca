//! Streaming: [`StreamMode`]s to ask for, and the typed [`StreamEvent`]s you get.

use crate::state::State;
use std::fmt;
use std::sync::Arc;

/// What a stream reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamMode {
    /// The full state after every superstep that changed it.
    Values,
    /// Each node's updates as it finishes.
    Updates,
    /// Whatever nodes emit with [`Context::write_custom`](crate::Context::write_custom).
    Custom,
}

impl StreamMode {
    fn bit(self) -> u8 {
        match self {
            StreamMode::Values => 1,
            StreamMode::Updates => 2,
            StreamMode::Custom => 4,
        }
    }
}

/// A set of [`StreamMode`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamModes(u8);

impl StreamModes {
    /// Whether `mode` is in the set.
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode.bit() != 0
    }

    /// The set with `mode` added.
    pub fn with(self, mode: StreamMode) -> Self {
        StreamModes(self.0 | mode.bit())
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        StreamModes(mode.bit())
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes
            .into_iter()
            .fold(StreamModes::default(), StreamModes::with)
    }
}

impl From<&[StreamMode]> for StreamModes {
    fn from(modes: &[StreamMode]) -> Self {
        modes
            .iter()
            .copied()
            .fold(StreamModes::default(), StreamModes::with)
    }
}

/// One event of a stream.
#[non_exhaustive]
pub enum StreamEvent<S: State> {
    /// The full state after a superstep (shared, not copied).
    Values(Arc<S>),
    /// The updates one node produced, in order (usually one).
    Updates {
        /// The node.
        node: Arc<str>,
        /// Its updates.
        updates: Vec<S::Update>,
    },
    /// A value a node emitted with `write_custom`.
    Custom {
        /// The node.
        node: Arc<str>,
        /// The value.
        value: serde_json::Value,
    },
}

impl<S: State> StreamEvent<S> {
    /// The mode this event belongs to.
    pub fn mode(&self) -> StreamMode {
        match self {
            StreamEvent::Values(_) => StreamMode::Values,
            StreamEvent::Updates { .. } => StreamMode::Updates,
            StreamEvent::Custom { .. } => StreamMode::Custom,
        }
    }
}

impl<S> fmt::Debug for StreamEvent<S>
where
    S: State + fmt::Debug,
    S::Update: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamEvent::Values(s) => f.debug_tuple("Values").field(s).finish(),
            StreamEvent::Updates { node, updates } => f
                .debug_struct("Updates")
                .field("node", node)
                .field("updates", updates)
                .finish(),
            StreamEvent::Custom { node, value } => f
                .debug_struct("Custom")
                .field("node", node)
                .field("value", value)
                .finish(),
        }
    }
}
