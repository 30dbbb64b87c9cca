//! The [`State`] trait: a typed state struct with one channel per field.
//!
//! Implemented by `#[derive(State)]`; you rarely implement it by hand.

use crate::error::InvalidUpdateError;
use crate::field::{Field, Has};
use serde::{Deserializer, Serialize};

/// A state type: a struct whose fields are channels (LastValue, reducers, topics...).
///
/// `#[derive(State)]` generates this impl, the partial update type
/// ([`State::Update`], `<Name>Update` with a builder from `Name::update()`), and the
/// channel set. The engine keeps the state itself as the storage of every field's
/// value, so a node reads `&S` without copies; the channels hold only bookkeeping.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a graph state",
    label = "this type does not implement `State`",
    note = "add `#[derive(State)]` to the struct `{Self}` (its fields become the graph's channels)",
    note = "if `{Self}` is the payload of a node started by `send`, name the graph's state with `#[node(state = MyState)]`"
)]
pub trait State: Clone + Default + Send + Sync + 'static {
    /// A partial update: one optional write per field.
    type Update: StateUpdate;
    /// The per-field channel bookkeeping.
    type Channels: Clone + Send + Sync + 'static;

    /// The channel fields, in declaration order (managed values excluded).
    const FIELDS: &'static [&'static str];

    /// Whether the struct has managed fields (`RemainingSteps`, `IsLastStep`).
    const HAS_MANAGED: bool = false;

    /// The private fields (`#[state(private)]`), in declaration order: channels
    /// that nodes write and read, not part of the graph's input or output (the
    /// channels of LangGraph's private node schemas).
    const PRIVATE_FIELDS: &'static [&'static str] = &[];

    /// Removes the writes to private fields from `update`: the graph's input, and
    /// what a subgraph sharing the state hands back to its parent.
    fn without_private(_update: &mut Self::Update) {}

    /// Sets each private field to its value in `Self::default()`: the state
    /// `invoke` returns leaves them out.
    fn clear_private(&mut self) {}

    /// Fresh channels for a new thread: nothing written yet.
    fn new_channels() -> Self::Channels;

    /// Applies one superstep's updates (already in deterministic task order) to the
    /// fields, moving the written values out of `updates`. Marks each field whose
    /// channel changed in `changed`.
    fn apply_updates(
        &mut self,
        channels: &mut Self::Channels,
        updates: &mut [Self::Update],
        changed: &mut FieldSet,
    ) -> Result<(), InvalidUpdateError>;

    /// Notifies every available field not in `skip` that a new superstep happened
    /// (`update([])`); ephemeral kinds clear themselves. Marks changed fields.
    fn notify_new_step(
        &mut self,
        channels: &mut Self::Channels,
        skip: &FieldSet,
        changed: &mut FieldSet,
    ) -> Result<(), InvalidUpdateError>;

    /// Calls `finish()` on every field's channel; marks changed fields.
    fn finish(&mut self, channels: &mut Self::Channels, changed: &mut FieldSet);

    /// Whether field `field` (an index into [`FIELDS`](State::FIELDS)) holds a value.
    fn is_available(&self, channels: &Self::Channels, field: usize) -> bool;

    /// The whole state as an update that writes every field: the input a graph
    /// sharing this state type receives when it runs as a subgraph, and the output
    /// it hands back (reducer fields fold the written value in, as LangGraph does).
    fn to_update(&self) -> Self::Update;

    /// Writes the managed values of the current superstep into the managed fields.
    fn set_managed(&mut self, _managed: &ManagedValues) {}

    /// Visits the checkpoint form of each field in `fields` (all fields when `None`)
    /// that has something to store.
    fn visit_saved<V: FieldVisitor>(
        &self,
        channels: &Self::Channels,
        fields: Option<&FieldSet>,
        visitor: &mut V,
    );

    /// Restores field `field` from its checkpoint form (`None`: never written).
    fn restore_field<'de, D: Deserializer<'de>>(
        &mut self,
        channels: &mut Self::Channels,
        field: usize,
        saved: Option<D>,
    ) -> Result<(), D::Error>;

    /// The index of the field named `name`.
    fn field_index(name: &str) -> Option<usize> {
        Self::FIELDS.iter().position(|f| *f == name)
    }

    /// The value of the field `F`, in a state that provides it (a field marked
    /// `#[field(F)]`); see [`Has`].
    fn get<F: Field>(&self) -> &F::Value
    where
        Self: Has<F>,
    {
        <Self as Has<F>>::field_ref(self)
    }
}

/// The partial update of a state: one optional write per field.
pub trait StateUpdate: Default + Clone + Send + Sync + 'static {
    /// Whether no field is written.
    fn is_empty(&self) -> bool;

    /// Marks the fields this update writes.
    fn written_fields(&self, into: &mut FieldSet);

    /// Visits each write of this update as `(field index, field name, value)`.
    fn visit_writes<V: FieldVisitor>(&self, visitor: &mut V);

    /// An update writing only field `field`, read from its serialised form.
    fn from_field_write<'de, D: Deserializer<'de>>(
        field: usize,
        write: D,
    ) -> Result<Self, D::Error>;

    /// Moves the writes of `other` into `self`; a field both write keeps
    /// `other`'s write. Builds one update from per-field ones, such as those
    /// [`from_field_write`](Self::from_field_write) reads (a server decoding a
    /// JSON object field by field).
    fn merge(&mut self, other: Self);
}

/// Receives serialisable values per field; see [`State::visit_saved`].
pub trait FieldVisitor {
    /// One field's value.
    fn visit<T: Serialize + ?Sized>(&mut self, field: usize, name: &'static str, value: &T);
}

/// The per-superstep values of managed fields (LangGraph's managed values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagedValues {
    /// `stop - step`: how many supersteps may still run, this one included.
    pub remaining_steps: i64,
    /// Whether this is the last superstep the recursion limit allows.
    pub is_last_step: bool,
}

/// A managed field: the number of supersteps left before the recursion limit.
///
/// Declare a field of this type in a state and it is filled in before every
/// superstep; it is not a channel and nodes cannot write it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
pub struct RemainingSteps(pub i64);

/// A managed field: whether the current superstep is the last one allowed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct IsLastStep(pub bool);

impl std::ops::Deref for RemainingSteps {
    type Target = i64;
    fn deref(&self) -> &i64 {
        &self.0
    }
}

impl std::ops::Deref for IsLastStep {
    type Target = bool;
    fn deref(&self) -> &bool {
        &self.0
    }
}

/// A set of channel indices (a growable bitset).
///
/// Its first 64 indices are one word kept inline: a graph of up to 64
/// channels (nearly every graph) makes, grows and tests its sets without an
/// allocation or a pointer to follow, and every run makes several (the
/// channels changed, updated, listed in a checkpoint...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    /// Indices 0 to 63.
    first: u64,
    /// Indices from 64 on: word `k` holds `64 * (k + 1)` to `64 * (k + 2) - 1`.
    more: Vec<u64>,
}

impl FieldSet {
    /// An empty set with room for `n` indices.
    pub fn with_capacity(n: usize) -> Self {
        FieldSet {
            first: 0,
            more: vec![0; n.div_ceil(64).saturating_sub(1)],
        }
    }

    /// Adds `i`.
    #[inline]
    pub fn insert(&mut self, i: usize) {
        if i < 64 {
            self.first |= 1 << i;
            return;
        }
        let w = i / 64 - 1;
        if w >= self.more.len() {
            self.more.resize(w + 1, 0);
        }
        self.more[w] |= 1 << (i % 64);
    }

    /// Removes `i`.
    #[inline]
    pub fn remove(&mut self, i: usize) {
        if i < 64 {
            self.first &= !(1 << i);
        } else if let Some(word) = self.more.get_mut(i / 64 - 1) {
            *word &= !(1 << (i % 64));
        }
    }

    /// Whether `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        if i < 64 {
            return self.first & (1 << i) != 0;
        }
        self.more
            .get(i / 64 - 1)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.first == 0 && self.more.iter().all(|w| *w == 0)
    }

    /// Removes every index, keeping the allocation.
    pub fn clear(&mut self) {
        self.first = 0;
        self.more.iter_mut().for_each(|w| *w = 0);
    }

    /// The indices in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        FieldSetIter {
            word: self.first,
            base: 0,
            rest: self.more.iter(),
        }
    }

    /// Whether the two sets share an index.
    pub fn intersects(&self, other: &FieldSet) -> bool {
        self.first & other.first != 0
            || self
                .more
                .iter()
                .zip(other.more.iter())
                .any(|(a, b)| a & b != 0)
    }
}

/// The indices of a [`FieldSet`], in ascending order.
struct FieldSetIter<'a> {
    /// The bits of the current word not yet returned.
    word: u64,
    /// The index of the current word's first bit.
    base: usize,
    /// The words after it.
    rest: std::slice::Iter<'a, u64>,
}

impl Iterator for FieldSetIter<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.word == 0 {
            self.word = *self.rest.next()?;
            self.base += 64;
        }
        let bit = self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        Some(self.base + bit)
    }
}

#[cfg(test)]
mod tests {
    use super::FieldSet;

    #[test]
    fn field_sets_hold_indices_past_the_inline_word() {
        let mut set = FieldSet::default();
        assert!(set.is_empty());
        for i in [0, 3, 63, 64, 130, 191, 200] {
            set.insert(i);
        }
        set.remove(3);
        set.remove(500);
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 63, 64, 130, 191, 200]);
        assert!(set.contains(130) && !set.contains(129) && !set.contains(1000));
        let mut other = FieldSet::with_capacity(256);
        assert!(!set.intersects(&other));
        other.insert(191);
        assert!(set.intersects(&other) && other.intersects(&set));
        set.clear();
        assert!(set.is_empty());
        assert_eq!(set.iter().next(), None);
    }
}
