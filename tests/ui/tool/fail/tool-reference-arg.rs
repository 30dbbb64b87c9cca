use stategraph::agents::tool;

/// Counts words.
#[tool]
fn count(text: &str, stops: &[String]) -> usize {
    text.split_whitespace().filter(|w| !stops.iter().any(|s| s == w)).count()
}

fn main() {}
