use stategraph::agents::tool;

/// Searches.
#[tool(name = "search", timeout = 5)]
fn search(query: String) -> String {
    query
}

fn main() {}
