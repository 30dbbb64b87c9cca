//! The decoded `store_vectors` rows a [`SqliteStore`](super::SqliteStore)
//! keeps between searches, so that a search with a query scores vectors in
//! memory instead of reading every blob under its prefix from SQLite.
//!
//! # When the cache may be used
//!
//! The cache is a copy of the whole `store_vectors` table (rowid, prefix, key
//! and the decoded floats of each row) as one read transaction of the store's
//! connection saw it, tagged with that transaction's `PRAGMA data_version`.
//! A search uses it only when all of these hold:
//!
//! - The store's connection is only ever used on the store's worker thread,
//!   one job (one transaction) at a time, and the cache is only touched by
//!   those jobs (it sits behind a mutex nobody else locks, so the lock is never
//!   contended). So nothing changes the table through this connection while a
//!   job reads the cache.
//! - Writes by *other* connections (another `SqliteStore` on the file, Python's
//!   `SqliteStore`, the `sqlite3` shell) are seen through `PRAGMA
//!   data_version`, read inside the searching transaction: SQLite changes it
//!   when the snapshot the transaction reads differs from the one the previous
//!   transaction of this connection read because another connection committed.
//!   A cache whose version differs from the transaction's is rebuilt from that
//!   transaction, so the cache always equals the transaction's own view.
//! - `data_version` does not change for this connection's own commits, so
//!   every job that writes (puts and deletes of a batch, the TTL sweep) drops
//!   the cache when it ends, committed or not ([`VectorCache::invalidate`]).
//!   A cache built inside a writing job — even from rows that job wrote and
//!   then rolled back — therefore never outlives it. Jobs that only refresh
//!   TTLs write `store`, not `store_vectors`, and keep the cache: which items
//!   are live is read from `store` at every search, as before.
//!
//! Migrations run when the store opens, before the first cache; another
//! process's schema change moves `data_version` like any other commit.
//!
//! # Memory
//!
//! A row costs its floats (4 bytes a dimension) plus [`ROW_OVERHEAD`] bytes
//! and its key's bytes; the cache holds at most [`DEFAULT_LIMIT`] bytes
//! (settable with [`SqliteStore::vector_cache_limit`](super::SqliteStore::vector_cache_limit));
//! while it is built, its growing buffers may briefly take up to twice that.
//! A table larger than that is not cached: from then on this store searches
//! SQLite directly, as it did without a cache. So does a table with rows the
//! cache cannot hold exactly (a NULL or non-text prefix or key, a non-blob
//! embedding, blobs of different sizes): the direct search reports or skips
//! them as it always did.
//!
//! # Cold start
//!
//! The first search with a query after the store opens, or after a write,
//! reads the whole table once (what every search used to cost when it
//! searched the root namespace), then answers from memory.

use rusqlite::Transaction;

/// The default bound on a cache's bytes: 128 MiB, e.g. ~470 000 vectors of 64
/// dimensions or ~21 000 of 1 536.
pub(super) const DEFAULT_LIMIT: usize = 128 << 20;

/// What a row costs besides its floats and its key's bytes: its rowid, its
/// norm, its key's `String` header.
pub(super) const ROW_OVERHEAD: usize = 8 + 4 + std::mem::size_of::<String>();

/// The cache of one store (see the [module docs](self)).
pub(super) struct VectorCache {
    state: State,
    limit: usize,
}

enum State {
    /// Not built, or dropped by a write.
    Cold,
    /// The table as seen at `data_version`.
    Warm(Snapshot),
    /// The table at `data_version` cannot be cached exactly: search SQLite.
    Irregular { data_version: i64 },
    /// The table outgrew the limit: search SQLite until the limit changes.
    Oversize,
}

/// `store_vectors` at one `data_version`, grouped by prefix.
struct Snapshot {
    data_version: i64,
    /// The floats of every vector.
    dims: usize,
    /// Sorted by prefix, one per distinct prefix.
    groups: Vec<Group>,
}

/// The rows of one prefix, in rowid order.
struct Group {
    prefix: String,
    rowids: Vec<i64>,
    keys: Vec<String>,
    /// Each vector's squared magnitude, summed in `f32` in order as
    /// `row::blob_similarity` sums it.
    norms: Vec<f32>,
    /// `dims` floats per row.
    floats: Vec<f32>,
}

/// A scored row: its score, its rowid, and where its prefix and key are.
pub(super) struct Scored {
    pub score: f64,
    pub rowid: i64,
    /// Group and row in the snapshot, for [`VectorCache::owner`].
    pub at: (u32, u32),
}

impl VectorCache {
    pub(super) fn new() -> Self {
        VectorCache {
            state: State::Cold,
            limit: DEFAULT_LIMIT,
        }
    }

    /// Drops the cache: the next search rebuilds it.
    pub(super) fn invalidate(&mut self) {
        self.state = State::Cold;
    }

    /// Sets the bound on the cache's bytes (0: no cache) and drops the cache.
    pub(super) fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
        self.state = State::Cold;
    }

    /// Every vector under `prefix` (the dotted namespace and those below it;
    /// `None`: all) scored against `query` as `row::blob_similarity` scores
    /// it, a NaN as 0, in `tx`'s view. `None` when the cache cannot answer
    /// (the table is too large or irregular, or its vectors have another size
    /// than the query): the caller searches SQLite.
    pub(super) fn score(
        &mut self,
        tx: &Transaction<'_>,
        prefix: Option<&str>,
        query: &[f32],
    ) -> rusqlite::Result<Option<Vec<Scored>>> {
        if matches!(self.state, State::Oversize) {
            return Ok(None);
        }
        let version: i64 = tx.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        let current = match &self.state {
            State::Warm(s) => s.data_version == version,
            State::Irregular { data_version } => *data_version == version,
            State::Cold | State::Oversize => false,
        };
        if !current {
            self.state = build(tx, version, self.limit)?;
        }
        let State::Warm(snapshot) = &self.state else {
            return Ok(None);
        };
        Ok(snapshot.score(prefix, query))
    }

    /// The prefix and key of a row [`score`](Self::score) returned, from the
    /// same snapshot.
    pub(super) fn owner(&self, at: (u32, u32)) -> Option<(&str, &str)> {
        let State::Warm(snapshot) = &self.state else {
            return None;
        };
        let group = snapshot.groups.get(at.0 as usize)?;
        Some((
            group.prefix.as_str(),
            group.keys.get(at.1 as usize)?.as_str(),
        ))
    }
}

/// Reads the whole table in `tx`.
fn build(tx: &Transaction<'_>, data_version: i64, limit: usize) -> rusqlite::Result<State> {
    use rusqlite::types::ValueRef;
    if limit == 0 {
        return Ok(State::Oversize);
    }
    let mut stmt = tx.prepare_cached(
        "SELECT rowid, prefix, key, embedding FROM store_vectors ORDER BY prefix, rowid",
    )?;
    let mut rows = stmt.query([])?;
    let mut groups: Vec<Group> = Vec::new();
    let mut dims: Option<usize> = None;
    let mut bytes = 0usize;
    let irregular = Ok(State::Irregular { data_version });
    while let Some(row) = rows.next()? {
        let rowid: i64 = row.get(0)?;
        let (ValueRef::Text(prefix), ValueRef::Text(key), ValueRef::Blob(blob)) =
            (row.get_ref(1)?, row.get_ref(2)?, row.get_ref(3)?)
        else {
            return irregular;
        };
        let (Ok(prefix), Ok(key)) = (std::str::from_utf8(prefix), std::str::from_utf8(key)) else {
            return irregular;
        };
        if blob.is_empty()
            || blob.len() % 4 != 0
            || *dims.get_or_insert(blob.len() / 4) != blob.len() / 4
        {
            return irregular;
        }
        bytes += blob.len() + key.len() + ROW_OVERHEAD;
        if bytes > limit {
            return Ok(State::Oversize);
        }
        if groups.last().is_none_or(|g| g.prefix != prefix) {
            bytes += prefix.len() + std::mem::size_of::<Group>();
            groups.push(Group {
                prefix: prefix.to_owned(),
                rowids: Vec::new(),
                keys: Vec::new(),
                norms: Vec::new(),
                floats: Vec::new(),
            });
        }
        let Some(group) = groups.last_mut() else {
            return irregular;
        };
        let mut norm = 0f32;
        for chunk in blob.chunks_exact(4) {
            let a = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            norm += a * a;
            group.floats.push(a);
        }
        group.rowids.push(rowid);
        group.keys.push(key.to_owned());
        group.norms.push(norm);
    }
    for group in &mut groups {
        group.floats.shrink_to_fit();
    }
    Ok(State::Warm(Snapshot {
        data_version,
        dims: dims.unwrap_or(0),
        groups,
    }))
}

impl Snapshot {
    fn score(&self, prefix: Option<&str>, query: &[f32]) -> Option<Vec<Scored>> {
        let range = match prefix {
            None => 0..self.groups.len(),
            Some(p) => {
                // The prefix itself and `p.`-something sort from `p` on,
                // together with other `p`-something prefixes.
                let start = self.groups.partition_point(|g| g.prefix.as_str() < p);
                let end = start
                    + self.groups[start..]
                        .iter()
                        .take_while(|g| g.prefix.starts_with(p))
                        .count();
                start..end
            }
        };
        let under = |g: &Group| match prefix {
            None => true,
            Some(p) => g.prefix.len() == p.len() || g.prefix.as_bytes().get(p.len()) == Some(&b'.'),
        };
        let groups = || {
            range
                .clone()
                .filter(|&i| under(&self.groups[i]))
                .map(|i| (i, &self.groups[i]))
        };
        let count: usize = groups().map(|(_, g)| g.rowids.len()).sum();
        if count > 0 && self.dims != query.len() {
            return None;
        }
        let mut b_mag = 0f32;
        for b in query {
            b_mag += b * b;
        }
        let b_root = f64::from(b_mag).sqrt();
        let mut out = Vec::with_capacity(count);
        let mut dots = Vec::new();
        for (g, group) in groups() {
            dot_products(&group.floats, self.dims, query, &mut dots);
            for (r, ((&dot, &a_mag), &rowid)) in
                dots.iter().zip(&group.norms).zip(&group.rowids).enumerate()
            {
                let score = super::row::similarity(dot, a_mag, b_root);
                out.push(Scored {
                    score: if score.is_nan() { 0.0 } else { score },
                    rowid,
                    at: (g as u32, r as u32),
                });
            }
        }
        Some(out)
    }
}

/// The dot product of `query` with each `dims`-float vector of `floats`, into
/// `out`: each an `f32` sum in component order, as `row::blob_similarity`
/// sums it (so the scores are the same to the bit). Four vectors at a time,
/// four independent sums, so that one sum's additions need not wait for
/// another's.
fn dot_products(floats: &[f32], dims: usize, query: &[f32], out: &mut Vec<f32>) {
    out.clear();
    if dims == 0 || query.len() != dims {
        return;
    }
    let query = &query[..dims];
    let mut quads = floats.chunks_exact(4 * dims);
    for quad in &mut quads {
        let (v0, rest) = quad.split_at(dims);
        let (v1, rest) = rest.split_at(dims);
        let (v2, v3) = rest.split_at(dims);
        let (v0, v1, v2, v3) = (&v0[..dims], &v1[..dims], &v2[..dims], &v3[..dims]);
        let mut sums = [0f32; 4];
        for i in 0..dims {
            let b = query[i];
            sums[0] += v0[i] * b;
            sums[1] += v1[i] * b;
            sums[2] += v2[i] * b;
            sums[3] += v3[i] * b;
        }
        out.extend_from_slice(&sums);
    }
    for vector in quads.remainder().chunks_exact(dims) {
        let mut sum = 0f32;
        for (a, b) in vector.iter().zip(query) {
            sum += a * b;
        }
        out.push(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four sums at a time, and the rows left over, equal one sum in order
    /// to the bit.
    #[test]
    fn dot_products_sum_in_order() {
        let dims = 5;
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let floats: Vec<f32> = (0..7 * dims).map(|_| next() * 1e3).collect();
        let query: Vec<f32> = (0..dims).map(|_| next()).collect();
        let mut dots = Vec::new();
        dot_products(&floats, dims, &query, &mut dots);
        let expected: Vec<u32> = floats
            .chunks_exact(dims)
            .map(|v| {
                let mut sum = 0f32;
                for (a, b) in v.iter().zip(&query) {
                    sum += a * b;
                }
                sum.to_bits()
            })
            .collect();
        assert_eq!(
            dots.iter().map(|d| d.to_bits()).collect::<Vec<_>>(),
            expected
        );
        dot_products(&floats, dims, &query[1..], &mut dots);
        assert!(dots.is_empty(), "a query of another size scores nothing");
    }
}
