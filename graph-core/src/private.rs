//! Support code for the expansions of `graph-macros` and for the workspace's
//! other crates. Not public API.

pub use serde;

/// UUID text without `format!` (graph-agents' message ids).
pub use crate::ids::format_uuid;

pub use crate::field::FieldOfType;

use crate::channels::Channel;
use std::fmt;
use std::panic::AssertUnwindSafe;

/// A binary reducer for fields of type `T`: anything usable as `fn(T, T) -> T`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as the reducer of a field of type `{T}`",
    label = "expected a function `fn({T}, {T}) -> {T}`",
    note = "a reducer takes the current value and one write, both `{T}`, and returns the new `{T}`"
)]
pub trait Reducer<T> {
    /// Folds `update` into `current`.
    fn reduce(&self, current: T, update: T) -> T;
}

impl<T, F: Fn(T, T) -> T> Reducer<T> for F {
    fn reduce(&self, current: T, update: T) -> T {
        self(current, update)
    }
}

/// Calls a reducer through the [`Reducer`] bound, so a wrong signature is reported
/// at the user's `#[reducer(path)]` with a readable message.
#[inline]
pub fn call_reducer<T, F: Reducer<T>>(f: F, current: T, update: T) -> T {
    f.reduce(current, update)
}

/// An iterator of known length over the writes to one field.
pub struct Writes<I> {
    len: usize,
    inner: I,
}

impl<I> Writes<I> {
    /// `len` must be the exact number of items `inner` yields.
    pub fn new(len: usize, inner: I) -> Self {
        Writes { len, inner }
    }
}

impl<I: Iterator> Iterator for Writes<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.len = self.len.saturating_sub(1);
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl<I: Iterator> ExactSizeIterator for Writes<I> {}

/// `Debug` for a field whose type may not implement it (prints `..` then).
pub struct DebugField<'a, T>(pub &'a T);

/// Used by the autoref dispatch of [`DebugField`].
pub trait ViaDebug {
    /// Formats the field.
    fn fmt_field(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl<T: fmt::Debug> ViaDebug for DebugField<'_, T> {
    fn fmt_field(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

/// Fallback of [`DebugField`] for types without `Debug`.
pub trait ViaOpaque {
    /// Formats the field as `..`.
    fn fmt_field(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl<T> ViaOpaque for &DebugField<'_, T> {
    fn fmt_field(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("..")
    }
}

/// Adapts a field formatter for `debug_struct().field(..)`.
pub struct FmtWith<F>(pub F);

impl<F: Fn(&mut fmt::Formatter<'_>) -> fmt::Result> fmt::Debug for FmtWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.0)(f)
    }
}

/// Applies `n` writes to a channel; used by `apply_updates` expansions. A panic
/// (in the field's reducer) is raised again naming the field, for the engine's
/// `GraphError::Panicked`.
#[inline]
pub fn update_channel<C, I>(
    channel: &mut C,
    value: &mut C::Value,
    n: usize,
    writes: I,
) -> Result<bool, crate::InvalidUpdateError>
where
    C: Channel,
    I: Iterator<Item = C::Write>,
{
    let update = AssertUnwindSafe(|| channel.update(value, Writes::new(n, writes)));
    match std::panic::catch_unwind(update) {
        Ok(result) => result,
        Err(payload) => crate::unwind::raise_in_field(channel.key(), payload),
    }
}

/// Notifies one field of a new step when it is available and not skipped.
#[inline]
pub fn notify_channel<C: Channel>(
    channel: &mut C,
    value: &mut C::Value,
) -> Result<bool, crate::InvalidUpdateError> {
    if channel.reacts_to_new_step() && channel.is_available(value) {
        channel.update(value, std::iter::empty())
    } else {
        Ok(false)
    }
}

/// Element type of a list field, for `#[channel(topic)]` fields.
pub trait ListOf {
    /// The element type.
    type Elem;
}

impl<T> ListOf for Vec<T> {
    type Elem = T;
}

/// Checks at compile time that a `#[node]`'s goto type is a [`GotoTarget`](crate::GotoTarget).
pub fn assert_goto_target<G: crate::GotoTarget>() {}

/// What a `#[node]` takes (`Self`) and returns (`R`), checked against the state `S`
/// of the graph it is added to: the one bound of the generated `Node<S>` impl that
/// depends on `S`, spanned at the node's input parameter. A node written for
/// another state is then reported as that, with both types and the graph's state,
/// instead of as "cannot return `OtherUpdate`" (`do_not_recommend` keeps rustc
/// from reporting the nested `IntoNodeOutput` bound in its place).
#[diagnostic::on_unimplemented(
    message = "this node takes `{Self}` and returns `{R}`: it cannot run in a graph whose state is `{S}`",
    label = "a node for another state",
    note = "a node of this graph takes `&{S}` (or the payload of a `Send`) and returns an update of `{S}` (`{S}Update`), a `Command`, `Vec<Send>`, `()` or a `Result` of these; add it to the graph of the state it was written for, or change its parameter and return type to `{S}`"
)]
pub trait NodeOf<S: crate::State, R> {
    /// `R::into_output`.
    fn into_output(ret: R) -> Result<crate::NodeOutput<S>, crate::NodeError>;

    /// `R::targets`.
    fn targets() -> crate::Targets;
}

#[diagnostic::do_not_recommend]
impl<S: crate::State, I: ?Sized, R: crate::IntoNodeOutput<S>> NodeOf<S, R> for I {
    #[inline]
    fn into_output(ret: R) -> Result<crate::NodeOutput<S>, crate::NodeError> {
        ret.into_output()
    }

    #[inline]
    fn targets() -> crate::Targets {
        R::targets()
    }
}
