use super::Channel;
use crate::error::InvalidUpdateError;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::marker::PhantomData;

/// One write to a [`Topic`]: a single item, or a list whose items are added one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TopicWrite<T> {
    /// A list of items (flattened one level).
    Many(Vec<T>),
    /// A single item.
    One(T),
}

impl<T> From<Vec<T>> for TopicWrite<T> {
    fn from(items: Vec<T>) -> Self {
        TopicWrite::Many(items)
    }
}

impl<T> TopicWrite<T> {
    /// A single-item write.
    pub fn one(item: T) -> Self {
        TopicWrite::One(item)
    }
}

/// A pub/sub list. Without `accumulate` it holds only the items written in the last
/// superstep; with it, items are kept forever. Writes are flattened one level.
#[derive(Debug)]
pub struct Topic<T> {
    key: &'static str,
    accumulate: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> Topic<T> {
    /// A non-accumulating topic for `key`.
    pub fn new(key: &'static str) -> Self {
        Self::with_accumulate(key, false)
    }

    /// A topic that keeps (`true`) or clears (`false`) its items between steps.
    pub fn with_accumulate(key: &'static str, accumulate: bool) -> Self {
        Topic {
            key,
            accumulate,
            _value: PhantomData,
        }
    }
}

impl<T> Clone for Topic<T> {
    fn clone(&self) -> Self {
        Topic {
            key: self.key,
            accumulate: self.accumulate,
            _value: PhantomData,
        }
    }
}

/// The checkpoint form of a [`Topic`]: its list, or LangGraph's legacy `(seen, list)` pair.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum TopicSaved<T> {
    /// The current form: the list of items.
    List(Vec<T>),
    /// The legacy form written by older LangGraph versions.
    Legacy(serde::de::IgnoredAny, Vec<T>),
}

impl<T> Channel for Topic<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Value = Vec<T>;
    type Write = TopicWrite<T>;
    type Saved<'a> = &'a Vec<T>;
    type Restored = TopicSaved<T>;

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(&mut self, value: &mut Vec<T>, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = TopicWrite<T>>,
    {
        let mut changed = false;
        if !self.accumulate {
            changed = !value.is_empty();
            value.clear();
        }
        for write in writes {
            match write {
                TopicWrite::One(item) => {
                    value.push(item);
                    changed = true;
                }
                TopicWrite::Many(items) => {
                    changed |= !items.is_empty();
                    value.extend(items);
                }
            }
        }
        Ok(changed)
    }

    fn is_available(&self, value: &Vec<T>) -> bool {
        !value.is_empty()
    }

    fn reacts_to_new_step(&self) -> bool {
        !self.accumulate
    }

    fn checkpoint<'a>(&'a self, value: &'a Vec<T>) -> Option<&'a Vec<T>> {
        Some(value)
    }

    fn restore(&mut self, value: &mut Vec<T>, saved: Option<TopicSaved<T>>) {
        *value = match saved {
            Some(TopicSaved::List(items)) | Some(TopicSaved::Legacy(_, items)) => items,
            None => Vec::new(),
        };
    }
}
