//! The JSON writer behind [`Blob::encode`](super::Blob::encode): the same bytes as
//! `serde_json::to_string` (compact form, same escapes, same number formatting, raw
//! values written verbatim), with strings scanned 32 bytes at a time.
//!
//! A checkpoint of a large state is mostly string contents (messages, documents),
//! and `serde_json` tests every byte of a string against its escape table; here a
//! run of bytes that needs no escape costs a few vector compares per 32 bytes (a
//! few word operations per eight for short strings) and one copy. Integers are
//! written by `itoa`, as `serde_json` writes them, and other numbers by
//! `serde_json` itself, so they cannot differ. A shared `Arc<serde_json::Value>`
//! met again in the same value is copied from its first text (see `Shared`).

use serde::ser::{self, Impossible, Serialize};
use serde_json::{Error, Value};
use std::any::TypeId;
use std::sync::Arc;

/// `serde_json`'s marker for a [`serde_json::value::RawValue`] (serialised as a
/// struct of this name with one field holding the JSON text).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Texts of at most this many bytes are kept in one allocation with their
/// reference count ([`Written::Short`]); longer ones in the buffer they were
/// written to.
pub(crate) const SHORT_BYTES: usize = 4 << 10;

/// The thread's buffer for short values is kept while it has at most this
/// much room (a value that grew it past this keeps it).
const SCRATCH_MAX: usize = 16 << 10;

thread_local! {
    /// The buffer the thread's short values are written into, then copied out
    /// of: a checkpoint's values and pending writes are mostly a few bytes of
    /// JSON, and a buffer of their own each (grown from empty, then wrapped
    /// in an `Arc`) would be two or more allocations where one is needed.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A value's JSON text, as [`write`] produced it.
pub(crate) enum Written {
    /// A short text, copied into its own exactly sized allocation.
    Short(Arc<str>),
    /// A long text, in the buffer it was written to.
    Long(String),
}

/// Serialises `value` as compact JSON, byte for byte what `serde_json::to_string`
/// writes.
///
/// A large value is written into one of the thread's spare buffers (see
/// [`super::spare`]), whose pages are already touched; a small value written
/// into a large buffer is copied out, and the buffer kept. A short value is
/// written into the thread's scratch buffer and copied into one allocation.
pub(crate) fn write<T: Serialize + ?Sized>(value: &T) -> Result<Written, Error> {
    let mut out = super::spare::take();
    if out.capacity() == 0 {
        out = SCRATCH.take();
        if out.capacity() == 0 {
            out.reserve(256);
        }
    }
    let mut writer = Writer {
        out,
        shared: Shared::default(),
    };
    if let Err(e) = writer.value(value) {
        keep(writer.out);
        return Err(e);
    }
    let mut out = writer.out;
    // Checked in debug builds (every test, the proptests against serde_json).
    debug_assert!(std::str::from_utf8(&out).is_ok());
    if out.len() <= SHORT_BYTES {
        // SAFETY: as below, the bytes `Writer` wrote are valid UTF-8.
        #[allow(unsafe_code)]
        let text: Arc<str> = Arc::from(unsafe { std::str::from_utf8_unchecked(&out) });
        keep(out);
        return Ok(Written::Short(text));
    }
    if out.capacity() >= super::spare::MIN_BYTES && out.len() < out.capacity() / 2 {
        // At most half of the buffer used: the text gets its own allocation
        // (as Vec growth would have given it), the buffer goes back.
        let text = out.as_slice().to_vec();
        super::spare::give(out);
        out = text;
    }
    // SAFETY: `Writer` only ever appends whole `&str` contents (a long one in
    // consecutive blocks, which together are the whole), slices of them cut
    // at ASCII bytes (char boundaries), ASCII punctuation, escapes and digits, and
    // `serde_json`'s own output (which is UTF-8): the bytes are valid UTF-8. This
    // is what `serde_json::to_string` does too; checking megabytes again would cost
    // as much as scanning them for escapes.
    #[allow(unsafe_code)]
    Ok(Written::Long(unsafe { String::from_utf8_unchecked(out) }))
}

/// Takes back a buffer [`write`] is done with: a large one for the spares, a
/// small one as the thread's scratch buffer.
fn keep(mut buffer: Vec<u8>) {
    if buffer.capacity() >= super::spare::MIN_BYTES {
        super::spare::give(buffer);
    } else if buffer.capacity() <= SCRATCH_MAX {
        buffer.clear();
        SCRATCH.set(buffer);
    }
}

/// [`write`]'s text as a `String`.
#[cfg(test)]
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    write(value).map(|written| match written {
        Written::Short(text) => text.to_string(),
        Written::Long(text) => text,
    })
}

struct Writer {
    out: Vec<u8>,
    /// The shared JSON values written so far, to copy when they recur.
    shared: Shared,
}

/// Shared values (`Arc<serde_json::Value>`) already written to the output, by
/// address: a state that holds one value in many places (as a Python state
/// holds one object in several lists) has its text written once per blob and
/// copied after, instead of walking the value again each time. The text is the
/// same either way (compact JSON does not depend on where a value stands).
///
/// Each entry keeps a reference to its value, so the address cannot be freed
/// and reused by another value while the blob is written; a value behind an
/// `Arc` is immutable (`serde_json::Value` has no interior mutability), so the
/// same address always writes the same text.
#[derive(Default)]
struct Shared {
    /// Hashed with a fixed seed: drawing a random seed per blob (a blob of a
    /// small state has no shared value) cost more than the rest of this, and
    /// addresses are not chosen by an adversary.
    seen: hashbrown::HashMap<*const Value, Seen, foldhash::fast::FixedState>,
}

/// Where the text of a shared value stands in the output.
struct Seen {
    /// Keeps the value, and so its address, alive.
    _value: Arc<Value>,
    start: usize,
    end: usize,
}

/// Shared values whose text is shorter than this are written again (a lookup
/// and a copy would cost about as much).
const SHARED_MIN_BYTES: usize = 64;

/// `value` as a shared JSON value, when it is one (`Arc<Value>`, or a
/// reference to one, as a sequence's items are handed over).
#[inline]
fn as_shared<T: ?Sized>(value: &T) -> Option<&Arc<Value>> {
    // The `TypeId` of `T` with its lifetimes erased (`TypeId::of` needs
    // `T: 'static`, and a serializer sees borrowed types).
    let id = typeid::of::<T>();
    if id == TypeId::of::<Arc<Value>>() {
        // SAFETY: `T` is `Arc<Value>` (equal `TypeId`; `Arc<Value>` has no
        // lifetimes to differ in), a sized type, so the pointer is thin and
        // points to an `Arc<Value>` borrowed for as long as `value`.
        #[allow(unsafe_code)]
        Some(unsafe { &*(value as *const T as *const Arc<Value>) })
    } else if id == TypeId::of::<&'static Arc<Value>>() {
        // SAFETY: `T` is `&Arc<Value>` for some lifetime that outlives the
        // borrow of `value` (it is borrowed in it), so reading the reference
        // and using it for that borrow's length is sound.
        #[allow(unsafe_code)]
        Some(unsafe { *(value as *const T as *const &Arc<Value>) })
    } else {
        None
    }
}

impl Writer {
    /// Writes `value`, copying the text of a shared JSON value written before.
    #[inline]
    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match as_shared(value) {
            Some(shared) => self.shared_value(shared),
            None => value.serialize(&mut *self),
        }
    }

    /// A shared JSON value: copied from where it was written before, or written
    /// and remembered.
    fn shared_value(&mut self, value: &Arc<Value>) -> Result<(), Error> {
        let key = Arc::as_ptr(value);
        if let Some(seen) = self.shared.seen.get(&key) {
            let (start, end) = (seen.start, seen.end);
            self.out.extend_from_within(start..end);
            return Ok(());
        }
        let start = self.out.len();
        Value::serialize(&**value, &mut *self)?;
        let end = self.out.len();
        if end - start >= SHARED_MIN_BYTES {
            self.shared.seen.insert(
                key,
                Seen {
                    _value: Arc::clone(value),
                    start,
                    end,
                },
            );
        }
        Ok(())
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Eight bytes as a little-endian word (`chunk` has at least eight).
#[inline]
fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&chunk[..8]);
    u64::from_le_bytes(w)
}

/// The bytes of `word` that are a control character, `"` or `\`: the lowest set
/// high bit marks the first such byte exactly (higher marks may be borrows).
#[inline]
fn escapes_in(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & HIGH
}

/// Bytes scanned per step of a long string: two SSE2 registers' worth, which
/// [`dirty`] compiles to a few vector compares.
const CHUNK: usize = 32;

/// Whether any byte of a chunk needs an escape (no early exit, so it vectorises).
#[inline(always)]
fn dirty(chunk: &[u8]) -> bool {
    chunk.iter().fold(0u8, |acc, &b| {
        acc | u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\')
    }) != 0
}

/// The bytes of a long string [`Writer::string`] scans and copies at a time: a
/// whole number of [`CHUNK`]s.
const BLOCK: usize = 4096;

/// The position of the first byte at or after `from` that needs an escape: whole
/// chunks of a long string, then words of eight, then the tail padded with spaces.
#[inline]
fn next_escape(bytes: &[u8], mut from: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(from..from + CHUNK) {
        if dirty(chunk) {
            break;
        }
        from += CHUNK;
    }
    while let Some(chunk) = bytes.get(from..from + 8) {
        let marks = escapes_in(word(chunk));
        if marks != 0 {
            return Some(from + marks.trailing_zeros() as usize / 8);
        }
        from += 8;
    }
    let tail = bytes.get(from..).filter(|t| !t.is_empty())?;
    let mut padded = [b' '; 8];
    padded[..tail.len()].copy_from_slice(tail);
    let marks = escapes_in(u64::from_le_bytes(padded));
    (marks != 0).then(|| from + marks.trailing_zeros() as usize / 8)
}

/// Bytes that [`copy_clean_prefix`] scans and copies per step.
#[cfg(target_arch = "x86_64")]
const WIDE: usize = 64;

/// Copies the longest prefix of `bytes` made of whole [`WIDE`]-byte pieces that
/// need no escape onto `out`, and returns its length: each piece is loaded
/// once into vector registers, checked, and stored from them (one read of
/// the string instead of a scan and a copy; ~30% faster than the block path
/// on a 4 MB checkpoint of long strings). Two AVX2 registers a piece where the
/// processor has AVX2 (~30% faster again on that checkpoint's strings: 0.17
/// against 0.12 ms), four SSE2 ones otherwise. `out` must have room for
/// `bytes` (`reserve`d by the caller).
#[cfg(target_arch = "x86_64")]
#[inline]
fn copy_clean_prefix(out: &mut Vec<u8>, bytes: &[u8]) -> usize {
    let n = bytes.len();
    if n < WIDE || out.capacity() - out.len() < n {
        return 0;
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above), the one
        // requirement of a `target_feature` function beyond its own.
        #[allow(unsafe_code)]
        unsafe {
            copy_clean_prefix_avx2(out, bytes)
        }
    } else {
        copy_clean_prefix_sse2(out, bytes)
    }
}

/// [`copy_clean_prefix`] in AVX2 registers, for `bytes` of at least [`WIDE`]
/// bytes and `out` with room for them.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn copy_clean_prefix_avx2(out: &mut Vec<u8>, bytes: &[u8]) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_storeu_si256,
    };
    let n = bytes.len();
    assert!(out.capacity() - out.len() >= n);
    let mut i = 0;
    // SAFETY: AVX2 is enabled for this function (its callers checked the
    // processor). Loads read `bytes[i..i + WIDE]` with `i + WIDE <= n` (in
    // bounds); stores write `out`'s spare capacity at `len + i .. len + i +
    // WIDE`, within the `n` bytes of room asserted above; `set_len` covers
    // exactly the bytes stored, which are initialised.
    #[allow(unsafe_code)]
    unsafe {
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        let control = _mm256_set1_epi8(0x1f);
        // As in the SSE2 version: `"`, a backslash, or at most 0x1f.
        let marks = |x: __m256i| {
            _mm256_or_si256(
                _mm256_or_si256(_mm256_cmpeq_epi8(x, quote), _mm256_cmpeq_epi8(x, backslash)),
                _mm256_cmpeq_epi8(_mm256_min_epu8(x, control), x),
            )
        };
        let dst = out.as_mut_ptr().add(out.len());
        while i + WIDE <= n {
            let src = bytes.as_ptr().add(i);
            let a = _mm256_loadu_si256(src.cast::<__m256i>());
            let b = _mm256_loadu_si256(src.add(32).cast::<__m256i>());
            if _mm256_movemask_epi8(_mm256_or_si256(marks(a), marks(b))) != 0 {
                break;
            }
            let to = dst.add(i);
            _mm256_storeu_si256(to.cast::<__m256i>(), a);
            _mm256_storeu_si256(to.add(32).cast::<__m256i>(), b);
            i += WIDE;
        }
        out.set_len(out.len() + i);
    }
    i
}

/// [`copy_clean_prefix`] in SSE2 registers (the x86_64 baseline), for
/// `bytes` of at least [`WIDE`] bytes and `out` with room for them.
#[cfg(target_arch = "x86_64")]
#[inline]
fn copy_clean_prefix_sse2(out: &mut Vec<u8>, bytes: &[u8]) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_storeu_si128,
    };
    let n = bytes.len();
    assert!(out.capacity() - out.len() >= n);
    let mut i = 0;
    // SAFETY: SSE2 is part of the x86_64 baseline, so the intrinsics are
    // available. Loads read `bytes[i..i + WIDE]` with `i + WIDE <= n` (in
    // bounds); stores write `out`'s spare capacity at `len + i .. len + i +
    // WIDE`, within the `n` bytes of room asserted above; `set_len` covers
    // exactly the bytes stored, which are initialised.
    #[allow(unsafe_code)]
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let control = _mm_set1_epi8(0x1f);
        // A byte needs an escape when it is `"`, a backslash or at most 0x1f (the
        // unsigned minimum with 0x1f equals it).
        let marks = |x: __m128i| {
            _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                _mm_cmpeq_epi8(_mm_min_epu8(x, control), x),
            )
        };
        let dst = out.as_mut_ptr().add(out.len());
        while i + WIDE <= n {
            let src = bytes.as_ptr().add(i);
            let a = _mm_loadu_si128(src.cast::<__m128i>());
            let b = _mm_loadu_si128(src.add(16).cast::<__m128i>());
            let c = _mm_loadu_si128(src.add(32).cast::<__m128i>());
            let d = _mm_loadu_si128(src.add(48).cast::<__m128i>());
            let any = _mm_or_si128(
                _mm_or_si128(marks(a), marks(b)),
                _mm_or_si128(marks(c), marks(d)),
            );
            if _mm_movemask_epi8(any) != 0 {
                break;
            }
            let to = dst.add(i);
            _mm_storeu_si128(to.cast::<__m128i>(), a);
            _mm_storeu_si128(to.add(16).cast::<__m128i>(), b);
            _mm_storeu_si128(to.add(32).cast::<__m128i>(), c);
            _mm_storeu_si128(to.add(48).cast::<__m128i>(), d);
            i += WIDE;
        }
        out.set_len(out.len() + i);
    }
    i
}

/// Elsewhere the block path does it all.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn copy_clean_prefix(_out: &mut Vec<u8>, _bytes: &[u8]) -> usize {
    0
}

impl Writer {
    fn number<T: Serialize>(&mut self, value: T) -> Result<(), Error> {
        serde_json::to_writer(&mut self.out, &value)
    }

    /// `s` as a JSON string, with `serde_json`'s escapes.
    #[inline]
    fn string(&mut self, s: &str) {
        let bytes = s.as_bytes();
        self.out.reserve(bytes.len() + 2);
        self.out.push(b'"');
        // The leading run of a long string that needs no escape, scanned and
        // copied in one pass where the target has SSE2.
        let mut from = copy_clean_prefix(&mut self.out, bytes);
        // The rest goes by blocks, each copied right after it was scanned
        // (while it is in the L1 cache): one pass over memory instead of two.
        while bytes.len() - from > BLOCK {
            let block = &bytes[from..from + BLOCK];
            if let Some(first) = next_escape(block, 0) {
                self.escaped(&bytes[from..], first);
                self.out.push(b'"');
                return;
            }
            self.out.extend_from_slice(block);
            from += BLOCK;
        }
        let rest = &bytes[from..];
        match next_escape(rest, 0) {
            None => self.out.extend_from_slice(rest),
            Some(first) => self.escaped(rest, first),
        }
        self.out.push(b'"');
    }

    /// The contents of a string that has something to escape, from its first such
    /// byte at `at`: the runs between escapes are copied whole.
    #[cold]
    fn escaped(&mut self, bytes: &[u8], mut at: usize) {
        let mut start = 0;
        loop {
            self.out.extend_from_slice(&bytes[start..at]);
            let byte = bytes[at];
            let escape: &[u8] = match byte {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                0x08 => b"\\b",
                0x0C => b"\\f",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                _ => b"",
            };
            if escape.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xF)],
                ]);
            } else {
                self.out.extend_from_slice(escape);
            }
            start = at + 1;
            match next_escape(bytes, start) {
                Some(next) => at = next,
                None => break,
            }
        }
        self.out.extend_from_slice(&bytes[start..]);
    }

    /// An integer in decimal, by `itoa` (what `serde_json` uses too).
    #[inline]
    fn integer(&mut self, n: impl itoa::Integer) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }

    #[inline]
    fn comma(&mut self, first: &mut bool) {
        if *first {
            *first = false;
        } else {
            self.out.push(b',');
        }
    }
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.integer(v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.string(v.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.string(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        serde_json::to_writer(&mut self.out, &Bytes(v))
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        self.value(value)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.string(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.out.push(b'{');
        self.string(variant);
        self.out.push(b':');
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        self.out.push(b'[');
        Ok(Compound::new(self, b"]"))
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.out.push(b'{');
        self.string(variant);
        self.out.extend_from_slice(b":[");
        Ok(Compound::new(self, b"]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        self.out.push(b'{');
        Ok(Compound::new(self, b"}"))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Compound<'a>, Error> {
        if name == RAW_VALUE_TOKEN {
            let mut raw = Compound::new(self, b"");
            raw.raw = true;
            return Ok(raw);
        }
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        self.out.push(b'{');
        self.string(variant);
        self.out.extend_from_slice(b":{");
        Ok(Compound::new(self, b"}}"))
    }
}

/// A byte slice serialised the way `serde_json` writes `serialize_bytes`.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

/// An array, map, struct or variant being written; `close` ends it.
struct Compound<'a> {
    writer: &'a mut Writer,
    first: bool,
    close: &'static [u8],
    /// A `RawValue`: its one field is JSON text, written as is.
    raw: bool,
}

impl<'a> Compound<'a> {
    fn new(writer: &'a mut Writer, close: &'static [u8]) -> Self {
        Compound {
            writer,
            first: true,
            close,
            raw: false,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.writer.comma(&mut self.first);
        self.writer.value(value)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        if self.raw {
            return value.serialize(RawText(&mut *self.writer));
        }
        self.writer.comma(&mut self.first);
        self.writer.string(key);
        self.writer.out.push(b':');
        self.writer.value(value)
    }

    fn finish(self) -> Result<(), Error> {
        self.writer.out.extend_from_slice(self.close);
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.writer.comma(&mut self.first);
        key.serialize(MapKey(&mut *self.writer))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.writer.out.push(b':');
        self.writer.value(value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

fn key_must_be_a_string() -> Error {
    <Error as ser::Error>::custom("key must be a string")
}

/// The methods of a serializer that accepts only a string, for these argument types.
macro_rules! not_raw_text {
    ($($method:ident($arg:ty))*) => {
        $(fn $method(self, _v: $arg) -> Result<(), Error> {
            Err(not_raw_text())
        })*
    };
}

/// Writes the JSON text of a `RawValue` verbatim.
struct RawText<'a>(&'a mut Writer);

impl ser::Serializer for RawText<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.0.out.extend_from_slice(v.as_bytes());
        Ok(())
    }

    not_raw_text! {
        serialize_bool(bool) serialize_i8(i8) serialize_i16(i16) serialize_i32(i32)
        serialize_i64(i64) serialize_u8(u8) serialize_u16(u16) serialize_u32(u32)
        serialize_u64(u64) serialize_f32(f32) serialize_f64(f64) serialize_char(char)
        serialize_bytes(&[u8]) serialize_unit_struct(&'static str)
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
    ) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(not_raw_text())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(not_raw_text())
    }
}

fn not_raw_text() -> Error {
    <Error as ser::Error>::custom("a RawValue holds JSON text")
}

/// A map key: a string, or a number, boolean or unit variant written as one, as
/// `serde_json` does (`Some(k)` is `k`).
struct MapKey<'a>(&'a mut Writer);

impl MapKey<'_> {
    fn quoted<T: Serialize>(self, value: T) -> Result<(), Error> {
        self.0.out.push(b'"');
        self.0.number(value)?;
        self.0.out.push(b'"');
        Ok(())
    }
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.0.string(v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.0.string(v.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.0.string(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.0
            .out
            .extend_from_slice(if v { b"\"true\"" } else { b"\"false\"" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.quoted(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        if !v.is_finite() {
            return Err(<Error as ser::Error>::custom("float key must be finite"));
        }
        self.quoted(v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        if !v.is_finite() {
            return Err(<Error as ser::Error>::custom("float key must be finite"));
        }
        self.quoted(v)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Error>, Error> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests {
    use super::{to_string, Shared, Writer};

    /// Both vector versions of `copy_clean_prefix` (the AVX2 one where the
    /// processor has it) copy the same whole pieces before the first byte that
    /// needs an escape.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_copies_stop_at_the_same_piece() {
        for escape in [&b"\""[..], b"\\", b"\n", b"\x01", b"\x1f"] {
            for at in [0, 1, 31, 32, 63, 64, 65, 127, 128, 200, 1000] {
                let mut text = b"abc\xc3\xa9 ~".repeat(200);
                text.splice(at..at, escape.iter().copied());
                let mut sse2 = Vec::with_capacity(text.len());
                let n = super::copy_clean_prefix_sse2(&mut sse2, &text);
                assert_eq!(n, at / super::WIDE * super::WIDE, "{escape:?} at {at}");
                assert_eq!(sse2, text[..n]);
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut avx2 = Vec::with_capacity(text.len());
                    // SAFETY: the processor has AVX2 (checked above).
                    #[allow(unsafe_code)]
                    let m = unsafe { super::copy_clean_prefix_avx2(&mut avx2, &text) };
                    assert_eq!((m, avx2), (n, sse2));
                }
            }
        }
    }
    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn same<T: Serialize + ?Sized>(value: &T) {
        let ours = to_string(value);
        let theirs = serde_json::to_string(value);
        match (ours, theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("ours {a:?}, serde_json {b:?}"),
        }
    }

    #[derive(Serialize)]
    enum Kind {
        Unit,
        Newtype(String),
        Tuple(i32, Option<f64>),
        Struct { a: u8, b: Vec<bool> },
    }

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    struct Wrapper(String);

    #[derive(Serialize)]
    struct Bytes<'a>(#[serde(serialize_with = "as_bytes")] &'a [u8]);

    fn as_bytes<S: serde::Serializer>(v: &&[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    #[derive(Serialize)]
    struct Everything<'a> {
        kinds: Vec<Kind>,
        unit: Unit,
        wrapper: Wrapper,
        bytes: Bytes<'a>,
        chars: (char, char, char),
        ints: (i8, i16, i32, i64, i128, u8, u16, u32, u64, u128),
        floats: Vec<f64>,
        small: (f32, f32),
        int_keys: BTreeMap<i64, &'a str>,
        bool_keys: BTreeMap<bool, ()>,
        char_keys: BTreeMap<char, u8>,
        raw: Box<serde_json::value::RawValue>,
        empty: (Vec<u8>, BTreeMap<String, u8>, Option<Value>),
        tuple_struct: (Wrapper, Unit),
    }

    #[test]
    fn every_serde_form_matches_serde_json() {
        let everything = Everything {
            kinds: vec![
                Kind::Unit,
                Kind::Newtype("x\"y".into()),
                Kind::Tuple(-3, Some(f64::NAN)),
                Kind::Tuple(7, Some(0.1)),
                Kind::Struct {
                    a: 9,
                    b: vec![true, false],
                },
            ],
            unit: Unit,
            wrapper: Wrapper("w".into()),
            bytes: Bytes(&[0, 1, 255]),
            chars: ('"', '\u{1}', 'é'),
            ints: (
                i8::MIN,
                i16::MIN,
                i32::MIN,
                i64::MIN,
                i128::MIN,
                u8::MAX,
                u16::MAX,
                u32::MAX,
                u64::MAX,
                u128::MAX,
            ),
            floats: vec![
                0.0,
                -0.0,
                1.5,
                1e300,
                -2.5e-300,
                f64::INFINITY,
                f64::MIN_POSITIVE,
                123456789.0,
            ],
            small: (0.1, f32::NEG_INFINITY),
            int_keys: [(-1, "a"), (20, "b")].into_iter().collect(),
            bool_keys: [(true, ()), (false, ())].into_iter().collect(),
            char_keys: [('k', 1)].into_iter().collect(),
            raw: serde_json::value::RawValue::from_string("{\"a\": [1, 2]}".into())
                .expect("valid JSON"),
            empty: (Vec::new(), BTreeMap::new(), None),
            tuple_struct: (Wrapper("t".into()), Unit),
        };
        same(&everything);
        same(&json!({"a": [1, 2.5, null, true, {"b\n": "c\u{7f}\u{1f}"}], "": {}}));
        let nested: BTreeMap<u8, BTreeMap<String, ()>> =
            [(1, [("x".to_owned(), ())].into_iter().collect())]
                .into_iter()
                .collect();
        same(&nested);
    }

    #[test]
    fn integers_of_every_decimal_length_match_serde_json() {
        let mut n: u64 = 1;
        loop {
            for v in [n - 1, n, n + 1, n.saturating_mul(10) - 1] {
                same(&v);
                same(&(v as i64));
                same(&(v as i64).wrapping_neg());
            }
            match n.checked_mul(10) {
                Some(next) => n = next,
                None => break,
            }
        }
        same(&(u64::MAX, u64::MAX - 1, i64::MIN, i64::MAX, 0u64, -1i64));
    }

    #[test]
    fn long_strings_match_serde_json_across_blocks() {
        use super::BLOCK;
        // Escapes and multi-byte characters before, at and after the block
        // boundaries, in strings and map keys of several blocks.
        let clean = "é-ascii-ü".repeat(BLOCK);
        let floor = |s: &str, i: usize| (0..=i).rev().find(|&i| s.is_char_boundary(i));
        for at in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 3, 3 * BLOCK] {
            for escape in ["\"", "\n", "\u{1}", "\\"] {
                let end = floor(&clean, 3 * BLOCK + 5).unwrap_or(0);
                let mut s = String::from(&clean[..end]);
                s.insert_str(floor(&s, at).unwrap_or(0), escape);
                same(&s);
                let mut m = BTreeMap::new();
                m.insert(s.clone(), s);
                same(&m);
            }
        }
        same(&clean);
        same(&"x".repeat(2 * BLOCK));
        same(&"x".repeat(2 * BLOCK + 1));
    }

    #[test]
    fn invalid_keys_fail_like_serde_json() {
        let mut m = std::collections::HashMap::new();
        m.insert(vec![1u8], 1);
        same(&m);
        #[derive(Serialize, PartialEq, Eq, Hash)]
        struct K {
            a: u8,
        }
        let mut m = std::collections::HashMap::new();
        m.insert(K { a: 1 }, 1);
        same(&m);
        let mut m = std::collections::HashMap::new();
        m.insert(Some(1), 1);
        same(&m);
        let mut m = std::collections::HashMap::new();
        m.insert(None::<u8>, 1);
        same(&m);
    }

    #[test]
    fn strings_of_every_length_and_escape_position() {
        let specials = [
            "\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", "é", "€", "😀", "/",
        ];
        // Around each multiple of the 32-byte scan step and the 64-byte
        // wide copy too.
        for len in (0..20)
            .chain(29..36)
            .chain(61..68)
            .chain(94..99)
            .chain(125..133)
            .chain(190..194)
        {
            for special in specials {
                for at in 0..=len {
                    let mut s: String = "a".repeat(len);
                    s.insert_str(at, special);
                    same(&s);
                }
            }
        }
    }

    /// A large JSON value (well above the shared-value threshold).
    fn big(tag: u32) -> Value {
        json!({"tag": tag, "text": "x\"y".repeat(40), "list": [1, 2.5, null, true, {"k": "v"}]})
    }

    #[derive(Serialize)]
    struct Holder {
        items: Vec<Arc<Value>>,
        shared: Arc<Vec<Arc<Value>>>,
        one: Option<Arc<Value>>,
        by_key: BTreeMap<String, Arc<Value>>,
        small: Vec<Arc<Value>>,
    }

    #[test]
    fn shared_values_are_written_once_and_copied_with_the_same_text() {
        let a = Arc::new(big(1));
        let b = Arc::new(big(2));
        let tiny = Arc::new(json!(7));
        let holder = Holder {
            items: vec![
                Arc::clone(&a),
                Arc::clone(&b),
                Arc::clone(&a),
                Arc::clone(&a),
            ],
            shared: Arc::new(vec![Arc::clone(&b); 5]),
            one: Some(Arc::clone(&a)),
            by_key: [
                ("x".to_owned(), Arc::clone(&b)),
                ("y".to_owned(), Arc::clone(&a)),
            ]
            .into_iter()
            .collect(),
            small: vec![Arc::clone(&tiny); 3],
        };
        same(&holder);
        same(&vec![Arc::clone(&a); 100]);
        same(&a);
        // Two shared values remembered, the small one not.
        let mut writer = Writer {
            out: Vec::new(),
            shared: Shared::default(),
        };
        writer.value(&holder).expect("serialisable");
        assert_eq!(writer.shared.seen.len(), 2);
        assert_eq!(
            writer.out,
            serde_json::to_vec(&holder).expect("serialisable")
        );
    }

    /// Serialises `n` fresh shared values, each dropped before the next is made,
    /// so the allocator may hand the next one the same address.
    struct Fresh(u32);

    impl Serialize for Fresh {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeSeq;
            let mut seq = serializer.serialize_seq(Some(self.0 as usize))?;
            for i in 0..self.0 {
                let value = Arc::new(big(i));
                seq.serialize_element(&value)?;
            }
            seq.end()
        }
    }

    #[test]
    fn a_shared_value_freed_during_the_write_is_not_mistaken_for_another() {
        same(&Fresh(50));
        let text = to_string(&Fresh(3)).expect("serialisable");
        let back: Vec<Value> = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back, vec![big(0), big(1), big(2)]);
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn random_values_match_serde_json(value in arb_value()) {
            prop_assert_eq!(to_string(&value).ok(), serde_json::to_string(&value).ok());
        }

        #[test]
        fn random_integers_match_serde_json(a in any::<i64>(), b in any::<u64>(), c in 0u64..100_000) {
            let v = (a, b, c, a as i8, a as i16, a as i32, b as u8, b as u16, b as u32);
            prop_assert_eq!(to_string(&v).ok(), serde_json::to_string(&v).ok());
        }

        #[test]
        fn random_strings_match_serde_json(s in any::<String>(), t in "[\\x00-\\x7f]{0,64}") {
            prop_assert_eq!(to_string(&s).ok(), serde_json::to_string(&s).ok());
            prop_assert_eq!(to_string(&t).ok(), serde_json::to_string(&t).ok());
        }
    }
}
