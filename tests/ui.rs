//! Compile-time behaviour of the macros: every misuse in `tests/ui/*/fail` must fail
//! with the message in its `.stderr`, and every case in `tests/ui/*/pass` must build
//! against the `stategraph` facade alone. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui` and review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/fail/*.rs");
    t.pass("tests/ui/*/pass/*.rs");
}
