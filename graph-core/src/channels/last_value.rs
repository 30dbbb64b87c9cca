use super::Channel;
use crate::error::{ErrorCode, InvalidUpdateError};
use serde::{de::DeserializeOwned, Serialize};
use std::marker::PhantomData;

/// Holds the last value written; at most one write per superstep.
///
/// The default channel of a state field without attributes. A field that was never
/// written reads as its `Default` but is *not available*: the engine knows it is empty
/// (it is left out of checkpoints and snapshots), and a stored `None` is a real value.
#[derive(Debug)]
pub struct LastValue<T> {
    key: &'static str,
    has_value: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> LastValue<T> {
    /// An empty channel for `key`.
    pub fn new(key: &'static str) -> Self {
        LastValue {
            key,
            has_value: false,
            _value: PhantomData,
        }
    }
}

impl<T> Clone for LastValue<T> {
    fn clone(&self) -> Self {
        LastValue {
            key: self.key,
            has_value: self.has_value,
            _value: PhantomData,
        }
    }
}

impl<T> Channel for LastValue<T>
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

    fn update<I>(&mut self, value: &mut T, mut writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = T>,
    {
        match writes.len() {
            0 => Ok(false),
            1 => {
                if let Some(v) = writes.next() {
                    *value = v;
                    self.has_value = true;
                }
                Ok(true)
            }
            _ => Err(InvalidUpdateError::with_code(
                format!(
                    "At key '{}': Can receive only one value per step. Use an Annotated key to \
                     handle multiple values. (In stategraph: give the field a reducer, e.g. \
                     `#[reducer(...)]`, so concurrent writes can be combined.)",
                    self.key
                ),
                ErrorCode::InvalidConcurrentGraphUpdate,
            )),
        }
    }

    fn is_available(&self, _value: &T) -> bool {
        self.has_value
    }

    fn checkpoint<'a>(&'a self, value: &'a T) -> Option<&'a T> {
        self.has_value.then_some(value)
    }

    fn restore(&mut self, value: &mut T, saved: Option<T>) {
        self.has_value = saved.is_some();
        *value = saved.unwrap_or_default();
    }
}

/// Like [`LastValue`], but a value becomes readable only after `finish()`, and is
/// cleared once consumed. Backs deferred nodes (`defer`).
#[derive(Debug)]
pub struct LastValueAfterFinish<T> {
    key: &'static str,
    has_value: bool,
    finished: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> LastValueAfterFinish<T> {
    /// An empty channel for `key`.
    pub fn new(key: &'static str) -> Self {
        LastValueAfterFinish {
            key,
            has_value: false,
            finished: false,
            _value: PhantomData,
        }
    }

    /// Whether `finish()` has published the current value.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

impl<T> Clone for LastValueAfterFinish<T> {
    fn clone(&self) -> Self {
        LastValueAfterFinish {
            key: self.key,
            has_value: self.has_value,
            finished: self.finished,
            _value: PhantomData,
        }
    }
}

impl<T> Channel for LastValueAfterFinish<T>
where
    T: Serialize + DeserializeOwned + Default + Send + Sync + 'static,
{
    type Value = T;
    type Write = T;
    type Saved<'a> = (&'a T, bool);
    type Restored = (T, bool);

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(&mut self, value: &mut T, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = T>,
    {
        match writes.last() {
            None => Ok(false),
            Some(v) => {
                // A new write revokes the visibility of the previous one.
                self.finished = false;
                *value = v;
                self.has_value = true;
                Ok(true)
            }
        }
    }

    fn is_available(&self, _value: &T) -> bool {
        self.has_value && self.finished
    }

    fn consume(&mut self, value: &mut T) -> bool {
        if self.finished {
            self.finished = false;
            self.has_value = false;
            *value = T::default();
            true
        } else {
            false
        }
    }

    fn finish(&mut self, _value: &mut T) -> bool {
        if !self.finished && self.has_value {
            self.finished = true;
            true
        } else {
            false
        }
    }

    fn checkpoint<'a>(&'a self, value: &'a T) -> Option<(&'a T, bool)> {
        self.has_value.then_some((value, self.finished))
    }

    fn restore(&mut self, value: &mut T, saved: Option<(T, bool)>) {
        match saved {
            Some((v, finished)) => {
                *value = v;
                self.has_value = true;
                self.finished = finished;
            }
            None => {
                *value = T::default();
                self.has_value = false;
                self.finished = false;
            }
        }
    }
}
