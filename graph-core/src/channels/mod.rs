//! Channels: how a state field reacts to the writes of a superstep.
//!
//! A channel is the *behaviour* of one field (LangGraph's `BaseChannel`); the value
//! itself lives in the state struct, so a node reads `&S` without the engine copying
//! anything. [`ChannelCell`] pairs a channel with its value for standalone use.
//!
//! ```
//! use stategraph::channels::{ChannelCell, LastValue};
//!
//! let mut cell = ChannelCell::new(LastValue::<i32>::new("count"));
//! assert!(cell.get().is_err()); // never written: empty, not 0
//! assert!(cell.update([3]).unwrap());
//! assert_eq!(cell.get(), Ok(&3));
//! let err = cell.update([5, 6]).unwrap_err();
//! assert!(err.to_string().contains("At key 'count': Can receive only one value per step"));
//! ```

mod any_value;
mod barrier;
mod binop;
mod ephemeral;
mod extend;
mod last_value;
mod topic;
mod untracked;

pub use any_value::AnyValue;
pub use barrier::{NamedBarrierValue, NamedBarrierValueAfterFinish};
pub(crate) use binop::kept_prefix;
pub use binop::{
    report_kept_prefix, BinaryOperatorAggregate, Overwrite, ReducerError, ReducerWrite,
};
pub use ephemeral::EphemeralValue;
pub use extend::{extend, AppendList};
pub use last_value::{LastValue, LastValueAfterFinish};
pub use topic::{Topic, TopicSaved, TopicWrite};
pub use untracked::UntrackedValue;

use crate::error::{EmptyChannelError, InvalidUpdateError};
use serde::{de::DeserializeOwned, Serialize};

/// The behaviour of one state channel (LangGraph's `BaseChannel` contract).
///
/// The channel holds only its bookkeeping (is a value present, has `finish()` run, ...);
/// the value is a slot passed in by reference, normally a field of the state struct.
pub trait Channel: Clone + Send + Sync + 'static {
    /// The type of the slot this channel governs (the state field's type).
    type Value: Send + Sync + 'static;
    /// One write, as a node produces it.
    type Write: Send + 'static;
    /// The serialised form borrowed from the slot when checkpointing.
    type Saved<'a>: Serialize
    where
        Self: 'a;
    /// The serialised form read back from a checkpoint.
    type Restored: DeserializeOwned;

    /// The state key this channel serves, used in error messages.
    fn key(&self) -> &str;

    /// Applies all writes of one superstep, in order. Returns whether the channel changed.
    ///
    /// An empty iterator is the "a new superstep happened" notification.
    fn update<I>(&mut self, value: &mut Self::Value, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = Self::Write>;

    /// Whether a read would succeed.
    fn is_available(&self, value: &Self::Value) -> bool;

    /// Called once per superstep in which this channel triggered a task.
    fn consume(&mut self, _value: &mut Self::Value) -> bool {
        false
    }

    /// Called when the run would otherwise stop.
    fn finish(&mut self, _value: &mut Self::Value) -> bool {
        false
    }

    /// Whether `update` with no writes can change this channel (ephemeral kinds).
    /// The engine skips the step notification for channels where this is false.
    fn reacts_to_new_step(&self) -> bool {
        false
    }

    /// The checkpoint form of the channel, or `None` when nothing is to be stored.
    fn checkpoint<'a>(&'a self, value: &'a Self::Value) -> Option<Self::Saved<'a>>;

    /// Restores the channel from a checkpoint form (`None`: the initial state).
    fn restore(&mut self, value: &mut Self::Value, saved: Option<Self::Restored>);
}

/// A channel together with the value it governs.
#[derive(Debug, Clone)]
pub struct ChannelCell<C: Channel> {
    channel: C,
    value: C::Value,
}

impl<C: Channel> ChannelCell<C>
where
    C::Value: Default,
{
    /// A fresh, never-written cell.
    pub fn new(channel: C) -> Self {
        ChannelCell {
            channel,
            value: C::Value::default(),
        }
    }

    /// Applies one superstep's writes; see [`Channel::update`].
    pub fn update<I>(&mut self, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: IntoIterator,
        I::IntoIter: ExactSizeIterator<Item = C::Write>,
    {
        self.channel.update(&mut self.value, writes.into_iter())
    }

    /// The current value, or [`EmptyChannelError`].
    pub fn get(&self) -> Result<&C::Value, EmptyChannelError> {
        if self.channel.is_available(&self.value) {
            Ok(&self.value)
        } else {
            Err(EmptyChannelError)
        }
    }

    /// Whether [`get`](Self::get) would succeed.
    pub fn is_available(&self) -> bool {
        self.channel.is_available(&self.value)
    }

    /// See [`Channel::consume`].
    pub fn consume(&mut self) -> bool {
        self.channel.consume(&mut self.value)
    }

    /// See [`Channel::finish`].
    pub fn finish(&mut self) -> bool {
        self.channel.finish(&mut self.value)
    }

    /// The checkpoint of this cell as JSON, `None` when nothing is stored.
    ///
    /// Fails when the value cannot be represented in JSON (e.g. a map with
    /// non-string keys).
    pub fn checkpoint(&self) -> Result<Option<serde_json::Value>, serde_json::Error> {
        self.channel
            .checkpoint(&self.value)
            .map(serde_json::to_value)
            .transpose()
    }

    /// A fresh cell of the same kind restored from [`checkpoint`](Self::checkpoint)'s output.
    pub fn from_checkpoint(
        &self,
        saved: Option<serde_json::Value>,
    ) -> Result<Self, serde_json::Error> {
        let restored = saved.map(serde_json::from_value).transpose()?;
        let mut channel = self.channel.clone();
        let mut value = C::Value::default();
        channel.restore(&mut value, restored);
        Ok(ChannelCell { channel, value })
    }

    /// The channel and its value.
    pub fn into_parts(self) -> (C, C::Value) {
        (self.channel, self.value)
    }
}

/// The "at most one value per step" check shared by the guarded channels.
pub(crate) fn single_write_error(key: &str, kind: &str) -> InvalidUpdateError {
    InvalidUpdateError::new(format!(
        "At key '{key}': {kind}(guard=True) can receive only one value per step. Use guard=False \
         if you want to store any one of multiple values."
    ))
}

#[cfg(test)]
mod tests;
