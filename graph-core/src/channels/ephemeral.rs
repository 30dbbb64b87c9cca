use super::{single_write_error, Channel};
use crate::error::InvalidUpdateError;
use serde::{de::DeserializeOwned, Serialize};
use std::marker::PhantomData;

/// A value visible only in the superstep right after it was written; cleared on the
/// next step. With `guard` (the default) more than one write per step is an error.
#[derive(Debug)]
pub struct EphemeralValue<T> {
    key: &'static str,
    guard: bool,
    has_value: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> EphemeralValue<T> {
    /// A guarded, empty channel for `key`.
    pub fn new(key: &'static str) -> Self {
        Self::with_guard(key, true)
    }

    /// An empty channel; without `guard`, several writes keep the last one.
    pub fn with_guard(key: &'static str, guard: bool) -> Self {
        EphemeralValue {
            key,
            guard,
            has_value: false,
            _value: PhantomData,
        }
    }
}

impl<T> Clone for EphemeralValue<T> {
    fn clone(&self) -> Self {
        EphemeralValue {
            key: self.key,
            guard: self.guard,
            has_value: self.has_value,
            _value: PhantomData,
        }
    }
}

impl<T> Channel for EphemeralValue<T>
where
    T: Serialize + DeserializeOwned + Default + Send + Sync + 'static,
{
    type Value = T;
    type Write = T;
    type Saved<'a> = &'a T;
    type Restored = T;

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(&mut self, value: &mut T, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = T>,
    {
        if writes.len() == 0 {
            if self.has_value {
                self.has_value = false;
                *value = T::default();
                return Ok(true);
            }
            return Ok(false);
        }
        if writes.len() > 1 && self.guard {
            return Err(single_write_error(self.key, "EphemeralValue"));
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

    fn reacts_to_new_step(&self) -> bool {
        true
    }

    fn checkpoint<'a>(&'a self, value: &'a T) -> Option<&'a T> {
        self.has_value.then_some(value)
    }

    fn restore(&mut self, value: &mut T, saved: Option<T>) {
        self.has_value = saved.is_some();
        *value = saved.unwrap_or_default();
    }
}
