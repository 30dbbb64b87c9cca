//! Comparing states with a readable diff.

use std::fmt::Debug;

/// Asserts that `actual == expected`; when not, panics with a line diff of their
/// pretty `Debug` forms (`-` expected, `+` actual), so that the field that differs
/// stands out in a large state.
///
/// ```should_panic
/// # use stategraph::testing::assert_state_eq;
/// #[derive(Debug, PartialEq)]
/// struct Doc { title: String, words: u32 }
///
/// assert_state_eq(
///     &Doc { title: "draft".into(), words: 120 },
///     &Doc { title: "draft".into(), words: 100 },
/// );
/// // panics with:
/// // states differ (-expected +actual):
/// //    Doc {
/// //        title: "draft",
/// // -      words: 100,
/// // +      words: 120,
/// //    }
/// ```
#[track_caller]
pub fn assert_state_eq<T: Debug + PartialEq + ?Sized>(actual: &T, expected: &T) {
    if actual != expected {
        panic!(
            "states differ (-expected +actual):\n{}",
            state_diff(actual, expected)
        );
    }
}

/// The line diff [`assert_state_eq`] prints: the pretty `Debug` forms of
/// `expected` and `actual`, lines only in `expected` marked `-`, only in
/// `actual` `+`, the others ` ` (empty when the forms are equal).
pub fn state_diff<T: Debug + ?Sized>(actual: &T, expected: &T) -> String {
    let (expected, actual) = (format!("{expected:#?}"), format!("{actual:#?}"));
    if expected == actual {
        return String::new();
    }
    let diff = similar::TextDiff::from_lines(&expected, &actual);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => ' ',
        };
        out.push(sign);
        out.push_str("  ");
        out.push_str(change.value().trim_end_matches('\n'));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[derive(Debug, PartialEq)]
    struct Doc {
        title: String,
        words: u32,
    }

    #[test]
    fn the_diff_marks_the_field_that_differs() {
        let actual = Doc {
            title: "a".into(),
            words: 2,
        };
        let expected = Doc {
            title: "a".into(),
            words: 1,
        };
        assert_eq!(
            super::state_diff(&actual, &expected),
            "   Doc {\n       title: \"a\",\n-      words: 1,\n+      words: 2,\n   }\n"
        );
        assert_eq!(super::state_diff(&actual, &actual), "");
    }
}
