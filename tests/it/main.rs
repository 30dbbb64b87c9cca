//! The facade's integration tests, one module per topic, in one test binary.
//!
//! They are one crate rather than a crate per file (cargo's default for
//! `tests/*.rs`) because each test crate links its own copy of everything it uses:
//! ~30 links were a good part of a warm `cargo test`. Run one topic with
//! `cargo test -p stategraph --test it routers::`, one test with its full path.
//!
//! A new topic is a file here plus a `mod` line below (the `every_file_is_a_module`
//! test fails when one is missing: without its `mod` line a file is never compiled).
//! `tests/ui.rs`, the trybuild cases, stays a binary of its own.

mod agents;
mod batch;
mod cache;
mod command;
mod components;
mod concurrency;
mod context;
mod crash;
mod draw;
mod edges;
mod errors;
mod functional;
mod functional_interrupts;
mod functional_options;
mod functional_stream;
mod fuzz_decoding;
mod generic_nodes;
mod generic_state;
mod graph_macro;
mod hooked_saver;
mod interrupts;
mod no_copy;
mod overwrite;
mod panics;
mod persistence;
mod random_graphs;
mod recursion;
mod retry;
mod routers;
mod schemas;
mod send;
mod store;
mod stream_messages;
mod streaming;
mod subgraphs;
mod testing;
mod time_travel;
mod tracing_spans;
mod views;

/// Every `tests/it/*.rs` file is declared above: cargo compiles only the modules
/// `main.rs` names, so a file without its `mod` line would never run.
#[test]
fn every_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    let main = include_str!("main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/it is readable") {
        let path = entry.expect("tests/it is readable").path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs")
            && name != "main"
            && !main.contains(&format!("\nmod {name};\n"))
        {
            missing.push(name.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "tests/it/main.rs lacks `mod` lines for {missing:?}"
    );
}
