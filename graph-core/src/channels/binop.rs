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
        // The number of leading list items no write of this step changed.
        let mut kept: Option<usize> = None;
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
                    kept = Some(0);
                }
                ReducerWrite::Value(v) if !seen_overwrite => {
                    let current = std::mem::take(value);
                    let reported = kept_prefix::start();
                    *value = match &self.op {
                        Op::Plain(op) => op(current, v),
                        Op::Fallible(op) => op(current, v)
                            .map_err(|e| InvalidUpdateError::rejected_by_reducer(self.key, e))?,
                    };
                    let k = reported.finish();
                    kept = Some(kept.map_or(k, |before| before.min(k)));
                }
                ReducerWrite::Value(_) => {}
            }
        }
        if let Some(k) = kept {
            kept_prefix::log(self.key, k);
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

/// Which leading items of a list-valued field a superstep left as they were, as
/// its reducer reports them: what lets a checkpoint store only the items a
/// step appended (see [`report_kept_prefix`]).
pub(crate) mod kept_prefix {
    use std::cell::{Cell, RefCell};

    thread_local! {
        /// What the reducer running on this thread reported.
        static REPORTED: Cell<Option<usize>> = const { Cell::new(None) };
        /// `(field key, kept items)` of the reducer fields a `track` call
        /// changed; `None` outside one (nothing is recorded).
        static LOG: RefCell<Option<Vec<(&'static str, usize)>>> = const { RefCell::new(None) };
    }

    /// A reducer call in progress.
    pub(crate) struct Call(());

    /// Starts a reducer call: forgets any earlier report.
    pub(crate) fn start() -> Call {
        REPORTED.set(None);
        Call(())
    }

    impl Call {
        /// The reducer's report: the items of its current value that it kept
        /// in place (0 when it reported nothing).
        pub(crate) fn finish(self) -> usize {
            REPORTED.take().unwrap_or(0)
        }
    }

    pub(super) fn report(n: usize) {
        REPORTED.set(Some(n));
    }

    /// Records that field `key` changed in the step and kept its first `kept` items.
    pub(crate) fn log(key: &'static str, kept: usize) {
        LOG.with_borrow_mut(|log| {
            if let Some(log) = log {
                log.push((key, kept));
            }
        });
    }

    /// Runs `f` (the engine's application of a step's writes), recording the
    /// kept prefix of each reducer field it changes.
    pub(crate) fn track<R>(f: impl FnOnce() -> R) -> (R, Vec<(&'static str, usize)>) {
        let outer = LOG.replace(Some(Vec::new()));
        // Restored even if `f` panics (the engine catches panics of user code).
        struct Restore(Option<Vec<(&'static str, usize)>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                LOG.set(self.0.take());
            }
        }
        let restore = Restore(outer);
        let out = f();
        let log = LOG.replace(None).unwrap_or_default();
        drop(restore);
        (out, log)
    }
}

/// Called by a reducer of a list-valued field (a `Vec`, or any value serialised
/// as a JSON array): the first `n` items of the current value it was given are
/// unchanged, and still the first `n` items of the value it returns. A reducer
/// that only appends reports the length of the list it was given.
///
/// With a saver that stores appended items ([`InMemorySaver`]), a checkpoint
/// then stores only the items after those `n`, not the whole list: a thread
/// that grows by a few messages per turn costs what each turn adds. A reducer
/// that reports nothing is taken to have rewritten the whole value (always
/// correct). The report applies to the call it is made in, on the thread the
/// reducer runs on.
///
/// [`InMemorySaver`]: crate::checkpoint::InMemorySaver
///
/// ```
/// use stategraph::channels::report_kept_prefix;
/// use stategraph::prelude::*;
///
/// /// Appends `new` to `list`, keeping every item already in it.
/// fn extend(mut list: Vec<String>, new: Vec<String>) -> Vec<String> {
///     report_kept_prefix(list.len());
///     list.extend(new);
///     list
/// }
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Log {
///     #[reducer(extend)]
///     lines: Vec<String>,
/// }
/// # let _ = Log::update().lines(vec!["hi".into()]);
/// ```
pub fn report_kept_prefix(n: usize) {
    kept_prefix::report(n);
}
