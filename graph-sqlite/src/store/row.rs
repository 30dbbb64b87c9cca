//! How a store row's parts are stored: timestamps as text, vectors as
//! sqlite-vec's `float32` blobs, and the cosine distance sqlite-vec computes
//! on them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

/// `created_at`/`updated_at` text: UTC without an offset, as SQLite's
/// `CURRENT_TIMESTAMP` (which LangGraph writes) but with microseconds, so that
/// items updated within one second still sort by time. Text order is time
/// order for both forms.
pub(super) fn timestamp(at: SystemTime) -> String {
    format(at, "")
}

/// `expires_at` text, as Python's `sqlite3` writes the UTC datetime LangGraph
/// passes: `2026-12-02 14:40:00.123456+00:00`. LangGraph's sweep compares it
/// with `CURRENT_TIMESTAMP` as text, which works because the date and time come
/// first in the same layout.
pub(super) fn expiry(at: SystemTime) -> String {
    format(at, "+00:00")
}

fn format(at: SystemTime, suffix: &str) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let t = OffsetDateTime::from_unix_timestamp(since.as_secs() as i64)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    // Written digit by digit: `format!` with padding costs ten times more,
    // once or twice a put.
    let mut out = String::with_capacity(26 + suffix.len());
    let fields = [
        (t.year().unsigned_abs(), 4, '-'),
        (u32::from(u8::from(t.month())), 2, '-'),
        (u32::from(t.day()), 2, ' '),
        (u32::from(t.hour()), 2, ':'),
        (u32::from(t.minute()), 2, ':'),
        (u32::from(t.second()), 2, '.'),
    ];
    for (n, width, separator) in fields {
        push_padded(&mut out, n, width);
        out.push(separator);
    }
    push_padded(&mut out, since.subsec_micros(), 6);
    out.push_str(suffix);
    out
}

/// `n` in decimal, with leading zeros up to `width` digits (as `{n:0width$}`).
fn push_padded(out: &mut String, n: u32, width: usize) {
    let mut digits = [b'0'; 10];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for _ in digits.len() - start..width {
        out.push('0');
    }
    out.extend(digits[start..].iter().map(|&d| char::from(d)));
}

/// Parses the timestamps LangGraph and this crate write: `YYYY-MM-DD
/// HH:MM:SS`, optionally with a fraction of a second and a `+HH:MM` (or `Z`)
/// offset, `T` accepted for the space. `None` when the text is none of these.
pub(super) fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        text.get(range)?.bytes().try_fold(0u32, |n, d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let date = Date::from_calendar_date(
        num(0..4)? as i32,
        Month::try_from(num(5..7)? as u8).ok()?,
        num(8..10)? as u8,
    )
    .ok()?;
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let time = Time::from_hms(num(11..13)? as u8, num(14..16)? as u8, num(17..19)? as u8).ok()?;
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, d) in fraction.bytes().take(digits.min(9)).enumerate() {
            nanos += u32::from(d - b'0') * 10u32.pow(8 - i as u32);
        }
        rest = &fraction[digits..];
    }
    let offset_secs: i64 = match rest {
        "" | "Z" => 0,
        _ => {
            let (sign, hm) = match rest.as_bytes().first()? {
                b'+' => (1, &rest[1..]),
                b'-' => (-1, &rest[1..]),
                _ => return None,
            };
            let (h, m) = hm.split_once(':')?;
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            sign * (h * 3600 + m * 60)
        }
    };
    let secs = PrimitiveDateTime::new(date, time)
        .assume_utc()
        .unix_timestamp()
        - offset_secs;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

/// A vector as sqlite-vec's `float32` blob (what LangGraph stores): the
/// little-endian bytes of each component.
pub(super) fn vector_blob(vector: &[f32]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(vector.len() * 4);
    for x in vector {
        blob.extend_from_slice(&x.to_le_bytes());
    }
    blob
}

/// The cosine similarity of `query` to a stored blob, exactly as LangGraph's
/// SQLite store scores it (`1.0 - vec_distance_cosine(embedding, query)`):
/// `f32` sums in order, the distance rounded to `f32`. `None` when the blob is
/// not `query.len()` floats.
pub(super) fn blob_similarity(blob: &[u8], query: &[f32]) -> Option<f64> {
    if blob.len() != query.len() * 4 {
        return None;
    }
    let (mut dot, mut a_mag, mut b_mag) = (0f32, 0f32, 0f32);
    for (chunk, b) in blob.chunks_exact(4).zip(query) {
        let a = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        dot += a * b;
        a_mag += a * a;
        b_mag += b * b;
    }
    Some(similarity(dot, a_mag, f64::from(b_mag).sqrt()))
}

/// LangGraph's score from a vector's dot product with the query, the vector's
/// squared magnitude and the query's magnitude (`b_root`): `1.0 -
/// vec_distance_cosine`, the distance rounded to `f32`. Shared by the scan of
/// the blobs and the vector cache, which must agree to the bit.
pub(super) fn similarity(dot: f32, a_mag: f32, b_root: f64) -> f64 {
    let distance = (1.0 - f64::from(dot) / (f64::from(a_mag).sqrt() * b_root)) as f32;
    1.0 - f64::from(distance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_and_sort_as_text() {
        let at = UNIX_EPOCH + Duration::new(1_796_222_400, 123_456_000);
        assert_eq!(timestamp(at), "2026-12-02 14:40:00.123456");
        assert_eq!(expiry(at), "2026-12-02 14:40:00.123456+00:00");
        assert_eq!(parse_timestamp(&timestamp(at)), Some(at));
        assert_eq!(parse_timestamp(&expiry(at)), Some(at));
        // LangGraph's CURRENT_TIMESTAMP form, and an ISO form with an offset.
        assert_eq!(
            parse_timestamp("2026-12-02 14:40:00"),
            Some(UNIX_EPOCH + Duration::from_secs(1_796_222_400))
        );
        assert_eq!(
            parse_timestamp("2026-12-02T16:40:00+02:00"),
            Some(UNIX_EPOCH + Duration::from_secs(1_796_222_400))
        );
        assert!(timestamp(at).as_str() > "2026-12-02 14:40:00");
        // Every field padded: single digits, and no microseconds.
        let early = UNIX_EPOCH + Duration::new(1_767_322_800, 7_000);
        assert_eq!(timestamp(early), "2026-01-02 03:00:00.000007");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01 00:00:00.000000");
        assert_eq!(
            expiry(UNIX_EPOCH + Duration::from_secs(1_767_323_045)),
            "2026-01-02 03:04:05.000000+00:00"
        );
        assert!(parse_timestamp("yesterday").is_none());
        assert!(parse_timestamp("2026-13-02 14:40:00").is_none());
    }

    #[test]
    fn similarity_of_blobs() {
        // Python, sqlite-vec 0.1.9: `1.0 - vec_distance_cosine(a, b)` of
        // [1, 0, 1] with itself is 0.9999999999999998, with [0, 1, 0] 0.0.
        let v = [1.0f32, 0.0, 1.0];
        assert_eq!(
            blob_similarity(&vector_blob(&v), &v),
            Some(0.9999999999999998)
        );
        assert_eq!(
            blob_similarity(&vector_blob(&[0.0, 1.0, 0.0]), &v),
            Some(0.0)
        );
        assert!(blob_similarity(&[0; 8], &v).is_none());
    }
}
