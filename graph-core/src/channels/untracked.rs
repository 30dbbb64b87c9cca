use super::{single_write_error, Channel};
use crate::error::InvalidUpdateError;
use std::marker::PhantomData;

/// Like [`LastValue`](super::LastValue) for reads and writes, but never checkpointed:
/// after a reload the field is empty. For live resources (clients, handles) that must
/// not be persisted.
#[derive(Debug)]
pub struct UntrackedValue<T> {
    key: &'static str,
    guard: bool,
    has_value: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> UntrackedValue<T> {
    /// A guarded, empty channel for `key`.
    pub fn new(key: &'static str) -> Self {
        Self::with_guard(key, true)
    }

    /// An empty channel; without `guard`, several writes keep the last one.
    pub fn with_guard(key: &'static str, guard: bool) -> Self {
        UntrackedValue {
            key,
            guard,
            has_value: false,
            _value: PhantomData,
        }
    }
}

impl<T> Clone for UntrackedValue<T> {
    fn clone(&self) -> Self {
        UntrackedValue {
            key: self.key,
            guard: self.guard,
            has_value: self.has_value,
            _value: PhantomData,
        }
    }
}

impl<T> Channel for UntrackedValue<T>
where
    T: Default + Send + Sync + 'static,
{
    type Value = T;
    type Write = T;
    type Saved<'a> = ();
    type Restored = serde::de::IgnoredAny;

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(&mut self, value: &mut T, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = T>,
    {
        if writes.len() == 0 {
            return Ok(false);
        }
        if writes.len() > 1 && self.guard {
            return Err(single_write_error(self.key, "UntrackedValue"));
        }
        if let Some(v) = writes.last() {
            *value = v;
            self.has_value = true;
        }
        Ok(true)
    }

    fn is_available(&self, _value: &T) -> bool {
        self.has_value
    }

    fn checkpoint<'a>(&'a self, _value: &'a T) -> Option<()> {
        None
    }

    fn restore(&mut self, value: &mut T, _saved: Option<serde::de::IgnoredAny>) {
        self.has_value = false;
        *value = T::default();
    }
}
