use super::Channel;
use crate::error::InvalidUpdateError;
use serde::{de::DeserializeOwned, Serialize};
use std::marker::PhantomData;

/// Stores the last of any number of writes; cleared by a step without writes.
#[derive(Debug)]
pub struct AnyValue<T> {
    key: &'static str,
    has_value: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> AnyValue<T> {
    /// An empty channel for `key`.
    pub fn new(key: &'static str) -> Self {
        AnyValue {
            key,
            has_value: false,
            _value: PhantomData,
        }
    }
}

impl<T> Clone for AnyValue<T> {
    fn clone(&self) -> Self {
        AnyValue {
            key: self.key,
            has_value: self.has_value,
            _value: PhantomData,
        }
    }
}

impl<T> Channel for AnyValue<T>
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
        match writes.last() {
            None if self.has_value => {
                self.has_value = false;
                *value = T::default();
                Ok(true)
            }
            None => Ok(false),
            Some(v) => {
                *value = v;
                self.has_value = true;
                Ok(true)
            }
        }
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
