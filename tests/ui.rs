//! Compile-time behaviour of the macros: every misuse in `tests/ui/*/fail` must fail
//! with the message in its `.stderr`, and every case in `tests/ui/*/pass` must build
//! against the `stategraph` facade alone (those are run by `tests/ui_pass.rs`). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui` and review the diff (one case:
//! `TRYBUILD=overwrite cargo test --test ui -- ui trybuild=<file>.rs`).

/// The misuses, one `cargo check` of all of them. The `pass` cases are modules
/// of the `ui_pass` test binary (see there why).
#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*/fail/*.rs");
}

/// The text of the first fenced block of `markdown` that opens with `fence` and
/// comes after `after` (its first line through the line before the closing fence).
fn fenced_block<'a>(markdown: &'a str, after: usize, fence: &str) -> Option<(&'a str, usize)> {
    let open = after + markdown[after..].find(&format!("\n{fence}\n"))? + fence.len() + 2;
    let len = markdown[open..].find("\n```")? + 1;
    Some((&markdown[open..open + len], open + len))
}

/// The README's `compile_fail` example is the case
/// `tests/ui/state/fail/readme-reducer-wrong-shape.rs`, and every line of the
/// message the README quotes after it is in that case's `.stderr`: the README
/// cannot promise a message rustc does not print.
#[test]
fn readme_compile_fail_example_is_pinned() {
    let readme = include_str!("../README.md");
    let case = include_str!("ui/state/fail/readme-reducer-wrong-shape.rs");
    let stderr = include_str!("ui/state/fail/readme-reducer-wrong-shape.stderr");

    let (code, end) = fenced_block(readme, 0, "```rust,compile_fail")
        .unwrap_or_else(|| panic!("README.md has no ```rust,compile_fail block"));
    let code = code.replace("# fn main() {}", "fn main() {}");
    assert!(
        case.ends_with(&code),
        "the README's compile_fail example differs from {}:\n{code}",
        "tests/ui/state/fail/readme-reducer-wrong-shape.rs"
    );

    let (quoted, _) = fenced_block(readme, end, "```text")
        .unwrap_or_else(|| panic!("README.md quotes no message after its compile_fail block"));
    for line in quoted.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            // A quoted source line drops its line number: `  |     #[reducer(..)]`.
            stderr.lines().any(|s| s.ends_with(line.trim_start())),
            "README.md quotes a line rustc does not print: {line:?}"
        );
    }
}
