//! Ids and time as checkpoints and tasks use them: checkpoint ids (UUIDv6 with
//! the step in the clock sequence), deterministic task ids (xxh3-128 of
//! checkpoint id, namespace, step, node and triggers), timestamps and the digit
//! and hex formatting they share.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// 100-ns intervals between 1582-10-15 and 1970-01-01.
const GREGORIAN_OFFSET: u64 = 0x01B2_1DD2_1381_4000;

static LAST_TIMESTAMP: AtomicU64 = AtomicU64::new(0);

/// A UUIDv6 as LangGraph makes checkpoint ids: time-ordered, strictly increasing
/// within the process, with `step & 0x3FFF` in the clock sequence.
///
/// The layout is `uuid`'s; the time and the counter are ours: LangGraph puts the
/// step where a v6 generator puts its counter, and a checkpoint id must sort
/// after the one before it even when the clock has not moved on.
pub(crate) fn checkpoint_id(step: i64) -> [u8; 16] {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64 / 100)
        .unwrap_or(0)
        + GREGORIAN_OFFSET;
    let mut last = LAST_TIMESTAMP.load(Ordering::Relaxed);
    let ts = loop {
        let ts = if now <= last { last + 1 } else { now };
        match LAST_TIMESTAMP.compare_exchange_weak(last, ts, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break ts,
            Err(actual) => last = actual,
        }
    };
    let clock_seq = (step & 0x3FFF) as u16;
    let random = fastrand::u64(..).to_be_bytes();
    let node = [
        random[2], random[3], random[4], random[5], random[6], random[7],
    ];
    uuid::Builder::from_sorted_gregorian_timestamp(ts, clock_seq, &node)
        .into_uuid()
        .into_bytes()
}

/// Parses a UUID string (hyphenated, as checkpoint ids are stored) into its 16
/// bytes.
pub(crate) fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    uuid::Uuid::try_parse(text).ok().map(uuid::Uuid::into_bytes)
}

/// The current time as ISO-8601 UTC with microseconds (`2024-01-01T00:00:00.000000+00:00`).
pub(crate) fn now_iso8601() -> String {
    timestamp(time::OffsetDateTime::now_utc())
}

/// `at` as ISO-8601 UTC with microseconds, as LangGraph writes a store item's
/// `created_at` (graph-agents' memory tools).
pub fn iso8601(at: SystemTime) -> String {
    timestamp(time::OffsetDateTime::from(at))
}

/// `at` as LangGraph writes a checkpoint's `ts` (`datetime.isoformat()` of a UTC
/// time): `2024-01-01T00:00:00.000000+00:00`. A time before 1970 (a clock set
/// wrong) is written as 1970.
fn timestamp(at: time::OffsetDateTime) -> String {
    let at = at
        .max(time::OffsetDateTime::UNIX_EPOCH)
        .to_offset(time::UtcOffset::UTC);
    // Written into a stack buffer by fixed positions: one allocation, of the
    // exact size, and no formatter (every checkpoint and pending write has a
    // timestamp). The offset is LangGraph's `+00:00`.
    let mut out = *b"1970-01-01T00:00:00.000000+00:00";
    let (year, month, day) = at.to_calendar_date();
    let (hour, minute, second, micro) = at.to_hms_micro();
    // Years from 1970 to 9999 (all `time` has) take exactly four digits.
    put_digits(&mut out[0..4], u64::try_from(year).unwrap_or(0));
    put_digits(&mut out[5..7], u64::from(u8::from(month)));
    put_digits(&mut out[8..10], u64::from(day));
    put_digits(&mut out[11..13], u64::from(hour));
    put_digits(&mut out[14..16], u64::from(minute));
    put_digits(&mut out[17..19], u64::from(second));
    put_digits(&mut out[20..26], u64::from(micro));
    ascii_str(&out).into_owned()
}

/// Writes the last `slot.len()` decimal digits of `n` into `slot`, zero-padded.
/// A short slot (a timestamp's fields) is written a digit a byte, with no call
/// to `memset` or `memcpy`; a long one (a channel version's 32 digits) by
/// `itoa` and one fill.
#[inline]
pub(crate) fn put_digits(slot: &mut [u8], mut n: u64) {
    if slot.len() <= 8 {
        for digit in slot.iter_mut().rev() {
            *digit = b'0' + (n % 10) as u8;
            n /= 10;
        }
        return;
    }
    let mut text = itoa::Buffer::new();
    let digits = text.format(n).as_bytes();
    let digits = &digits[digits.len().saturating_sub(slot.len())..];
    let (padding, tail) = slot.split_at_mut(slot.len() - digits.len());
    padding.fill(b'0');
    tail.copy_from_slice(digits);
}

/// ASCII text assembled on the stack, as `str`. (`from_utf8` has a fast ASCII
/// path that `from_utf8_lossy` lacks; the lossy form only covers a bug.)
pub(crate) fn ascii_str(text: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(text) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(text),
    }
}

/// Formats 16 bytes as a hyphenated UUID string (`8-4-4-4-12` lowercase hex).
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    let mut buffer = uuid::Uuid::encode_buffer();
    let text = uuid::Uuid::from_bytes_ref(bytes)
        .as_hyphenated()
        .encode_lower(&mut buffer);
    String::from(&*text)
}

/// `v` as a hyphenated UUID string (hot path: one call per task).
fn format_hex_uuid(v: u128) -> String {
    format_uuid(&v.to_be_bytes())
}

/// 32 lowercase hex digits (`format!("{v:032x}")`): a UUID's simple form.
pub(crate) fn format_hex(v: u128) -> String {
    let mut buffer = uuid::Uuid::encode_buffer();
    let text = uuid::Uuid::from_u128(v)
        .as_simple()
        .encode_lower(&mut buffer);
    String::from(&*text)
}

/// A task's checkpoint namespace: `node:task_id`, under the graph's own namespace
/// (`graph_ns|node:task_id`) in a subgraph.
pub(crate) fn task_namespace(graph_ns: &str, node: &str, task_id: &str) -> String {
    let mut ns = String::with_capacity(graph_ns.len() + node.len() + task_id.len() + 2);
    if !graph_ns.is_empty() {
        ns.push_str(graph_ns);
        ns.push('|');
    }
    ns.push_str(node);
    ns.push(':');
    ns.push_str(task_id);
    ns
}

/// Builds task ids: the hashed text is assembled on the stack, or in a buffer
/// kept for the rare long one (a node with many triggers, a deep namespace).
#[derive(Default)]
pub(crate) struct TaskIds {
    long: Vec<u8>,
}

/// Hashed text up to this length is assembled on the stack.
const SHORT_ID_TEXT: usize = 256;

impl TaskIds {
    /// The id of a task: xxh3-128 over the checkpoint id, the task's namespace and
    /// the other parts, concatenated, as a UUID string.
    pub(crate) fn id<'p>(
        &mut self,
        checkpoint: &[u8; 16],
        ns: &str,
        parts: impl Iterator<Item = &'p str> + Clone,
    ) -> String {
        let len = checkpoint.len() + ns.len() + parts.clone().map(str::len).sum::<usize>();
        let hash = if len <= SHORT_ID_TEXT {
            let mut text = [0u8; SHORT_ID_TEXT];
            let mut at = 0;
            let mut put = |piece: &[u8]| {
                text[at..at + piece.len()].copy_from_slice(piece);
                at += piece.len();
            };
            put(checkpoint);
            put(ns.as_bytes());
            parts.for_each(|p| put(p.as_bytes()));
            xxhash_rust::xxh3::xxh3_128(&text[..at])
        } else {
            self.long.clear();
            self.long.extend_from_slice(checkpoint);
            self.long.extend_from_slice(ns.as_bytes());
            parts.for_each(|p| self.long.extend_from_slice(p.as_bytes()));
            xxhash_rust::xxh3::xxh3_128(&self.long)
        };
        format_hex_uuid(hash)
    }
}

/// The sort key LangGraph uses to order task writes (`task_path_str(path[:3])`):
/// a task's path ([`crate::TaskPath`]) with the node's rank for its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TaskOrder {
    /// `("__pregel_pull", name)`: ordered by name; always before PUSH.
    Pull(usize),
    /// `("__pregel_push", index, false)`: ordered by index.
    Push(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_sequence_carries_the_step() {
        let id = format_uuid(&checkpoint_id(-1));
        assert_eq!(&id[14..15], "6", "version nibble: {id}");
        assert_eq!(&id[19..23], "bfff", "{id}");
        assert_eq!(&format_uuid(&checkpoint_id(0))[19..23], "8000");
        assert_eq!(&format_uuid(&checkpoint_id(1))[19..23], "8001");
    }

    #[test]
    fn ids_increase_strictly() {
        let ids: Vec<String> = (0..1000).map(|_| format_uuid(&checkpoint_id(3))).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn task_ids_are_deterministic_and_input_sensitive() {
        let cp = checkpoint_id(0);
        let mut ids = TaskIds::default();
        let parts = ["0", "n", "__pregel_pull", "branch:to:n"];
        let a = ids.id(&cp, "n", parts.into_iter());
        let b = ids.id(&cp, "n", parts.into_iter());
        let c = ids.id(
            &cp,
            "n",
            ["1", "n", "__pregel_pull", "branch:to:n"].into_iter(),
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 36);
        // The hash of the concatenated text, whether assembled on the stack or not.
        let concatenated = |parts: &[&str]| {
            let mut text = cp.to_vec();
            text.extend_from_slice(b"n");
            for p in parts {
                text.extend_from_slice(p.as_bytes());
            }
            format_hex_uuid(xxhash_rust::xxh3::xxh3_128(&text))
        };
        assert_eq!(a, concatenated(&parts));
        let long = ["x".repeat(300)];
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(ids.id(&cp, "n", long.iter().copied()), concatenated(&long));
    }

    #[test]
    fn uuids_parse_only_in_full() {
        assert_eq!(parse_uuid("00000000-0000-0000-0000-00000000000"), None);
        assert_eq!(parse_uuid("00000000-0000-0000-0000-0000000000000"), None);
        assert_eq!(parse_uuid("g0000000-0000-0000-0000-000000000000"), None);
        assert_eq!(
            parse_uuid("01234567-89AB-cdef-fedc-ba9876543210"),
            Some(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210_u128.to_be_bytes())
        );
    }

    #[test]
    fn uuids_round_trip_through_text() {
        let id = checkpoint_id(7);
        assert_eq!(parse_uuid(&format_uuid(&id)), Some(id));
        assert_eq!(parse_uuid("not a uuid"), None);
    }

    #[test]
    fn zero_padded_digits_match_format() {
        for (n, width) in [
            (0u64, 1),
            (0, 4),
            (7, 2),
            (12, 2),
            (123, 2),
            (2026, 4),
            (5, 32),
            (0, 32),
            (123_456_789, 9),
            (1_234_567_890, 9),
            (42, 16),
            (u64::MAX, 32),
            (u64::MAX, 3),
        ] {
            // The last `width` digits of the zero-padded form.
            let mut slot = vec![0u8; width];
            put_digits(&mut slot, n);
            let full = format!("{n:0width$}");
            assert_eq!(
                String::from_utf8_lossy(&slot),
                full[full.len() - width..],
                "{n} {width}"
            );
        }
    }

    #[test]
    fn timestamps_are_iso8601_utc() {
        let ts = now_iso8601();
        assert_eq!(ts.len(), "2026-11-30T05:00:00.000000+00:00".len(), "{ts}");
        assert!(ts.ends_with("+00:00") && ts.as_bytes()[10] == b'T', "{ts}");
        assert!(ts.as_str() > "2024-01-01", "{ts}");
    }

    #[test]
    fn timestamps_have_langgraphs_exact_form() {
        let at = |secs: i64, nanos: i128| {
            let at = time::OffsetDateTime::from_unix_timestamp_nanos(
                i128::from(secs) * 1_000_000_000 + nanos,
            );
            timestamp(at.unwrap_or(time::OffsetDateTime::UNIX_EPOCH))
        };
        assert_eq!(
            at(1_714_564_800, 123_456_999),
            "2024-05-01T12:00:00.123456+00:00"
        );
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(at(-1, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(
            at(253_402_300_799, 999_999_999),
            "9999-12-31T23:59:59.999999+00:00"
        );
        let east = time::OffsetDateTime::UNIX_EPOCH
            .to_offset(time::UtcOffset::from_hms(2, 0, 0).unwrap_or(time::UtcOffset::UTC));
        assert_eq!(timestamp(east), "1970-01-01T00:00:00.000000+00:00");
    }

    #[test]
    fn hex_and_namespaces_match_format() {
        for v in [
            0u128,
            1,
            0xabc,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            assert_eq!(format_hex(v), format!("{v:032x}"));
        }
        assert_eq!(task_namespace("", "ask", "t1"), "ask:t1");
        assert_eq!(task_namespace("outer:t0", "ask", "t1"), "outer:t0|ask:t1");
    }

    #[test]
    fn uuid_formatting_matches_the_canonical_form() {
        let v = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210_u128;
        assert_eq!(format_hex_uuid(v), "01234567-89ab-cdef-fedc-ba9876543210");
        assert_eq!(format_hex_uuid(0), "00000000-0000-0000-0000-000000000000");
    }

    #[test]
    fn xxh3_matches_langgraph_hex_form() {
        // xxh3_128_hexdigest(b"") from the Python xxhash package.
        let h = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(b""));
        assert_eq!(h, "99aa06d3014798d86001c324468d497f");
    }
}
