//! Field access across states: a node written once for every state that has the
//! fields it needs.
//!
//! A field is named by a zero-sized marker type that fixes its value type, declared
//! once (usually by the library that uses it) with [`field!`](crate::field!). A
//! state provides it by marking one of its fields `#[field(Marker)]`, and
//! `#[derive(State)]` then implements [`Has<Marker>`](Has). Generic code bounds its
//! state with `S: Has<Messages> + Has<Summary>`, reads with
//! [`state.get::<Messages>()`](crate::State::get) and writes with
//! [`UpdateOf::<S>::new().set::<Summary>(..)`](UpdateOf::set). A state that lacks a
//! field is a compile error naming the state and the marker.

use crate::state::State;
use std::fmt;

/// A named field a state can provide: a zero-sized marker whose `Value` is the
/// field's type. Declare one with [`field!`](crate::field!).
pub trait Field: 'static {
    /// The type of the field, in every state that provides it.
    type Value;
}

/// A state that provides the field `F`: implemented by `#[derive(State)]` for each
/// field marked `#[field(F)]`.
///
/// Generic code reads the field with [`State::get`] and writes it with
/// [`UpdateOf::set`]; the methods here are what those call.
#[diagnostic::on_unimplemented(
    message = "the state `{Self}` has no field `{F}`",
    label = "`{Self}` does not provide `{F}`",
    note = "mark the field of `{Self}` that holds it with `#[field({F})]`; its type must be the one `{F}` declares"
)]
pub trait Has<F: Field>: State {
    /// The field's value.
    fn field_ref(&self) -> &F::Value;

    /// Sets the field's write in `update` to `value` (a reducer field folds it in, a
    /// topic publishes the items).
    fn write_field(update: &mut Self::Update, value: F::Value);
}

/// An update of the state `S`, built field by field where `S` is generic; a node
/// may return it. For a concrete state, its own builder (`Chat::update()`) is
/// the shorter way.
pub struct UpdateOf<S: State>(S::Update);

impl<S: State> UpdateOf<S> {
    /// An update that writes nothing.
    #[must_use]
    pub fn new() -> Self {
        UpdateOf(S::Update::default())
    }

    /// Writes `value` to the field `F`.
    #[must_use]
    pub fn set<F: Field>(mut self, value: F::Value) -> Self
    where
        S: Has<F>,
    {
        <S as Has<F>>::write_field(&mut self.0, value);
        self
    }

    /// Writes `value` to the field `F`, in place.
    pub(crate) fn write<F: Field>(&mut self, value: F::Value)
    where
        S: Has<F>,
    {
        <S as Has<F>>::write_field(&mut self.0, value);
    }

    /// The state's own update type.
    pub fn into_inner(self) -> S::Update {
        self.0
    }
}

impl<S: State> Default for UpdateOf<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> Clone for UpdateOf<S> {
    fn clone(&self) -> Self {
        UpdateOf(self.0.clone())
    }
}

impl<S: State> fmt::Debug for UpdateOf<S>
where
    S::Update: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Declares field markers: `field!(pub Messages: Vec<Message>);`, one per line,
/// with doc comments and attributes.
///
/// ```
/// use stategraph::prelude::*;
///
/// stategraph::field! {
///     /// The conversation so far.
///     pub Transcript: Vec<String>;
///     /// How many turns were taken.
///     pub Turns: u32;
/// }
///
/// fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
///     a.extend(b);
///     a
/// }
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Chat {
///     #[reducer(concat)]
///     #[field(Transcript)]
///     log: Vec<String>,
///     #[field(Turns)]
///     n: u32,
/// }
///
/// // Written once, for every state with a transcript and a turn count.
/// fn take_turn<S: Has<Transcript> + Has<Turns>>(state: &S) -> UpdateOf<S> {
///     let turn = state.get::<Turns>() + 1;
///     UpdateOf::new()
///         .set::<Transcript>(vec![format!("turn {turn}")])
///         .set::<Turns>(turn)
/// }
///
/// let chat = Chat { log: vec!["hi".into()], n: 1 };
/// let update = take_turn(&chat).into_inner();
/// assert_eq!(update.n, Some(2));
/// ```
#[macro_export]
macro_rules! field {
    ($($(#[$attr:meta])* $vis:vis $name:ident : $ty:ty);+ $(;)?) => {
        $(
            $(#[$attr])*
            #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
            $vis struct $name;

            impl $crate::Field for $name {
                type Value = $ty;
            }
        )+
    };
}

/// Checks that a `#[field(F)]` marks a field of the type `F` declares; the derive
/// reads and writes the field through it, so a mismatch is one error at the marker
/// ("type mismatch resolving `<F as Field>::Value == T`", pointing at `F`'s
/// declaration).
#[doc(hidden)]
pub trait FieldOfType<T>: Field {
    /// The field's value as `F::Value` (the same type).
    fn cast_ref(value: &T) -> &Self::Value;
    /// A value of `F` as the field's type (the same type).
    fn cast(value: Self::Value) -> T;
}

impl<F: Field> FieldOfType<F::Value> for F {
    #[inline(always)]
    fn cast_ref(value: &F::Value) -> &F::Value {
        value
    }
    #[inline(always)]
    fn cast(value: F::Value) -> F::Value {
        value
    }
}
