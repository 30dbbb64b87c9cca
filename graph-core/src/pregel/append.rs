//! Checkpoints of list fields that only grew: with a saver that stores appended
//! items ([`Checkpointer::stores_appends`]), a changed field whose reducer
//! reported a kept prefix ([`report_kept_prefix`]) is stored as the items after
//! that prefix and the version they extend, not as the whole list.
//!
//! [`Checkpointer::stores_appends`]: crate::checkpoint::Checkpointer::stores_appends
//! [`report_kept_prefix`]: crate::channels::report_kept_prefix

use crate::checkpoint::ChannelVersion;
use crate::state::FieldSet;
use serde::ser::{self, Impossible, Serialize, SerializeSeq, Serializer};

/// Per state field, what its next checkpoint may store as appended items (one
/// allocation per run).
pub(crate) struct Appends(Vec<Field>);

/// One state field's entry in [`Appends`].
#[derive(Clone, Default)]
struct Field {
    /// The version the field's value was last stored or restored at.
    base: Option<ChannelVersion>,
    /// How many leading items are unchanged since then (`None`: the field
    /// has not changed since).
    kept: Option<usize>,
}

impl Appends {
    pub(crate) fn new(fields: usize) -> Self {
        Appends(vec![Field::default(); fields])
    }

    /// [`new`](Self::new), in the vector of `spare` (emptied by
    /// [`clear`](Self::clear)) when given.
    pub(crate) fn reusing(spare: Option<Appends>, fields: usize) -> Self {
        match spare {
            Some(Appends(mut v)) => {
                v.resize(fields, Field::default());
                Appends(v)
            }
            None => Self::new(fields),
        }
    }

    /// Drops every entry, keeping the vector's capacity.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    /// A step changed the fields in `changed`; `log` holds the prefix each
    /// reducer field among them kept (a field not in it kept nothing).
    pub(crate) fn applied(
        &mut self,
        changed: &FieldSet,
        log: &[(&'static str, usize)],
        field_index: impl Fn(&str) -> Option<usize>,
    ) {
        let mut reported = FieldSet::default();
        for &(key, k) in log {
            if let Some(c) = field_index(key).filter(|&c| c < self.0.len()) {
                let kept = &mut self.0[c].kept;
                *kept = Some(kept.map_or(k, |before| before.min(k)));
                reported.insert(c);
            }
        }
        let fields = self.0.len();
        for c in changed.iter().filter(|&c| c < fields) {
            if !reported.contains(c) {
                self.0[c].kept = Some(0);
            }
        }
    }

    /// Field `c` holds the value stored (or restored) under `version`.
    pub(crate) fn at(&mut self, c: usize, version: ChannelVersion) {
        if let Some(field) = self.0.get_mut(c) {
            field.base = Some(version);
            field.kept = None;
        }
    }

    /// The prefix field `c` can be stored after, and the version it extends.
    pub(crate) fn plan(&self, c: usize) -> Option<(usize, &ChannelVersion)> {
        let field = self.0.get(c)?;
        let k = field.kept.filter(|&k| k > 0)?;
        Some((k, field.base.as_ref()?))
    }

    /// The skip of each field that has a plan, by field index (empty, without
    /// allocating, when none has).
    pub(crate) fn skips(&self) -> Vec<Option<usize>> {
        let n = self.0.len();
        if !(0..n).any(|c| self.plan(c).is_some()) {
            return Vec::new();
        }
        (0..n).map(|c| self.plan(c).map(|(k, _)| k)).collect()
    }
}

/// The items of a list after the first `skip`, serialised as a list. Fails
/// (and the whole value is stored instead) when the value is not serialised
/// as a sequence or has fewer than `skip` items.
pub(crate) struct Tail<'a, T: ?Sized> {
    pub(crate) value: &'a T,
    pub(crate) skip: usize,
}

const NOT_A_LIST: &str = "the value is not a list";

impl<T: Serialize + ?Sized> Serialize for Tail<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(Skip {
            inner: serializer,
            skip: self.skip,
        })
    }
}

/// A serializer that forwards a sequence without its first `skip` elements,
/// and refuses anything else.
struct Skip<S> {
    inner: S,
    skip: usize,
}

struct SkipSeq<Q> {
    inner: Q,
    skip: usize,
    seen: usize,
}

impl<Q: SerializeSeq> SerializeSeq for SkipSeq<Q> {
    type Ok = Q::Ok;
    type Error = Q::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Q::Error> {
        self.seen += 1;
        if self.seen > self.skip {
            self.inner.serialize_element(value)?;
        }
        Ok(())
    }

    fn end(self) -> Result<Q::Ok, Q::Error> {
        if self.seen < self.skip {
            return Err(ser::Error::custom(format_args!(
                "the list has {} items, fewer than the {} kept",
                self.seen, self.skip
            )));
        }
        self.inner.end()
    }
}

fn refuse<E: ser::Error>() -> E {
    E::custom(NOT_A_LIST)
}

macro_rules! refuse {
    ($($name:ident($($arg:ty),*);)*) => {
        $(fn $name(self, $(_: $arg),*) -> Result<S::Ok, S::Error> {
            Err(refuse())
        })*
    };
}

impl<S: Serializer> Serializer for Skip<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = SkipSeq<S::SerializeSeq>;
    type SerializeTuple = Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
    type SerializeMap = Impossible<S::Ok, S::Error>;
    type SerializeStruct = Impossible<S::Ok, S::Error>;
    type SerializeStructVariant = Impossible<S::Ok, S::Error>;

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let inner = self
            .inner
            .serialize_seq(len.map(|n| n.saturating_sub(self.skip)))?;
        Ok(SkipSeq {
            inner,
            skip: self.skip,
            seen: 0,
        })
    }

    refuse! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<S::Ok, S::Error> {
        Err(refuse())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        // Serialised as its content: a newtype around a list is a list.
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<S::Ok, S::Error> {
        Err(refuse())
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, S::Error> {
        Err(refuse())
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        Err(refuse())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        Err(refuse())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        Err(refuse())
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        Err(refuse())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        Err(refuse())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail<T: Serialize>(value: &T, skip: usize) -> Option<String> {
        serde_json::to_string(&Tail { value, skip }).ok()
    }

    #[test]
    fn a_tail_is_the_items_after_the_kept_ones() {
        let list = vec!["a", "b", "c"];
        assert_eq!(tail(&list, 0).as_deref(), Some(r#"["a","b","c"]"#));
        assert_eq!(tail(&list, 2).as_deref(), Some(r#"["c"]"#));
        assert_eq!(tail(&list, 3).as_deref(), Some("[]"));
        // More kept than there are: no tail (the whole value is stored).
        assert_eq!(tail(&list, 4), None);
        assert_eq!(tail(&"text", 1), None);
        assert_eq!(tail(&std::collections::BTreeMap::from([(1, 2)]), 1), None);
    }

    #[test]
    fn a_field_changed_without_a_report_kept_nothing() {
        let mut appends = Appends::new(3);
        appends.at(0, "v1".into());
        appends.at(1, "v1".into());
        let changed: FieldSet = {
            let mut s = FieldSet::default();
            s.insert(0);
            s.insert(1);
            s
        };
        let index = |k: &str| ["a", "b", "c"].iter().position(|f| *f == k);
        appends.applied(&changed, &[("a", 5), ("a", 3)], index);
        assert_eq!(
            appends.plan(0).map(|(k, v)| (k, v.as_str())),
            Some((3, "v1"))
        );
        assert_eq!(appends.plan(1), None);
        assert_eq!(appends.skips(), [Some(3), None, None]);
        // Never stored: nothing to extend.
        appends.applied(&changed, &[("c", 2)], index);
        assert_eq!(appends.plan(2), None);
        appends.at(0, "v2".into());
        assert_eq!(appends.plan(0), None);
        // No field plans an append: no skips (and no allocation).
        assert!(appends.skips().is_empty());
    }
}
