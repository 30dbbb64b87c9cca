//! [`Items`]: one namespace's entries in the in-memory store, by key.

use hashbrown::DefaultHashBuilder;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// How many slots the first block holds; each next one holds twice as many
/// as the one before, up to [`BLOCK`].
const FIRST_BLOCK: usize = 4;

/// How many blocks grow ([`FIRST_BLOCK`] doubled each time) before they
/// are all [`BLOCK`] slots.
const GROWING_BLOCKS: usize = 6;

/// How many slots a full-size block holds.
const BLOCK: usize = FIRST_BLOCK << GROWING_BLOCKS;

/// How many slots the growing blocks hold together.
const IN_GROWING_BLOCKS: usize = FIRST_BLOCK * ((1 << GROWING_BLOCKS) - 1);

/// One namespace's entries by key: each key with its entry in a slot of a
/// block that never moves, found through a table of places (hash, slot). A
/// deleted entry's slot is the next one filled. The blocks grow from 4 slots
/// to 256: a namespace of a few items takes a few hundred bytes, one of many
/// items one allocation per 256.
///
/// Why this layout (store_put_10k_memory, store_search_10k_memory):
/// - a put into a fresh store took a box per entry from the top of the
///   heap, through the allocator's slow path (~200 instructions a put, 8%
///   of one); a block is one allocation for many puts, with no allocator
///   header between entries. How many page faults the blocks cost depends
///   on how glibc's malloc reuses what a store frees (store_put_10k_memory
///   drops its store after each run), not only on their size; measured per
///   10 000 puts: blocks of 64 slots 321 faults, of 256 slots 200, these
///   growing ones (4 to 256) 272, growing ones to 512 355. The growing ones
///   took the puts 3.47 -> 3.26 ms (fixed blocks of 256: 3.13 ms, but 35 KB
///   for a namespace of one item);
/// - a search walks the slots block by block: the entries are read in the
///   order they were written, without a pointer to follow (a hashbrown
///   table of entries, walked in hash order, was 1.8x slower to search);
///   results are ordered by score and by write, never by the walk;
/// - a growth moves the table's 8-byte places (32 bits of the hash kept, no
///   key read again), not entries; with 16-byte (hash, `usize`) pairs the
///   table and its growths took 51 more page faults in each 10 000 puts
///   (372 against 321), 1–2% of the puts' time. A namespace holds at most
///   2³² items ([`NamespaceFull`]).
///
/// The blocks are given back when the namespace empties (the store then
/// drops it), not as single items are deleted.
pub(super) struct Items<E> {
    /// Where every key is.
    table: HashTable<Place>,
    hasher: DefaultHashBuilder,
    slots: Slots<E>,
}

/// A key's place in the table of [`Items`]: 32 bits of the key's hash, kept
/// so that a growth does not read the keys again, and its slot.
#[derive(Clone, Copy)]
struct Place {
    hash: u32,
    slot: u32,
}

impl Place {
    /// The table's hash of a key whose hash is `hash`: the 32 bits in both
    /// halves, so that the table's bucket (low bits) and tag (high bits)
    /// both come from them.
    fn table_hash(hash: u32) -> u64 {
        (u64::from(hash) << 32) | u64::from(hash)
    }
}

/// How many slots block number `n` holds.
fn block_len(n: usize) -> usize {
    FIRST_BLOCK << n.min(GROWING_BLOCKS)
}

/// The block holding `slot`, and the slot's place in it.
fn locate(slot: usize) -> (usize, usize) {
    if slot < IN_GROWING_BLOCKS {
        // Block `n` starts at slot FIRST_BLOCK * (2^n - 1).
        let n = (slot / FIRST_BLOCK + 1).ilog2() as usize;
        (n, slot - FIRST_BLOCK * ((1 << n) - 1))
    } else {
        let beyond = slot - IN_GROWING_BLOCKS;
        (GROWING_BLOCKS + beyond / BLOCK, beyond % BLOCK)
    }
}

/// A key and its entry, where [`Items`] keeps them.
struct Filled<E> {
    key: String,
    entry: E,
}

/// A namespace of the in-memory store cannot take another key: its slots
/// are numbered in 32 bits ([`Place`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "a namespace of the in-memory store holds at most {limit} items; spread the items over \
     several namespaces"
)]
pub(crate) struct NamespaceFull {
    /// The most items a namespace holds.
    pub limit: usize,
}

/// How many slots a namespace hands out at most: every number a [`Place`]
/// holds.
const MAX_SLOTS: usize = 1 << 32;

/// The blocks of [`Items`].
struct Slots<E> {
    /// The blocks ([`locate`] says which slots each holds).
    blocks: Vec<Box<[Option<Filled<E>>]>>,
    /// How many slots were ever handed out (the next new one).
    used: usize,
    /// Slots whose entry was deleted, filled first.
    free: Vec<u32>,
    /// The most slots handed out ([`MAX_SLOTS`]; fewer in tests).
    limit: usize,
}

impl<E> Slots<E> {
    fn fill(&mut self, filled: Filled<E>) -> Result<u32, NamespaceFull> {
        let slot = match self.free.pop() {
            Some(slot) => slot as usize,
            None if self.used >= self.limit => {
                return Err(NamespaceFull { limit: self.limit });
            }
            None => {
                // The next slot's block is made when it is the first slot.
                if locate(self.used).0 == self.blocks.len() {
                    let len = block_len(self.blocks.len());
                    // Built in place (an array built on the stack and boxed
                    // would be copied: 35 KB a block).
                    self.blocks
                        .push(std::iter::repeat_with(|| None).take(len).collect());
                }
                self.used += 1;
                self.used - 1
            }
        };
        // Every slot below `used` is in a block.
        let (block, at) = locate(slot);
        self.blocks[block][at] = Some(filled);
        // Below `limit`, at most `MAX_SLOTS`: the slot fits in 32 bits.
        Ok(slot as u32)
    }

    fn get(&self, slot: u32) -> Option<&Filled<E>> {
        let (block, at) = locate(slot as usize);
        self.blocks.get(block)?.get(at)?.as_ref()
    }

    fn get_mut(&mut self, slot: u32) -> Option<&mut Filled<E>> {
        let (block, at) = locate(slot as usize);
        self.blocks.get_mut(block)?.get_mut(at)?.as_mut()
    }

    fn take(&mut self, slot: u32) -> Option<Filled<E>> {
        let (block, at) = locate(slot as usize);
        let filled = self.blocks.get_mut(block)?.get_mut(at)?.take();
        if filled.is_some() {
            self.free.push(slot);
        }
        filled
    }

    /// Whether `slot` holds `key`.
    fn holds(&self, slot: u32, key: &str) -> bool {
        self.get(slot).is_some_and(|f| f.key == key)
    }
}

/// The entries of [`Items`] with their keys ([`Items::iter`]). A plain loop
/// over the blocks: `flat_map` and `flatten` took 15 more instructions an
/// entry in a search.
pub(super) struct Iter<'a, E> {
    blocks: std::slice::Iter<'a, Box<[Option<Filled<E>>]>>,
    slots: std::slice::Iter<'a, Option<Filled<E>>>,
}

impl<'a, E> Iterator for Iter<'a, E> {
    type Item = (&'a str, &'a E);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(f) = self.slots.find_map(Option::as_ref) {
                return Some((&f.key, &f.entry));
            }
            self.slots = self.blocks.next()?.iter();
        }
    }
}

/// The place of a key in [`Items`], found with one lookup.
pub(super) enum Slot<'a, E> {
    /// The key's entry.
    Occupied(&'a mut E),
    /// No entry: [`Vacant::insert`] writes one.
    Vacant(Vacant<'a, E>),
}

/// A key [`Items`] does not hold.
pub(super) struct Vacant<'a, E> {
    hash: u32,
    table: &'a mut HashTable<Place>,
    slots: &'a mut Slots<E>,
}

impl<E> Vacant<'_, E> {
    /// Writes `entry` as `key` (the key this place was looked up by), unless
    /// the namespace is full.
    pub(super) fn insert(self, key: String, entry: E) -> Result<(), NamespaceFull> {
        let slot = self.slots.fill(Filled { key, entry })?;
        let place = Place {
            hash: self.hash,
            slot,
        };
        self.table
            .insert_unique(Place::table_hash(self.hash), place, |p| {
                Place::table_hash(p.hash)
            });
        Ok(())
    }
}

impl<E> Default for Items<E> {
    fn default() -> Self {
        Items {
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            slots: Slots {
                blocks: Vec::new(),
                used: 0,
                free: Vec::new(),
                limit: MAX_SLOTS,
            },
        }
    }
}

impl<E> Items<E> {
    /// The 32 bits of `key`'s hash its [`Place`] keeps.
    fn key_hash(&self, key: &str) -> u32 {
        (self.hasher.hash_one(key) >> 32) as u32
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub(super) fn get(&self, key: &str) -> Option<&E> {
        let hash = self.key_hash(key);
        let place = self.table.find(Place::table_hash(hash), |p| {
            p.hash == hash && self.slots.holds(p.slot, key)
        })?;
        self.slots.get(place.slot).map(|f| &f.entry)
    }

    /// The place of `key`, to read and then write (one lookup).
    pub(super) fn slot(&mut self, key: &str) -> Slot<'_, E> {
        let hash = self.key_hash(key);
        let Items { table, slots, .. } = self;
        let found = table
            .find(Place::table_hash(hash), |p| {
                p.hash == hash && slots.holds(p.slot, key)
            })
            .map(|p| p.slot);
        match found {
            Some(slot) => match slots.get_mut(slot) {
                Some(filled) => Slot::Occupied(&mut filled.entry),
                // `holds` found the key in this very slot.
                None => unreachable!("a key of the in-memory store names an empty slot"),
            },
            None => Slot::Vacant(Vacant { hash, table, slots }),
        }
    }

    /// Writes `entry` as `key`, or hands both to `update` when `key` has an
    /// entry.
    pub(super) fn upsert(
        &mut self,
        key: String,
        entry: E,
        update: impl FnOnce(&mut E, E),
    ) -> Result<(), NamespaceFull> {
        match self.slot(&key) {
            Slot::Occupied(stored) => {
                update(stored, entry);
                Ok(())
            }
            Slot::Vacant(vacant) => vacant.insert(key, entry),
        }
    }

    /// Deletes `key`'s entry.
    pub(super) fn remove(&mut self, key: &str) -> Option<E> {
        let hash = self.key_hash(key);
        let Items { table, slots, .. } = self;
        let found = table.find_entry(Place::table_hash(hash), |p| {
            p.hash == hash && slots.holds(p.slot, key)
        });
        match found {
            Ok(found) => {
                let (place, _) = found.remove();
                slots.take(place.slot).map(|f| f.entry)
            }
            Err(_) => None,
        }
    }

    /// The entries with their keys, in the order of their slots (not of
    /// their writes: a deleted entry's slot is filled by a later one).
    pub(super) fn iter(&self) -> Iter<'_, E> {
        Iter {
            blocks: self.slots.blocks.iter(),
            slots: [].iter(),
        }
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &E> {
        self.iter().map(|(_, entry)| entry)
    }

    /// Keeps the entries `keep` says to keep.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&str, &E) -> bool) {
        let Items { table, slots, .. } = self;
        table.retain(|p| {
            let kept = slots.get(p.slot).is_some_and(|f| keep(&f.key, &f.entry));
            if !kept {
                slots.take(p.slot);
            }
            kept
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(items: &Items<usize>) -> Vec<(String, usize)> {
        let mut all: Vec<_> = items.iter().map(|(k, &v)| (k.to_owned(), v)).collect();
        all.sort();
        all
    }

    /// Entries keep their keys through deletes, inserts past a block,
    /// updates and a retain; a deleted slot is the next one filled.
    #[test]
    fn entries_follow_their_keys() {
        let mut items = Items::default();
        let n = BLOCK * 2 + 3;
        for i in 0..n {
            items
                .upsert(format!("k{i}"), i, |_, _| unreachable!())
                .expect("room");
        }
        assert_eq!(items.len(), n);
        assert_eq!(items.remove("k5"), Some(5));
        assert_eq!(items.remove("k5"), None);
        assert_eq!(items.get("k5"), None);
        assert_eq!(items.len(), n - 1);
        // The freed slot is the next one filled: the walk meets `new` where
        // it met k5.
        items
            .upsert("new".into(), 1000, |_, _| unreachable!())
            .expect("room");
        let walk: Vec<&str> = items.iter().map(|(k, _)| k).take(7).collect();
        assert_eq!(walk, ["k0", "k1", "k2", "k3", "k4", "new", "k6"]);
        items
            .upsert("k7".into(), 70, |stored, new| *stored += new)
            .expect("room");
        assert_eq!(items.get("k7"), Some(&77));
        assert_eq!(items.len(), n);
        items.retain(|key, &v| key.len() == 2 || v == 1000);
        let expected: Vec<(String, usize)> = [
            ("k0", 0),
            ("k1", 1),
            ("k2", 2),
            ("k3", 3),
            ("k4", 4),
            ("k6", 6),
            ("k7", 77),
            ("k8", 8),
            ("k9", 9),
            ("new", 1000),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(contents(&items), expected);
        assert_eq!(items.len(), expected.len());
        for (key, v) in &expected {
            assert_eq!(items.get(key), Some(v));
        }
        assert_eq!(items.get("k100"), None);
        match items.slot("k9") {
            Slot::Occupied(v) => *v = 99,
            Slot::Vacant(_) => panic!("k9 is held"),
        }
        assert_eq!(items.get("k9"), Some(&99));
        match items.slot("absent") {
            Slot::Occupied(_) => panic!("absent is not held"),
            Slot::Vacant(vacant) => vacant.insert("absent".into(), 1).expect("room"),
        }
        assert_eq!(items.get("absent"), Some(&1));
        // Emptied, then filled again from the freed slots.
        let keys: Vec<String> = items.iter().map(|(k, _)| k.to_owned()).collect();
        for k in &keys {
            assert!(items.remove(k).is_some());
        }
        assert!(items.is_empty());
        assert_eq!(items.iter().count(), 0);
        for i in 0..n {
            items
                .upsert(format!("again{i}"), i, |_, _| unreachable!())
                .expect("room");
        }
        assert_eq!(items.len(), n);
        // The freed slots were filled again: no block more than `n` slots
        // need (the six growing ones, 252 slots, and two of 256).
        assert_eq!(items.slots.blocks.len(), GROWING_BLOCKS + 2);
        assert_eq!(items.values().sum::<usize>(), (0..n).sum::<usize>());
    }

    /// Slots are numbered through the blocks in order, each block holding
    /// what `block_len` says.
    #[test]
    fn slots_are_located_block_after_block() {
        let mut expected = Vec::new();
        for n in 0..GROWING_BLOCKS + 3 {
            expected.extend((0..block_len(n)).map(|at| (n, at)));
        }
        let located: Vec<_> = (0..expected.len()).map(locate).collect();
        assert_eq!(located, expected);
        assert_eq!(block_len(0), 4);
        assert_eq!(block_len(GROWING_BLOCKS), 256);
        assert_eq!(block_len(GROWING_BLOCKS + 5), 256);
        assert_eq!(
            locate(u32::MAX as usize).0,
            6 + (u32::MAX as usize - 252) / 256
        );
    }

    /// A namespace at its limit refuses a new key, still takes updates, and
    /// takes a new key again into a slot a delete freed.
    #[test]
    fn a_full_namespace_refuses_a_new_key_only() {
        let mut items = Items::default();
        items.slots.limit = 3;
        for i in 0..3 {
            items
                .upsert(format!("k{i}"), i, |_, _| unreachable!())
                .expect("room");
        }
        let full = items.upsert("k3".into(), 3, |_, _| unreachable!());
        assert!(matches!(full, Err(NamespaceFull { limit: 3 })));
        assert_eq!(items.get("k3"), None);
        assert_eq!(items.len(), 3);
        items
            .upsert("k1".into(), 10, |stored, new| *stored = new)
            .expect("an update needs no slot");
        assert_eq!(items.get("k1"), Some(&10));
        assert_eq!(items.remove("k0"), Some(0));
        items
            .upsert("k3".into(), 3, |_, _| unreachable!())
            .expect("the freed slot");
        assert_eq!(items.get("k3"), Some(&3));
        let message = NamespaceFull { limit: 3 }.to_string();
        assert!(message.contains("several namespaces"), "{message}");
    }
}
