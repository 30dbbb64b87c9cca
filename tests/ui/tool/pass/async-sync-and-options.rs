//! `#[tool]` expansions resolve with the `stategraph` facade as the only dependency.

use stategraph::agents::{create_react_agent, tool, FakeChatModel, Toolbox};

/// Looks a word up.
#[tool]
async fn define(
    /// The word.
    word: String,
    lang: Option<String>,
) -> Result<String, std::io::Error> {
    Ok(format!("{word} ({})", lang.unwrap_or_default()))
}

#[tool(name = "add-numbers", description = "Adds numbers.")]
fn add(mut numbers: Vec<f64>) -> f64 {
    numbers.push(0.0);
    numbers.iter().sum()
}

/// Nothing to ask.
#[tool]
pub fn now() -> u64 {
    0
}

pub fn main() {
    let tools = Toolbox::new((define, add, now));
    assert_eq!(tools.specs().len(), 3);
    assert!(tools.get("add-numbers").is_some());
    let _agent = create_react_agent(FakeChatModel::new(vec![]), (define, add, now)).compile();
    // A local binding may shadow the tool's name.
    let now = 5;
    let _ = now;
}
