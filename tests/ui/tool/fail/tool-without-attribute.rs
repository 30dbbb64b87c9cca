// A plain fn given as a tool: it needs #[tool].
use stategraph::agents::{tool, Toolbox};

/// Looks a word up.
#[tool]
fn define(word: String) -> String {
    word
}

/// Adds two numbers.
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let _tools = Toolbox::new((define, add));
}
