//! graph-core's modules depend one way: the order written at the top of
//! `src/lib.rs` lists them lowest first, and a module may use only the modules
//! listed before it (or beside it, on the same line). This test reads that list and
//! every source file, and fails on each use of a module that comes later.
//!
//! What counts as a use: a `crate::module` path anywhere outside comments, and a
//! `crate::Item` path to an item the crate root re-exports from a module. Paths
//! inside `$crate::` (macro expansions in the user's crate) do not count.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layers of the order in `lib.rs`, lowest first: the lines between the
/// markers, each a list of module names.
fn declared_order(lib: &str) -> Vec<Vec<String>> {
    let start = "// Module order, lowest first.";
    let end = "// End of module order.";
    let begin = lib
        .find(start)
        .unwrap_or_else(|| panic!("src/lib.rs has no `{start}` block"));
    let rest = &lib[begin + start.len()..];
    let stop = rest
        .find(end)
        .unwrap_or_else(|| panic!("src/lib.rs's module order has no `{end}` line"));
    rest[..stop]
        .lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix("//")?.trim();
            // Layer lines look like `- a, b: what they hold`.
            let names = line.strip_prefix("- ")?.split(':').next()?;
            Some(
                names
                    .split(',')
                    .map(|n| n.trim().trim_matches('`').to_string())
                    .filter(|n| !n.is_empty())
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|layer| !layer.is_empty())
        .collect()
}

/// The source without comments (line comments, doc comments, block comments) and
/// without the contents of string literals, so that neither counts as a use.
fn code_only(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            // Keep the line count, for line numbers in the report.
            out.extend(rest[..end].chars().filter(|&c| c == '\n'));
            i += end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|&c| c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            let end = rest[body..]
                .find(&close)
                .map_or(rest.len(), |e| body + e + close.len());
            out.extend(rest[..end].chars().filter(|&c| c == '\n'));
            i += end;
        } else if rest.starts_with('"') {
            let mut j = 1;
            let rb = rest.as_bytes();
            while j < rb.len() && rb[j] != b'"' {
                j += if rb[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            out.extend(rest[..end].chars().filter(|&c| c == '\n'));
            i += end;
        } else if rest.starts_with("'\"'") {
            i += 3;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `pub use module::{A, B}` at the crate root: which module each re-exported
/// name comes from.
fn root_reexports(lib_code: &str) -> HashMap<String, String> {
    let mut map = HashMap::new();
    for stmt in lib_code.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.split(" as ").last().unwrap_or(item).trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

/// Every path to the crate root in a file `depth` modules deep (`a.rs` and
/// `a/mod.rs` are 1, `a/b.rs` is 2), with the name it reaches.
fn crate_paths(code: &str, depth: usize) -> Vec<(usize, String)> {
    let mut found = root_paths(code, "crate::");
    found.extend(root_paths(code, &"super::".repeat(depth)));
    found.sort_by_key(|&(line, _)| line);
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`pregel/mod.rs` → `pregel`), or
/// `None` for the crate root.
fn module_of(src_dir: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src_dir).expect("a file under src/");
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs");
    match name {
        "lib" => None,
        // `#[path = "private.rs"] pub mod __private;`
        "private" => Some("__private".to_string()),
        _ => Some(name.to_string()),
    }
}

/// Every `<root>name` in `code` with its line, and every name of a
/// `<root>{a, b::c}` group, where `root` is a path to the crate root
/// (`crate::`, or `super::` in a file of a top-level module).
fn root_paths(code: &str, root: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find(root) {
        let start = from + at;
        from = start + root.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c == '$' || c == '_' || c.is_alphanumeric())
            || code[..start].ends_with("::")
        {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let rest = &code[from..];
        if rest.starts_with("super::") {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let close = group.find('}').unwrap_or(group.len());
            for part in group[..close].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push((line, name));
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((line, name));
            }
        }
    }
    found
}

#[test]
fn modules_use_only_the_modules_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src_dir = root.join("src");
    let lib = fs::read_to_string(src_dir.join("lib.rs")).expect("src/lib.rs");
    let order = declared_order(&lib);
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .flat_map(|(i, layer)| layer.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let lib_code = code_only(&lib);
    let reexports = root_reexports(&lib_code);

    let mut files = Vec::new();
    rust_files(&src_dir, &mut files);
    let mut problems = Vec::new();
    let mut seen_modules = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src_dir, file) else {
            continue;
        };
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let Some(&own) = rank.get(module.as_str()) else {
            problems.push(format!(
                "{rel}: module `{module}` is not in lib.rs's module order; add it where it belongs"
            ));
            continue;
        };
        seen_modules.push(module.clone());
        let rel_src = file.strip_prefix(&src_dir).unwrap_or(file);
        let depth = rel_src.components().count()
            - usize::from(rel_src.file_name().is_some_and(|n| n == "mod.rs"));
        let code = code_only(&fs::read_to_string(file).expect("a source file"));
        for (line, name) in crate_paths(&code, depth) {
            // `crate::Item` re-exported at the root stands for its module;
            // items defined in lib.rs itself (START, END) are everyone's.
            let used = match rank.get(name.as_str()) {
                Some(_) => name.clone(),
                None => match reexports.get(&name) {
                    Some(m) => m.clone(),
                    None => continue,
                },
            };
            if used == module {
                continue;
            }
            let Some(&theirs) = rank.get(used.as_str()) else {
                continue;
            };
            if theirs > own {
                problems.push(format!(
                    "{rel}:{line}: `{module}` uses `crate::{name}` (module `{used}`), which comes \
                     after it in lib.rs's module order"
                ));
            }
        }
    }
    for layer in &order {
        for m in layer {
            if !seen_modules.contains(m) {
                problems.push(format!(
                    "lib.rs's module order names `{m}`, which has no file under src/"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "graph-core's modules must depend one way (see the order at the top of src/lib.rs):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_uses_and_ignores_comments_and_strings() {
    let code = code_only(
        "use crate::a::B; // crate::c\n/* crate::d */ let s = \"crate::e\";\n\
         let r = r#\"crate::f\"#; crate::{g, h::I}; $crate::j; my_crate::k; crate::L\n",
    );
    let names: Vec<_> = crate_paths(&code, 1).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["a", "g", "h", "L"]);
    let nested = code_only("use super::super::pregel::X; use super::sibling; use super::*;\n");
    let names: Vec<_> = crate_paths(&nested, 2)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(names, ["pregel"]);
    let top = code_only("use super::pregel::X; use super::super::y;\n");
    let names: Vec<_> = crate_paths(&top, 1).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["pregel"]);
    let layers = declared_order(
        "// Module order, lowest first.\n//\n// - `a`, `b`: one\n// - c\n// End of module order.\n",
    );
    assert_eq!(layers, [vec!["a", "b"], vec!["c"]]);
}
