use stategraph::agents::tool;

/// Not a fn.
#[tool]
struct Search {
    query: String,
}

fn main() {}
