//! An LZ4 block compressor: the greedy parse of LZ4's fast mode (a 4-byte
//! hash, the skip that speeds up over incompressible runs), writing the block
//! format that `lz4_flex` reads back.
//!
//! Why our own: checkpointed state is long runs of repeated text (a message
//! list's tool results, the same keys in every object), so compressing it is
//! mostly extending long matches. `lz4_flex` extends a match 8 bytes per step;
//! here a step compares 64 bytes in AVX2 registers (SSE2 ones where the
//! processor lacks AVX2; 8 bytes off x86_64), which on react_agent_100_ckpt's
//! 4 MB checkpoint takes the compression from ~0.5 to ~0.3 ms with the text
//! out of the L2 cache. The output is a valid block for any input;
//! decompression stays `lz4_flex`'s checked decoder.

/// The shortest match LZ4 encodes.
const MIN_MATCH: usize = 4;
/// The block's last bytes are always literals...
const LAST_LITERALS: usize = 5;
/// ...and its last match starts at least this many bytes before its end.
const MF_LIMIT: usize = 12;
/// The farthest a match may look back.
const MAX_OFFSET: usize = 65_535;
/// How fast the search speeds up over bytes that do not repeat (as
/// `lz4_flex`; the reference LZ4 waits twice as long).
const SKIP: u32 = 5;
/// The hash table's size, as a power of two (16 KiB of positions, as LZ4's).
const HASH_LOG: u32 = 12;

/// Compresses `input` as one LZ4 block appended to `out`, unless the block
/// would take more than `limit` bytes: then `out` is left with a partial
/// block after its old length, and the answer is `false`.
pub(super) fn compress(input: &[u8], out: &mut Vec<u8>, limit: usize) -> bool {
    let len = input.len();
    let start = out.len();
    let mut anchor = 0;
    // Positions are kept as `u32` (inputs past 4 GiB are stored as literals).
    if len > MF_LIMIT && u32::try_from(len).is_ok() {
        let mut table = [0u32; 1 << HASH_LOG];
        let hash = |v: u32| (v.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize;
        // A match starts before `match_limit` and ends by `end`.
        let match_limit = len - MF_LIMIT;
        let end = len - LAST_LITERALS;
        // A miss moves on by `misses >> SKIP` bytes: one byte for the first
        // 32, then faster over text that does not repeat.
        let mut misses = 1usize << SKIP;
        let mut i = 1;
        // The four bytes at `at`, for `at < match_limit` (every position the
        // search reads at: `i`, a candidate below it, `i - 2`).
        let word = |at: usize| {
            assert!(at < match_limit);
            // SAFETY: `at + 4 <= match_limit + 4 < len`: the four bytes are
            // inside `input` (read unaligned).
            #[allow(unsafe_code)]
            let word = unsafe { input.as_ptr().add(at).cast::<u32>().read_unaligned() };
            u32::from_le(word)
        };
        while i < match_limit {
            let seq = word(i);
            let h = hash(seq);
            // Every position in the table is below `i` (written before `i`
            // moved past it; 0 to start with).
            let candidate = table[h] as usize;
            table[h] = i as u32;
            if i - candidate > MAX_OFFSET || word(candidate) != seq {
                i += misses >> SKIP;
                misses += 1;
                continue;
            }
            misses = 1 << SKIP;
            // Extended backwards over the pending literals, then forwards.
            let (mut at, mut from) = (i, candidate);
            while at > anchor && from > 0 && input[at - 1] == input[from - 1] {
                at -= 1;
                from -= 1;
            }
            let length =
                i - at + MIN_MATCH + same_bytes(input, i + MIN_MATCH, candidate + MIN_MATCH, end);
            sequence(out, &input[anchor..at], at - from, length);
            if out.len() - start > limit {
                return false;
            }
            i = at + length;
            anchor = i;
            // The position just before the next search, as LZ4 does: the next
            // repeat often starts there.
            if i < match_limit {
                table[hash(word(i - 2))] = (i - 2) as u32;
            }
        }
    }
    let literals = &input[anchor..];
    out.push((literals.len().min(15) as u8) << 4);
    if literals.len() >= 15 {
        length_bytes(out, literals.len() - 15);
    }
    out.extend_from_slice(literals);
    out.len() - start <= limit
}

/// The eight bytes at `at`, little-endian.
#[inline(always)]
fn read_u64(input: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&input[at..at + 8]);
    u64::from_le_bytes(word)
}

/// How many bytes from `a` on equal those from `b` on (`b < a`), counting
/// only bytes before `end`.
#[inline(always)]
fn same_bytes(input: &[u8], a: usize, b: usize, end: usize) -> usize {
    debug_assert!(b < a && end <= input.len());
    #[cfg(target_arch = "x86_64")]
    let mut n = same_wide(input, a, b, end);
    #[cfg(not(target_arch = "x86_64"))]
    let mut n = 0;
    while a + n + 8 <= end {
        let diff = read_u64(input, a + n) ^ read_u64(input, b + n);
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while a + n < end && input[a + n] == input[b + n] {
        n += 1;
    }
    n
}

/// The equal 64-byte pieces from `a` and `b` on (`b < a`) before `end`, in
/// bytes: what [`same_bytes`] then goes on from. In AVX2 registers where the
/// processor has them, SSE2 ones otherwise.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn same_wide(input: &[u8], a: usize, b: usize, end: usize) -> usize {
    assert!(b < a && end <= input.len());
    if a + 64 > end {
        return 0;
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just above), the one
        // requirement of a `target_feature` function beyond its own.
        #[allow(unsafe_code)]
        unsafe {
            same_wide_avx2(input, a, b, end)
        }
    } else {
        same_wide_sse2(input, a, b, end)
    }
}

/// [`same_wide`] in AVX2 registers (`b < a`, `end <= input.len()`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn same_wide_avx2(input: &[u8], a: usize, b: usize, end: usize) -> usize {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
    };
    assert!(b < a && end <= input.len());
    let mut n = 0;
    let p = input.as_ptr();
    // SAFETY: AVX2 is enabled for this function (its caller checked the
    // processor). Each step loads 64 bytes from `a + n` and from `b + n` with
    // `a + n + 64 <= end <= input.len()` and `b < a`: both inside `input`.
    #[allow(unsafe_code)]
    unsafe {
        let equal = |x: usize, y: usize| {
            _mm256_cmpeq_epi8(
                _mm256_loadu_si256(p.add(x).cast::<__m256i>()),
                _mm256_loadu_si256(p.add(y).cast::<__m256i>()),
            )
        };
        while a + n + 64 <= end {
            let (x, y) = (a + n, b + n);
            let both = _mm256_and_si256(equal(x, y), equal(x + 32, y + 32));
            if _mm256_movemask_epi8(both) != -1 {
                break;
            }
            n += 64;
        }
    }
    n
}

/// [`same_wide`] in SSE2 registers, the x86_64 baseline (`b < a`, `end <=
/// input.len()`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn same_wide_sse2(input: &[u8], a: usize, b: usize, end: usize) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8,
    };
    assert!(b < a && end <= input.len());
    let mut n = 0;
    let p = input.as_ptr();
    // SAFETY: SSE2 is part of the x86_64 baseline. Each step loads 64 bytes
    // from `a + n` and from `b + n` with `a + n + 64 <= end <= input.len()`
    // and `b < a`: both ranges are inside `input`.
    #[allow(unsafe_code)]
    unsafe {
        let equal = |x: usize, y: usize| {
            _mm_cmpeq_epi8(
                _mm_loadu_si128(p.add(x).cast::<__m128i>()),
                _mm_loadu_si128(p.add(y).cast::<__m128i>()),
            )
        };
        while a + n + 64 <= end {
            let (x, y) = (a + n, b + n);
            let low = _mm_and_si128(equal(x, y), equal(x + 16, y + 16));
            let high = _mm_and_si128(equal(x + 32, y + 32), equal(x + 48, y + 48));
            if _mm_movemask_epi8(_mm_and_si128(low, high)) != 0xffff {
                break;
            }
            n += 64;
        }
    }
    n
}

/// A length's continuation bytes: 255s, then the rest (below 255).
fn length_bytes(out: &mut Vec<u8>, mut n: usize) {
    while n >= 255 {
        out.push(255);
        n -= 255;
    }
    out.push(n as u8);
}

/// One sequence: `literals`, then a match of `length` bytes `offset` back.
fn sequence(out: &mut Vec<u8>, literals: &[u8], offset: usize, length: usize) {
    let extra = length - MIN_MATCH;
    out.push(((literals.len().min(15) as u8) << 4) | extra.min(15) as u8);
    if literals.len() >= 15 {
        length_bytes(out, literals.len() - 15);
    }
    out.extend_from_slice(literals);
    out.extend_from_slice(&(offset as u16).to_le_bytes());
    if extra >= 15 {
        length_bytes(out, extra - 15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `input` compressed here and read back by `lz4_flex`.
    fn round_trip(input: &[u8]) -> usize {
        let mut out = vec![7u8; 3];
        assert!(compress(input, &mut out, usize::MAX));
        assert_eq!(&out[..3], &[7, 7, 7], "what was in `out` stays");
        let back = lz4_flex::block::decompress(&out[3..], input.len()).unwrap();
        assert_eq!(back, input);
        out.len() - 3
    }

    #[test]
    fn blocks_of_every_kind_read_back() {
        let mut rng = fastrand::Rng::with_seed(11);
        for len in [
            0, 1, 4, 5, 12, 13, 14, 17, 63, 64, 65, 100, 1000, 65_536, 70_000, 300_000,
        ] {
            let noise: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            round_trip(&noise);
            let periodic: Vec<u8> = (0..len).map(|k| (k % 7) as u8).collect();
            round_trip(&periodic);
            let same = vec![b'a'; len];
            round_trip(&same);
            // Repeats farther back than a match may look, and runs of noise.
            let mixed: Vec<u8> = (0..len)
                .map(|k| {
                    if k % 100_000 < 50_000 {
                        (k % 13) as u8
                    } else {
                        rng.u8(..)
                    }
                })
                .collect();
            round_trip(&mixed);
        }
    }

    #[test]
    fn long_repeats_compress_far() {
        let id = "0f6e1c2a-8d3b-4e5f-9a7b-1c2d3e4f5a6b".repeat(100);
        let text = format!("result for query: {id}").repeat(10).repeat(20);
        let n = round_trip(text.as_bytes());
        assert!(n * 100 < text.len(), "{n} of {} bytes", text.len());
    }

    #[test]
    fn a_block_over_the_limit_is_refused() {
        let mut rng = fastrand::Rng::with_seed(3);
        let noise: Vec<u8> = (0..10_000).map(|_| rng.u8(..)).collect();
        let mut out = Vec::new();
        assert!(!compress(&noise, &mut out, noise.len() - noise.len() / 8));
        let text = "abc".repeat(5000);
        out.clear();
        assert!(compress(text.as_bytes(), &mut out, 200));
        assert!(out.len() <= 200);
    }

    /// Both vector versions of the match extension (the AVX2 one where the
    /// processor has it) find the same whole pieces as a byte-by-byte count.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_extensions_count_the_same() {
        let text: Vec<u8> = b"0123456789abcdef".repeat(64);
        for differ in [16, 17, 47, 48, 79, 80, 81, 143, 144, 500, 1000] {
            let mut input = text.clone();
            input[differ] = b'x';
            let (a, b) = (16, 0);
            let end = input.len();
            let exact = (a..end).take_while(|&k| input[k] == input[k - 16]).count();
            let whole = exact / 64 * 64;
            assert_eq!(
                same_wide_sse2(&input, a, b, end),
                whole,
                "differ at {differ}"
            );
            assert_eq!(same_bytes(&input, a, b, end), exact);
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the processor has AVX2 (checked above).
                #[allow(unsafe_code)]
                let avx2 = unsafe { same_wide_avx2(&input, a, b, end) };
                assert_eq!(avx2, whole);
            }
        }
    }

    proptest! {
        #[test]
        fn any_bytes_read_back(
            pieces in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..40), 0usize..300), 0..40)
        ) {
            // Pieces repeated at random: matches of every length and offset.
            let mut input = Vec::new();
            for (piece, times) in &pieces {
                for _ in 0..*times % 7 {
                    input.extend_from_slice(piece);
                }
                input.extend(piece.iter().take(*times % 5));
            }
            round_trip(&input);
        }
    }
}
