//! The append layout of database savers (graph-sqlite's and graph-postgres's
//! opt-in `append_layout`): a list channel that only grew is stored as the
//! items one checkpoint appended, in a blob row of type [`APPENDED`] whose text
//! names the version it extends; reads follow those links back to a whole
//! value. It knows nothing of SQL, as [`rows`](super::rows): each saver fetches
//! and stores the rows, and uses this module for their text, for deciding when
//! to store a value whole again, and for its cache of newest values
//! ([`Heads`]).
//!
//! The row's text is a JSON object ([`AppendedRow`]): `base` (the version it
//! extends), `keep` (how many items of that value it keeps), `chain` (the bytes
//! of items appended since the last whole value, this row's included), `whole`
//! (that whole value's size) and `items` (the appended items, a JSON array).
//! Once `chain` would pass `whole`, the value is stored whole again
//! (compaction): whole copies then at least double each time, so a thread's
//! bytes grow linearly with what it appends, and a read follows at most as
//! many links as it takes to append one whole value's worth of bytes.
//!
//! Assembling a value from its chain costs its size; a saver that reads a
//! thread's latest checkpoint at every turn (as a graph's `invoke` does) keeps
//! each channel's newest whole value in a [`Heads`] cache and extends it in
//! place at the next append, so a turn costs what it appended. Entries are
//! keyed by version, and a version names one value for good (versions are
//! unique per write: LangGraph's carry a random part), so a value cached by one
//! process stays right whatever other processes write.

use super::{Append, Blob, ChannelVersion, SharedStr};
use hashbrown::{Equivalent, HashMap};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::hash::{Hash, Hasher};

/// The `type` of a blob row holding appended items.
pub const APPENDED: &str = "stategraph_append";

/// Why appended rows could not be written or assembled. A saver adds the
/// thread, checkpoint and channel around it.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// The text of a row of type [`APPENDED`] is not one.
    #[error("a stored appended row cannot be read: {0}")]
    Row(#[source] serde_json::Error),
    /// A value that is appended to, or the appended items, is not a JSON array.
    #[error("{what} is not a JSON array: {source}")]
    NotAList {
        /// `"a stored value"` or `"the appended items"`.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// An append keeps more items than the value it extends has.
    #[error("an append keeps {keep} items of a value that has {items}")]
    KeepsTooMany {
        /// How many it keeps.
        keep: usize,
        /// How many the value has.
        items: usize,
    },
}

/// The text of a row of type [`APPENDED`].
#[derive(Debug, Serialize, Deserialize)]
pub struct AppendedRow<'a> {
    /// The version this one extends.
    #[serde(borrow)]
    pub base: Cow<'a, str>,
    /// How many leading items of `base`'s value this one keeps.
    pub keep: usize,
    /// The bytes of items appended since the last whole value, this row's
    /// included.
    pub chain: usize,
    /// The size of that whole value.
    pub whole: usize,
    /// The items that follow the kept ones: a JSON array.
    #[serde(borrow)]
    pub items: &'a RawValue,
    /// The number of items of the value this row stores (absent in rows
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
}

impl<'a> AppendedRow<'a> {
    /// Reads a row's text.
    pub fn parse(text: &'a str) -> Result<Self, AppendError> {
        serde_json::from_str(text).map_err(AppendError::Row)
    }

    /// The row's text.
    pub fn text(&self) -> Result<String, AppendError> {
        serde_json::to_string(self).map_err(AppendError::Row)
    }

    /// What this row tells about the chain it ends.
    pub fn facts(&self) -> RowFacts {
        RowFacts {
            chain: self.chain,
            whole: self.whole,
            items: self.count,
        }
    }
}

/// What a stored version's row tells a `put` that appends to it: the bytes
/// appended since the last whole value (0 for a whole value), that value's
/// size, and the number of items of the version's value, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowFacts {
    /// Bytes of items appended since the last whole value.
    pub chain: usize,
    /// The size of that whole value.
    pub whole: usize,
    /// The number of items of the version's value (`None`: not recorded).
    pub items: Option<usize>,
}

impl RowFacts {
    /// The facts of a whole value of `bytes` bytes and `items` items.
    pub fn whole(bytes: usize, items: Option<usize>) -> Self {
        RowFacts {
            chain: 0,
            whole: bytes,
            items,
        }
    }

    /// The facts of a whole value stored as the JSON array `text`.
    pub fn of_whole(text: &str) -> Result<Self, AppendError> {
        let items = array_items(text, "a stored value")?.len();
        Ok(RowFacts::whole(text.len(), Some(items)))
    }
}

/// The text of the row that stores `append` (extending version `base`, whose
/// row has `facts`) as appended items, or `None` when the value is due to be
/// stored whole again: the items appended since the last whole value would
/// pass its size. Also returns the new row's facts.
pub fn appended_row(
    base: &str,
    facts: RowFacts,
    append: &Append,
) -> Result<Option<(String, RowFacts)>, AppendError> {
    let new_items = array_items(append.items.as_str(), "the appended items")?.len();
    if let Some(items) = facts.items
        && append.keep > items
    {
        return Err(AppendError::KeepsTooMany {
            keep: append.keep,
            items,
        });
    }
    let chain = facts.chain + append.items.as_str().len();
    if chain > facts.whole {
        return Ok(None);
    }
    let items: &RawValue =
        serde_json::from_str(append.items.as_str()).map_err(|source| AppendError::NotAList {
            what: "the appended items",
            source,
        })?;
    let row = AppendedRow {
        base: Cow::Borrowed(base),
        keep: append.keep,
        chain,
        whole: facts.whole,
        items,
        count: facts.items.map(|_| append.keep + new_items),
    };
    let facts = row.facts();
    Ok(Some((row.text()?, facts)))
}

/// The row a `put` stores for an append (its `type` and text), and the
/// channel's new head when it is known.
#[derive(Debug)]
pub struct NewRow {
    /// [`APPENDED`], or [`JSON`](super::rows::JSON) for a value stored whole.
    pub type_: &'static str,
    /// The row's text.
    pub text: String,
    /// The new version's whole value, when the base's was at hand.
    pub head: Option<Head>,
}

/// The row that stores `append` as version `version`, given the facts of its
/// base's row and, if cached, the base's head: the appended items, or
/// `Ok(Err(head))` when the value is due to be stored whole again and the
/// caller must find the base's whole value (if `head` is `None`) and call
/// [`whole_row`].
pub fn next_row(
    facts: RowFacts,
    head: Option<Head>,
    version: &ChannelVersion,
    append: &Append,
) -> Result<Result<NewRow, Option<Head>>, AppendError> {
    let Some((text, facts)) = appended_row(append.base.as_str(), facts, append)? else {
        return Ok(Err(head));
    };
    let head = match head {
        Some(mut head) => {
            head.extend(version.clone(), append)?;
            head.facts = facts;
            Some(head)
        }
        None => None,
    };
    Ok(Ok(NewRow {
        type_: APPENDED,
        text,
        head,
    }))
}

/// The row that stores `append` (extending `head`, the base's whole value)
/// as version `version` whole.
pub fn whole_row(
    mut head: Head,
    version: &ChannelVersion,
    append: &Append,
) -> Result<NewRow, AppendError> {
    head.extend(version.clone(), append)?;
    let text = head.value.as_str().to_owned();
    head.facts = RowFacts::whole(text.len(), Some(head.items));
    Ok(NewRow {
        type_: super::rows::JSON,
        text,
        head: Some(head),
    })
}

/// The items of a JSON array, as the text of each.
fn array_items<'t>(text: &'t str, what: &'static str) -> Result<Vec<&'t RawValue>, AppendError> {
    serde_json::from_str(text).map_err(|source| AppendError::NotAList { what, source })
}

/// A JSON array of `items`.
pub(crate) fn join_items<'t>(
    items: impl IntoIterator<Item = &'t RawValue>,
    capacity: usize,
) -> String {
    let mut out = String::with_capacity(capacity + 2);
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.get());
    }
    out.push(']');
    out
}

/// The whole value of a chain: `whole` (a JSON array), then each link's
/// `(keep, items)`, oldest first. Returns the value's text and its number of
/// items.
pub fn assemble<'t>(
    whole: &'t str,
    links: impl IntoIterator<Item = (usize, &'t str)>,
) -> Result<(String, usize), AppendError> {
    let mut items = array_items(whole, "a stored value")?;
    let mut bytes = whole.len();
    for (keep, appended) in links {
        if keep > items.len() {
            return Err(AppendError::KeepsTooMany {
                keep,
                items: items.len(),
            });
        }
        items.truncate(keep);
        items.extend(array_items(appended, "the appended items")?);
        bytes += appended.len();
    }
    let count = items.len();
    Ok((join_items(items, bytes), count))
}

/// `text` (a JSON array of `count` items without trailing commas) with the
/// items of the array `items` appended, in place.
pub(crate) fn push_items(text: &mut String, count: usize, items: &str) {
    let inner = items.trim();
    let inner = inner
        .strip_prefix('[')
        .and_then(|i| i.strip_suffix(']'))
        .unwrap_or("")
        .trim();
    if inner.is_empty() {
        return;
    }
    let end = text.trim_end().len();
    text.truncate(end.saturating_sub(1));
    if count > 0 {
        text.push(',');
    }
    text.push_str(inner);
    text.push(']');
}

/// A channel's whole value at one version, as a [`Heads`] cache keeps it.
#[derive(Debug, Clone)]
pub struct Head {
    /// The version.
    pub version: ChannelVersion,
    /// The whole value.
    pub value: Blob,
    /// The facts of the version's stored row (for the next append's row).
    pub facts: RowFacts,
    /// The number of items in `value`.
    items: usize,
}

impl Head {
    /// The head of version `version`, whose whole value is `value` (a JSON
    /// array) and whose row has `facts`.
    pub fn new(version: ChannelVersion, value: Blob, facts: RowFacts) -> Result<Self, AppendError> {
        let items = array_items(value.as_str(), "a stored value")?.len();
        Ok(Head {
            version,
            value,
            facts,
            items,
        })
    }

    /// A head whose item count is known (from [`assemble`]).
    pub fn assembled(version: ChannelVersion, text: String, items: usize, facts: RowFacts) -> Self {
        Head {
            version,
            value: Blob::from_text(text),
            facts,
            items,
        }
    }

    /// Extends the value by `append` (which must extend this head's version)
    /// into version `version`, in place when no one else holds the value; its
    /// row's facts are left to the caller.
    pub fn extend(&mut self, version: ChannelVersion, append: &Append) -> Result<(), AppendError> {
        let new_items = array_items(append.items.as_str(), "the appended items")?.len();
        if append.keep > self.items {
            return Err(AppendError::KeepsTooMany {
                keep: append.keep,
                items: self.items,
            });
        }
        if append.keep < self.items {
            let text = {
                let mut kept = array_items(self.value.as_str(), "a stored value")?;
                kept.truncate(append.keep);
                join_items(kept, self.value.as_str().len())
            };
            self.value = Blob::from_text(text);
        }
        self.value
            .edit(|text| push_items(text, append.keep, append.items.as_str()));
        self.items = append.keep + new_items;
        self.version = version;
        Ok(())
    }
}

/// Where a head lives: thread, namespace, channel.
#[derive(PartialEq, Eq)]
struct HeadKey {
    thread_id: Box<str>,
    checkpoint_ns: Box<str>,
    channel: SharedStr,
}

impl Hash for HeadKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `(&str, &str, &str)` hashes: the map is read with borrowed triples.
        (
            &*self.thread_id,
            &*self.checkpoint_ns,
            self.channel.as_str(),
        )
            .hash(state);
    }
}

impl Equivalent<HeadKey> for (&str, &str, &str) {
    fn equivalent(&self, key: &HeadKey) -> bool {
        self.0 == &*key.thread_id && self.1 == &*key.checkpoint_ns && self.2 == key.channel.as_str()
    }
}

/// A bounded cache of the newest whole value of each appended channel a saver
/// has read or written, keyed by thread, namespace and channel, and matched by
/// version: an entry answers only for the version it holds. The least recently
/// used entries go first once there are more than the entry or byte bounds
/// allow.
#[derive(Debug)]
pub struct Heads {
    entries: HashMap<HeadKey, (Head, u64)>,
    bytes: usize,
    clock: u64,
    max_entries: usize,
    max_bytes: usize,
}

impl std::fmt::Debug for HeadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "({}, {}, {})",
            self.thread_id, self.checkpoint_ns, self.channel
        )
    }
}

impl Default for Heads {
    /// At most 256 entries and 64 MiB of values.
    fn default() -> Self {
        Heads::new(256, 64 << 20)
    }
}

impl Heads {
    /// A cache of at most `max_entries` values and `max_bytes` bytes of them.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Heads {
            entries: HashMap::new(),
            bytes: 0,
            clock: 0,
            max_entries,
            max_bytes,
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The whole value of `channel` at `version`, if cached.
    pub fn get(
        &mut self,
        thread_id: &str,
        checkpoint_ns: &str,
        channel: &str,
        version: &str,
    ) -> Option<Blob> {
        let now = self.tick();
        let (head, used) = self.entries.get_mut(&(thread_id, checkpoint_ns, channel))?;
        if head.version.as_str() != version {
            return None;
        }
        *used = now;
        Some(head.value.clone())
    }

    /// Takes the head of `channel` out of the cache if it holds `version` (a
    /// `put` extends it, then puts it back under its new version).
    pub fn take(
        &mut self,
        thread_id: &str,
        checkpoint_ns: &str,
        channel: &str,
        version: &str,
    ) -> Option<Head> {
        let key = (thread_id, checkpoint_ns, channel);
        if self.entries.get(&key)?.0.version.as_str() != version {
            return None;
        }
        let (head, _) = self.entries.remove(&key)?;
        self.bytes -= head.value.as_str().len();
        Some(head)
    }

    /// Caches `head` as `channel`'s newest value, replacing the entry of an
    /// older version (versions order as their text, LangGraph's zero-padded
    /// counters); an entry of a newer version stays.
    pub fn offer(&mut self, thread_id: &str, checkpoint_ns: &str, channel: &SharedStr, head: Head) {
        let key = (thread_id, checkpoint_ns, channel.as_str());
        if let Some((old, _)) = self.entries.get(&key)
            && old.version.as_str() > head.version.as_str()
        {
            return;
        }
        self.insert(thread_id, checkpoint_ns, channel, head);
    }

    /// Caches `head` as `channel`'s value, replacing any entry of it.
    pub fn insert(
        &mut self,
        thread_id: &str,
        checkpoint_ns: &str,
        channel: &SharedStr,
        head: Head,
    ) {
        self.forget(thread_id, checkpoint_ns, channel);
        let size = head.value.as_str().len();
        if size > self.max_bytes || self.max_entries == 0 {
            return;
        }
        while self.entries.len() >= self.max_entries || self.bytes + size > self.max_bytes {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| {
                    (
                        k.thread_id.clone(),
                        k.checkpoint_ns.clone(),
                        k.channel.clone(),
                    )
                });
            let Some((t, n, c)) = oldest else { break };
            self.forget(&t, &n, &c);
        }
        let now = self.tick();
        self.bytes += size;
        self.entries.insert(
            HeadKey {
                thread_id: thread_id.into(),
                checkpoint_ns: checkpoint_ns.into(),
                channel: channel.clone(),
            },
            (head, now),
        );
    }

    /// Drops the entry of `channel`.
    pub fn forget(&mut self, thread_id: &str, checkpoint_ns: &str, channel: &str) {
        if let Some((head, _)) = self.entries.remove(&(thread_id, checkpoint_ns, channel)) {
            self.bytes -= head.value.as_str().len();
        }
    }

    /// Drops every entry of `thread_id` (it was deleted or pruned).
    pub fn forget_thread(&mut self, thread_id: &str) {
        let mut freed = 0;
        self.entries.retain(|k, (head, _)| {
            let keep = &*k.thread_id != thread_id;
            if !keep {
                freed += head.value.as_str().len();
            }
            keep
        });
        self.bytes -= freed;
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// The number of cached values.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(keep: usize, items: &str) -> Append {
        Append {
            base: "1".into(),
            keep,
            items: Blob::from_json(items).unwrap(),
        }
    }

    #[test]
    fn a_chain_assembles_with_replacements_and_empty_appends() {
        let (text, n) = assemble(
            "[1,2]",
            [(2, "[3]"), (3, "[\"a\",4]"), (4, "[5]"), (5, "[]")],
        )
        .unwrap();
        assert_eq!(text, r#"[1,2,3,"a",5]"#);
        assert_eq!(n, 5);
        assert!(matches!(
            assemble("[1]", [(2, "[3]")]),
            Err(AppendError::KeepsTooMany { keep: 2, items: 1 })
        ));
    }

    #[test]
    fn a_head_extends_in_place_and_truncates_what_it_does_not_keep() {
        let mut head = Head::new(
            "1".into(),
            Blob::from_json("[1, 2]").unwrap(),
            RowFacts::whole(6, Some(2)),
        )
        .unwrap();
        head.extend("2".into(), &append(2, "[3]")).unwrap();
        assert_eq!(head.value.as_str(), "[1, 2,3]");
        head.extend("3".into(), &append(2, "[4,5]")).unwrap();
        assert_eq!(head.value.as_str(), "[1,2,4,5]");
        head.extend("4".into(), &append(4, "[]")).unwrap();
        assert_eq!(head.value.as_str(), "[1,2,4,5]");
        assert_eq!(head.version.as_str(), "4");
        assert!(head.extend("5".into(), &append(9, "[1]")).is_err());
        let mut empty = Head::new(
            "1".into(),
            Blob::from_json("[]").unwrap(),
            RowFacts::whole(2, Some(0)),
        )
        .unwrap();
        empty.extend("2".into(), &append(0, "[7]")).unwrap();
        assert_eq!(empty.value.as_str(), "[7]");
    }

    #[test]
    fn rows_are_appended_until_the_chain_passes_the_whole_value() {
        let facts = RowFacts::whole(10, Some(1));
        assert!(matches!(
            appended_row("v1", facts, &append(2, "[1]")),
            Err(AppendError::KeepsTooMany { keep: 2, items: 1 })
        ));
        let (text, next) = appended_row("v1", facts, &append(1, "[12345]"))
            .unwrap()
            .unwrap();
        assert_eq!(
            next,
            RowFacts {
                chain: 7,
                whole: 10,
                items: Some(2)
            }
        );
        let row = AppendedRow::parse(&text).unwrap();
        assert_eq!(
            (&*row.base, row.keep, row.items.get()),
            ("v1", 1, "[12345]")
        );
        assert!(appended_row("v2", next, &append(2, "[6789]"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_cache_answers_by_version_and_stays_within_its_bounds() {
        let head = |v: &str, text: &str| {
            Head::new(
                v.into(),
                Blob::from_json(text).unwrap(),
                RowFacts::whole(text.len(), None),
            )
            .unwrap()
        };
        let c = SharedStr::from("messages");
        let mut heads = Heads::new(2, 20);
        heads.insert("t", "", &c, head("002", "[1,2]"));
        assert_eq!(
            heads.get("t", "", "messages", "002").unwrap().as_str(),
            "[1,2]"
        );
        assert!(heads.get("t", "", "messages", "001").is_none());
        // An older version does not replace a newer one.
        heads.offer("t", "", &c, head("001", "[1]"));
        assert!(heads.get("t", "", "messages", "002").is_some());
        assert!(heads.take("t", "", "messages", "001").is_none());
        assert!(heads.take("t", "", "messages", "002").is_some());
        assert!(heads.is_empty());
        // Two entries at most: the least recently used goes.
        heads.insert("a", "", &c, head("1", "[1]"));
        heads.insert("b", "", &c, head("1", "[2]"));
        assert!(heads.get("a", "", "messages", "1").is_some());
        heads.insert("c", "", &c, head("1", "[3]"));
        assert_eq!(heads.len(), 2);
        assert!(heads.get("b", "", "messages", "1").is_none());
        // A value over the byte bound is not kept; bytes are freed per thread.
        heads.insert("d", "", &c, head("1", &format!("[\"{}\"]", "x".repeat(30))));
        assert!(heads.get("d", "", "messages", "1").is_none());
        heads.forget_thread("a");
        heads.forget_thread("c");
        assert!(heads.is_empty());
        heads.insert("e", "", &c, head("1", &format!("[\"{}\"]", "x".repeat(14))));
        assert_eq!(heads.len(), 1);
    }
}
