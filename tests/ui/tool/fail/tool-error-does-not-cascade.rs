use stategraph::agents::{tool, Toolbox};

/// Searches.
#[tool]
fn search(query: &str) -> String {
    query.to_owned()
}

fn main() {
    // Only the reference argument is reported, not "`search` is not a tool" here.
    let _ = Toolbox::new(search);
}
