//! Support code for the expansions of `graph-macros` and for the workspace's
//! other crates. Not public API.

pub use serde;

/// UUID text without `format!` (graph-agents' message ids).
pub use crate::ids::format_uuid;

/// Times as LangGraph writes them (graph-agents' memory tools).
pub use crate::ids::iso8601;

pub use crate::field::FieldOfType;

pub use crate::spec::{GotoRoute, Projection};

/// The compile-time checks of `graph!`.
pub use crate::graph::declared as graph_check;

use crate::channels::{Channel, ReducerError};
use std::fmt;
use std::panic::AssertUnwindSafe;

/// A binary reducer for fields of type `T`: anything usable as `fn(T, T) -> T`,
/// or as `fn(T, T) -> Result<T, E>` for a reducer that can reject a write. `M`
/// tells the two shapes apart; it is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as the reducer of a field of type `{T}`",
    label = "expected a function `fn({T}, {T}) -> {T}` (or `-> Result<{T}, E>`)",
    note = "a reducer takes the current value and one write, both `{T}`, and returns the new `{T}`"
)]
pub trait Reducer<T, M> {
    /// Folds `update` into `current`, or says why it cannot.
    fn reduce(&self, current: T, update: T) -> Result<T, ReducerError>;
}

/// [`Reducer`]'s shape `fn(T, T) -> T`.
pub enum Infallible {}
/// [`Reducer`]'s shape `fn(T, T) -> Result<T, E>`.
pub struct Fallible<E>(std::marker::PhantomData<E>);

impl<T, F: Fn(T, T) -> T> Reducer<T, Infallible> for F {
    #[inline]
    fn reduce(&self, current: T, update: T) -> Result<T, ReducerError> {
        Ok(self(current, update))
    }
}

impl<T, E, F> Reducer<T, Fallible<E>> for F
where
    F: Fn(T, T) -> Result<T, E>,
    E: Into<ReducerError>,
{
    #[inline]
    fn reduce(&self, current: T, update: T) -> Result<T, ReducerError> {
        self(current, update).map_err(Into::into)
    }
}

/// Calls a reducer through the [`Reducer`] bound, so a wrong signature is reported
/// at the user's `#[reducer(path)]` with a readable message.
#[inline]
pub fn call_reducer<T, M, F: Reducer<T, M>>(
    f: F,
    current: T,
    update: T,
) -> Result<T, ReducerError> {
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

/// The routes of a `#[node]`'s goto type, for its [`NodeSpec::GOTO_ROUTES`](crate::NodeSpec).
pub const fn goto_routes<G: crate::GotoTarget>() -> Option<&'static [GotoRoute]> {
    G::ROUTES
}

/// What a `#[node]` (`Self`, its unit struct) takes (`I`) and returns (`R`),
/// checked against the state `S` of the graph it is added to: the one bound of the
/// generated `Node<S>` impl that depends on `S`, spanned at the node's input
/// parameter. A node written for another state is then reported with `Node`'s own
/// message ("`step` cannot be used as a node of a graph with state `Chat`"), the
/// parameter marked as where the unmet bound comes from, instead of as "cannot
/// return `OtherUpdate`": `do_not_recommend` keeps rustc from reporting the nested
/// `IntoNodeOutput` bound. `Self` is the node and not its input, which may be a
/// type parameter inferred from this very bound (`add_node(take_turn)` for a
/// generic `take_turn<S>`): rustc selects no impl for a `Self` it does not know
/// yet.
pub trait NodeOf<S: crate::State, I: ?Sized, R> {
    /// `R::into_output`.
    fn into_output(ret: R) -> Result<crate::NodeOutput<S>, crate::NodeError>;

    /// `R::targets`.
    fn targets() -> crate::Targets;
}

#[diagnostic::do_not_recommend]
impl<N: ?Sized, S: crate::State, I: ?Sized, R: crate::IntoNodeOutput<S>> NodeOf<S, I, R> for N {
    #[inline]
    fn into_output(ret: R) -> Result<crate::NodeOutput<S>, crate::NodeError> {
        ret.into_output()
    }

    #[inline]
    fn targets() -> crate::Targets {
        R::targets()
    }
}

// The checks of a `#[derive(State)]` on its concrete types, each made once.
//
// A field type that is not `Serialize` (or `Default`, ...) used to be reported
// at every generated item that needs it: the channel accessors, the checkpoint
// visitor, the restore. The derive now asserts each field's requirements once,
// in `assert_field` at the field's type (and the struct's in `assert_state`),
// and gives every generated impl the same requirements as where-clauses
// `for<'a> T: ValueOf<'a>`. A where-clause with a lifetime binder is not a
// "trivial bound" rustc checks at the impl, so when a requirement is not met the
// impl is merely unusable and the assertion is the only error; when it is met,
// the where-clause holds and changes nothing.

/// `S` is `Clone + Default + Send + Sync + 'static`, the supertraits of `State`.
#[inline]
pub fn assert_state<S: Clone + Default + Send + Sync + 'static>() {}

/// The channel `C` of a field holds `V` and takes writes `W` that are persisted.
/// A field type without `Serialize` fails both the channel's bound and the
/// write's, at the same span: rustc reports that once.
#[inline]
pub fn assert_field<C, V, W>()
where
    C: Channel<Value = V, Write = W>,
    V: Clone,
    // Not `DeserializeOwned`: the error for `Deserialize` itself carries serde's
    // "consider adding `#[derive(serde::Deserialize)]`".
    W: Clone + Send + Sync + 'static + serde::Serialize + for<'de> serde::Deserialize<'de>,
{
}

/// As [`assert_field`], for an untracked channel (its writes are never persisted).
#[inline]
pub fn assert_untracked_field<C, V, W>()
where
    C: Channel<Value = V, Write = W>,
    V: Clone,
    W: Clone + Send + Sync + 'static,
{
}

/// [`assert_state`] as a bound with a lifetime binder.
pub trait StateOf<'a>: Clone + Default + Send + Sync + 'static {}
impl<T: Clone + Default + Send + Sync + 'static> StateOf<'_> for T {}

/// A channel with this value and write type, as a bound with a lifetime binder.
pub trait ChannelOf<'a, V, W>: Channel<Value = V, Write = W> {}
impl<C: Channel> ChannelOf<'_, C::Value, C::Write> for C {}

/// A field value, as a bound with a lifetime binder.
pub trait ValueOf<'a>: Clone {}
impl<T: Clone> ValueOf<'_> for T {}

/// A persisted write, as a bound with a lifetime binder.
pub trait WriteOf<'a>:
    Clone + Send + Sync + 'static + serde::Serialize + serde::de::DeserializeOwned
{
}
impl<T> WriteOf<'_> for T where
    T: Clone + Send + Sync + 'static + serde::Serialize + serde::de::DeserializeOwned
{
}

/// A write of an untracked channel, as a bound with a lifetime binder.
pub trait UntrackedWriteOf<'a>: Clone + Send + Sync + 'static {}
impl<T: Clone + Send + Sync + 'static> UntrackedWriteOf<'_> for T {}

/// The [`Projection`](crate::spec::Projection) of a `#[node]`'s input type, by
/// autoref dispatch: `(&ViewProbe::<I>::NEW).projection()` finds
/// [`ViaView::projection`] when `I` is a [`View`](crate::View) and
/// [`ViaWhole::projection`] (none: the state itself or a payload) otherwise.
pub struct ViewProbe<T>(std::marker::PhantomData<fn() -> T>);

impl<T> ViewProbe<T> {
    /// The probe.
    pub const NEW: Self = ViewProbe(std::marker::PhantomData);
}

/// [`ViewProbe`] for a view input.
pub trait ViaView<T> {
    /// How to project the view from its state.
    fn projection(&self) -> Option<crate::spec::Projection<T>>;
}

impl<V: crate::View + Send + Sync + 'static> ViaView<V> for ViewProbe<V> {
    #[inline]
    fn projection(&self) -> Option<crate::spec::Projection<V>> {
        Some(crate::view::projection::<V>())
    }
}

/// [`ViewProbe`] for any other input.
pub trait ViaWhole<T> {
    /// None: the node takes its input as it is.
    #[inline]
    fn projection(&self) -> Option<crate::spec::Projection<T>> {
        None
    }
}

impl<T> ViaWhole<T> for &ViewProbe<T> {}
