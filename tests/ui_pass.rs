//! The `pass` cases of `tests/ui`: every one must build against the `stategraph`
//! facade and run. They are modules of this one test binary, not trybuild cases:
//! a trybuild run with a pass case in it builds every dependency a second time
//! (its compile_fail run only checks them) and then each case as a crate of its
//! own, one at a time, which was about a minute of a cold `cargo test`. Here they
//! build with the other test binaries, in parallel, against the dependencies
//! already built. Each case's `pub fn main` is its test; `every_pass_case_is_listed`
//! keeps this list and the directory in step.

macro_rules! pass_cases {
    ($($name:ident = $path:literal;)*) => {
        $(
            #[path = $path]
            mod $name;

            #[test]
            fn $name() {
                $name::main();
            }
        )*

        /// The files listed above, relative to `tests/`.
        const LISTED: &[&str] = &[$($path),*];
    };
}

pass_cases! {
    func_task_and_entrypoint = "ui/func/pass/func-task-and-entrypoint.rs";
    goto_renames_and_end = "ui/goto/pass/renames-and-end.rs";
    node_every_signature = "ui/node/pass/every-signature.rs";
    schema_generic_and_crate_option = "ui/schema/pass/generic-and-crate-option.rs";
    state_crate_option = "ui/state/pass/crate-option.rs";
    state_every_channel_kind = "ui/state/pass/every-channel-kind.rs";
    state_field_access = "ui/state/pass/field-access.rs";
    state_field_glob_import = "ui/state/pass/field-glob-import.rs";
    state_generic_reducer_and_channels = "ui/state/pass/generic-reducer-and-channels.rs";
    state_reducer_closure = "ui/state/pass/reducer-closure.rs";
    state_self_in_field_type = "ui/state/pass/self-in-field-type.rs";
    tool_async_sync_and_options = "ui/tool/pass/async-sync-and-options.rs";
}

/// A new file in a `tests/ui/*/pass` directory is a case only once it is listed
/// above: this test names any file that is not.
#[test]
fn every_pass_case_is_listed() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut found = Vec::new();
    for group in std::fs::read_dir(tests.join("ui")).expect("tests/ui is readable") {
        let pass = group.expect("tests/ui entry").path().join("pass");
        let Ok(files) = std::fs::read_dir(&pass) else {
            continue;
        };
        for file in files {
            let path = file.expect("pass entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(&tests).expect("under tests/");
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    let mut listed: Vec<String> = LISTED.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        found, listed,
        "tests/ui_pass.rs must list exactly the files in tests/ui/*/pass"
    );
}
