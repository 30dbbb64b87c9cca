//! `#[tool(crate = ..)]`: a bad value and a second `crate` are reported.

use stategraph::agents::tool;

/// Searches.
#[tool(crate = "stategraph::agents<T>")]
fn search(query: String) -> String {
    query
}

/// Fetches.
#[tool(crate = stategraph, name = "fetch", crate = stategraph)]
fn fetch(url: String) -> String {
    url
}

fn main() {}
