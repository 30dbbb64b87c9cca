//! The compile errors this crate's users can make, pinned with trybuild: each
//! `tests/ui/*.rs` must fail to compile with the message in its `.stderr`.
//!
//! rustc's wording and layout change between releases, so the `.stderr` files
//! match one toolchain: the one in CI. After a toolchain update, regenerate them
//! with `TRYBUILD=overwrite cargo test -p testing-kit --test compile_fail` and read
//! the diff: a changed layout is fine to accept; a case that now compiles, or
//! fails for another reason, is a regression. The first lines, stategraph's own
//! messages (`#[diagnostic::on_unimplemented]`), are the stable part.

#[test]
fn compile_errors_are_pinned() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
