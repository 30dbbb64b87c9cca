use super::Channel;
use crate::error::InvalidUpdateError;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Becomes available once every one of a fixed set of names has been written; backs
/// join edges (`add_edge([a, b], c)`). Reading it yields nothing; it only triggers.
#[derive(Debug, Clone)]
pub struct NamedBarrierValue {
    key: &'static str,
    names: Arc<BTreeSet<String>>,
}

impl NamedBarrierValue {
    /// A barrier for `key` waiting on `names`.
    pub fn new(key: &'static str, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        NamedBarrierValue {
            key,
            names: Arc::new(names.into_iter().map(Into::into).collect()),
        }
    }
}

fn add_names<I>(
    key: &str,
    names: &BTreeSet<String>,
    seen: &mut BTreeSet<String>,
    writes: I,
) -> Result<bool, InvalidUpdateError>
where
    I: Iterator<Item = String>,
{
    let mut changed = false;
    for name in writes {
        if !names.contains(&name) {
            let expected: Vec<&str> = names.iter().map(String::as_str).collect();
            return Err(InvalidUpdateError::new(format!(
                "At key '{key}': Value {name} not in {expected:?}"
            )));
        }
        changed |= seen.insert(name);
    }
    Ok(changed)
}

impl Channel for NamedBarrierValue {
    type Value = BTreeSet<String>;
    type Write = String;
    type Saved<'a> = &'a BTreeSet<String>;
    type Restored = BTreeSet<String>;

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(
        &mut self,
        seen: &mut BTreeSet<String>,
        writes: I,
    ) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = String>,
    {
        add_names(self.key, &self.names, seen, writes)
    }

    fn is_available(&self, seen: &BTreeSet<String>) -> bool {
        *seen == *self.names
    }

    fn consume(&mut self, seen: &mut BTreeSet<String>) -> bool {
        if *seen == *self.names {
            seen.clear();
            true
        } else {
            false
        }
    }

    fn checkpoint<'a>(&'a self, seen: &'a BTreeSet<String>) -> Option<&'a BTreeSet<String>> {
        Some(seen)
    }

    fn restore(&mut self, seen: &mut BTreeSet<String>, saved: Option<BTreeSet<String>>) {
        *seen = saved.unwrap_or_default();
    }
}

/// A [`NamedBarrierValue`] that becomes available only after `finish()`; backs join
/// edges into deferred nodes.
#[derive(Debug, Clone)]
pub struct NamedBarrierValueAfterFinish {
    key: &'static str,
    names: Arc<BTreeSet<String>>,
    finished: bool,
}

impl NamedBarrierValueAfterFinish {
    /// A barrier for `key` waiting on `names`.
    pub fn new(key: &'static str, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        NamedBarrierValueAfterFinish {
            key,
            names: Arc::new(names.into_iter().map(Into::into).collect()),
            finished: false,
        }
    }
}

impl Channel for NamedBarrierValueAfterFinish {
    type Value = BTreeSet<String>;
    type Write = String;
    type Saved<'a> = (&'a BTreeSet<String>, bool);
    type Restored = (BTreeSet<String>, bool);

    fn key(&self) -> &str {
        self.key
    }

    fn update<I>(
        &mut self,
        seen: &mut BTreeSet<String>,
        writes: I,
    ) -> Result<bool, InvalidUpdateError>
    where
        I: ExactSizeIterator<Item = String>,
    {
        add_names(self.key, &self.names, seen, writes)
    }

    fn is_available(&self, seen: &BTreeSet<String>) -> bool {
        self.finished && *seen == *self.names
    }

    fn consume(&mut self, seen: &mut BTreeSet<String>) -> bool {
        if self.finished && *seen == *self.names {
            self.finished = false;
            seen.clear();
            true
        } else {
            false
        }
    }

    fn finish(&mut self, seen: &mut BTreeSet<String>) -> bool {
        if !self.finished && *seen == *self.names {
            self.finished = true;
            true
        } else {
            false
        }
    }

    fn checkpoint<'a>(
        &'a self,
        seen: &'a BTreeSet<String>,
    ) -> Option<(&'a BTreeSet<String>, bool)> {
        Some((seen, self.finished))
    }

    fn restore(&mut self, seen: &mut BTreeSet<String>, saved: Option<(BTreeSet<String>, bool)>) {
        let (s, finished) = saved.unwrap_or_default();
        *seen = s;
        self.finished = finished;
    }
}
