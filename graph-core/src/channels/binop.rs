use super::Channel;
use crate::error::{ErrorCode, InvalidUpdateError};
use serde::{de::DeserializeOwned, Deserialize, Deserializer, Serialize, Serializer};

/// Replaces the value of a reducer field, bypassing its reducer.
///
/// In one superstep an `Overwrite` wins over every other write to that field: earlier
/// writes are replaced and later ones dropped. Two `Overwrite`s in one step are an error.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Overwrite<T>(pub T);

/// One write to a reducer field: a value to fold in, or an [`Overwrite`].
///
/// Serialised as the plain value, or as `{"__overwrite__": value}`. Deserialisation also
/// recognises LangGraph's `{"type": "__overwrite__", "value": ...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReducerWrite<T> {
    /// Folded into the current value with the reducer.
    Value(T),
    /// Replaces the current value.
    Overwrite(T),
}

impl<T> From<Overwrite<T>> for ReducerWrite<T> {
    fn from(o: Overwrite<T>) -> Self {
        ReducerWrite::Overwrite(o.0)
    }
}

/// The key LangGraph uses to mark an overwrite in JSON.
pub const OVERWRITE_KEY: &str = "__overwrite__";

impl<T: Serialize> Serialize for ReducerWrite<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            ReducerWrite::Value(v) => v.serialize(serializer),
            ReducerWrite::Overwrite(v) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(OVERWRITE_KEY, v)?;
                map.end()
            }
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for ReducerWrite<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut json = serde_json::Value::deserialize(deserializer)?;
        let overwrite = match &mut json {
            serde_json::Value::Object(map) if map.len() == 1 && map.contains_key(OVERWRITE_KEY) => {
                map.remove(OVERWRITE_KEY)
            }
            serde_json::Value::Object(map)
                if map.get("type").and_then(|t| t.as_str()) == Some(OVERWRITE_KEY)
                    && map.contains_key("value") =>
            {
                map.remove("value")
            }
            _ => None,
        };
        match overwrite {
            Some(inner) => serde_json::from_value(inner)
                .map(ReducerWrite::Overwrite)
                .map_err(D::Error::custom),
            None => serde_json::from_value(json)
                .map(ReducerWrite::Value)
                .map_err(D::Error::custom),
        }
    }
}

/// What a reducer that rejects a write returns: its own error, kept for the
/// [`InvalidUpdateError`] that fails the step.
pub type ReducerError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A field folded with a binary reducer `fn(T, T) -> T` (LangGraph's
/// `BinaryOperatorAggregate`), or `fn(T, T) -> Result<T, ReducerError>` for one
/// that can reject a write. Starts at `T::default()`, so it is always readable.
pub struct BinaryOperatorAggregate<T> {
    key: &'static str,
    op: Op<T>,
}

enum Op<T> {
    Plain(fn(T, T) -> T),
    Fallible(fn(T, T) -> Result<T, ReducerError>),
}

impl<T> Clone for Op<T> {
    fn clone(&self) -> Self {
        match self {
            Op::Plain(f) => Op::Plain(*f),
            Op::Fallible(f) => Op::Fallible(*f),
        }
    }
}

impl<T> BinaryOperatorAggregate<T> {
    /// A reducer channel for `key` folding with `op`.
    pub fn new(key: &'static str, op: fn(T, T) -> T) -> Self {
        BinaryOperatorAggregate {
            key,
            op: Op::Plain(op),
        }
    }

    /// A reducer channel for `key` folding with `op`, which may reject a write:
    /// its `Err` fails the superstep with an [`InvalidUpdateError`] naming the
    /// field, and nothing of that step is applied.
    pub fn fallible(key: &'static str, op: fn(T, T) -> Result<T, ReducerError>) -> Self {
        BinaryOperatorAggregate {
            key,
            op: Op::Fallible(op),
        }
    }
}

impl<T> Clone for BinaryOperatorAggregate<T> {
    fn clone(&self) -> Self {
        BinaryOperatorAggregate {
            key: self.key,
            op: self.op.clone(),
        }
    }
}

impl<T> std::fmt::Debug for BinaryOperatorAggregate<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BinaryOperatorAggregate")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<T> Channel for BinaryOperatorAggregate<T>
where
    T: Serialize + DeserializeOwned + Default + Send + Sync + 'static,
{
    type Value = T;
    type Write = ReducerWrite<T>;
    type Saved<'a> = &'a T;
    type Restored = T;

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(&mut self, value: &mut T, writes: I) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = ReducerWrite<T>>,
    {
        if writes.len() == 0 {
            return Ok(false);
        }
        let mut seen_overwrite = false;
        for write in writes {
            match write {
                ReducerWrite::Overwrite(v) => {
                    if seen_overwrite {
                        return Err(InvalidUpdateError::with_code(
                            "Can receive only one Overwrite value per super-step.",
                            ErrorCode::InvalidConcurrentGraphUpdate,
                        ));
                    }
                    seen_overwrite = true;
                    *value = v;
                }
                ReducerWrite::Value(v) if !seen_overwrite => {
                    let current = std::mem::take(value);
                    *value = match &self.op {
                        Op::Plain(op) => op(current, v),
                        Op::Fallible(op) => op(current, v)
                            .map_err(|e| InvalidUpdateError::rejected_by_reducer(self.key, e))?,
                    };
                }
                ReducerWrite::Value(_) => {}
            }
        }
        Ok(true)
    }

    fn is_available(&self, _value: &T) -> bool {
        true
    }

    fn checkpoint<'a>(&'a self, value: &'a T) -> Option<&'a T> {
        Some(value)
    }

    fn restore(&mut self, value: &mut T, saved: Option<T>) {
        *value = saved.unwrap_or_default();
    }
}
