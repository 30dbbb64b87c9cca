//! [`Packed`]: a stored value's bytes as [`InMemorySaver`](super::InMemorySaver)
//! keeps them — the JSON text, or (from a size up) its LZ4 compression, tagged
//! with the codec.
//!
//! A saver that keeps serialised values in process memory pays for every byte
//! it keeps twice: writing it, and the kernel handing it fresh pages (on the
//! benchmark's VM ~2.4 µs per 4 KiB). Checkpointed state is repetitive JSON (the
//! same keys in every message, the same objects in several lists), so a large
//! value compresses to a small fraction. The compressor writes into a scratch
//! buffer of its worst-case size that the thread keeps (up to 8 MiB), and the
//! compressed bytes are copied out of it; the text's own buffer goes back to
//! the thread ([`super::spare`]) for the next value it serialises.

use super::Blob;
use lz4_flex::block;

mod lz4;

/// A value of at least this many bytes is compressed by default: smaller ones
/// gain little (a few hundred bytes) and are read more often than written.
pub(crate) const DEFAULT_MIN_BYTES: usize = 4096;

/// A stored value: the blob itself, or its compression.
pub(crate) enum Packed {
    /// The JSON text as written.
    Plain(Blob),
    /// An LZ4 block of the JSON text, which has `len` bytes.
    Lz4 { data: Box<[u8]>, len: usize },
}

impl Packed {
    /// `blob` as stored: compressed when it has at least `min_bytes` (never
    /// when `None`) and the compression saves at least an eighth of it.
    pub(crate) fn new(blob: Blob, min_bytes: Option<usize>) -> Self {
        let text = blob.as_str().as_bytes();
        if min_bytes.is_none_or(|min| text.len() < min) {
            return Packed::Plain(blob);
        }
        match compress(text) {
            Some(data) => {
                let len = text.len();
                // The text's buffer serialises the thread's next large value.
                if let Some(text) = blob.into_buffer() {
                    super::spare::give(text.into_bytes());
                }
                Packed::Lz4 { data, len }
            }
            None => Packed::Plain(blob),
        }
    }

    /// The bytes kept.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Packed::Plain(blob) => blob.as_str().len(),
            Packed::Lz4 { data, .. } => data.len(),
        }
    }

    /// The JSON text's length.
    pub(crate) fn len(&self) -> usize {
        match self {
            Packed::Plain(blob) => blob.as_str().len(),
            Packed::Lz4 { len, .. } => *len,
        }
    }

    /// The blob: shared when kept plain, decompressed otherwise.
    pub(crate) fn blob(&self) -> Result<Blob, String> {
        match self {
            Packed::Plain(blob) => Ok(blob.clone()),
            Packed::Lz4 { data, len } => {
                let mut text = vec![0u8; *len];
                let written = block::decompress_into(data, &mut text)
                    .map_err(|e| format!("a compressed value does not decompress: {e}"))?;
                if written != *len {
                    return Err(format!(
                        "a compressed value of {len} bytes decompresses to {written}"
                    ));
                }
                let text = String::from_utf8(text)
                    .map_err(|e| format!("a compressed value is not UTF-8 text: {e}"))?;
                Ok(Blob::from_text(text))
            }
        }
    }
}

/// `text` compressed, when that saves at least an eighth of it.
fn compress(text: &[u8]) -> Option<Box<[u8]>> {
    let limit = text.len() - text.len() / 8;
    // Written into the thread's scratch buffer, then copied out: a buffer
    // grown to the text's worst case each time would be fresh memory (a page
    // fault per page written). Reserved, not zeroed: only the pages the
    // compression writes are ever touched.
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.clear();
        scratch.reserve(limit.min(SCRATCH_MAX));
        let packed = lz4::compress(text, scratch, limit).then(|| Box::from(&scratch[..]));
        if scratch.capacity() > SCRATCH_MAX {
            // A larger value, rarer, does not keep that much reserved.
            *scratch = Vec::new();
        }
        packed
    })
}

/// The most the thread's scratch buffer keeps reserved between values.
const SCRATCH_MAX: usize = 8 << 20;

thread_local! {
    /// The thread's buffer to compress into.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_repetitive_value_is_kept_compressed_and_reads_back_the_same() {
        let items: Vec<String> = (0..500)
            .map(|i| format!("message {} {}", i % 7, "x".repeat(100)))
            .collect();
        let blob = Blob::encode(&items).unwrap();
        let packed = Packed::new(blob.clone(), Some(DEFAULT_MIN_BYTES));
        assert!(matches!(packed, Packed::Lz4 { .. }));
        assert!(
            packed.bytes() * 10 < blob.as_str().len(),
            "{} bytes",
            packed.bytes()
        );
        assert_eq!(packed.len(), blob.as_str().len());
        assert_eq!(packed.blob().unwrap(), blob);
    }

    #[test]
    fn small_incompressible_or_unwanted_values_are_kept_plain() {
        let small = Blob::encode(&"x".repeat(100)).unwrap();
        assert!(matches!(
            Packed::new(small, Some(DEFAULT_MIN_BYTES)),
            Packed::Plain(_)
        ));
        let large = Blob::encode(&"y".repeat(10_000)).unwrap();
        assert!(matches!(Packed::new(large.clone(), None), Packed::Plain(_)));
        // Pseudo-random letters: LZ4 finds too little to repeat.
        let mut rng = fastrand::Rng::with_seed(7);
        let noise: String = (0..10_000).map(|_| rng.alphanumeric()).collect();
        let noise = Blob::encode(&noise).unwrap();
        let packed = Packed::new(noise.clone(), Some(DEFAULT_MIN_BYTES));
        assert!(matches!(packed, Packed::Plain(_)));
        assert_eq!(packed.blob().unwrap(), noise);
    }

    #[test]
    fn a_damaged_compressed_value_is_an_error_not_a_panic() {
        let blob = Blob::encode(&vec!["abc".repeat(2000); 4]).unwrap();
        let Packed::Lz4 { mut data, len } = Packed::new(blob, Some(1)) else {
            panic!("not compressed");
        };
        let cut = data.len() / 2;
        data[cut..].fill(0xff);
        assert!(Packed::Lz4 { data, len }.blob().is_err());
    }
}
