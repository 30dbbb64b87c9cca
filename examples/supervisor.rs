//! A supervisor with two workers: a research agent that searches (an offline
//! almanac here) and a math agent that adds. The supervisor hands the question to
//! each in turn with its handoff tools (`transfer_to_research_expert`,
//! `transfer_to_math_expert`), gets their answers back, and answers the user, as
//! langgraph-supervisor's `create_supervisor` does.
//!
//! Offline on scripted models (no network, the same output every time):
//!
//! ```text
//! cargo run --example supervisor
//! ```
//!
//! With `--full-history` the workers hand back everything they did (their tool
//! calls too), not only their last message.

use stategraph::agents::multi_agent::{create_supervisor, OutputMode};
use stategraph::agents::{
    create_react_agent, tool, AiMessage, FakeChatModel, Message, MessagesState, ToolCall,
};
use stategraph::prelude::*;

/// Looks up the headcount of a company in an offline almanac.
#[tool]
fn web_search(
    /// The company, e.g. "Apple".
    company: String,
) -> Result<String, String> {
    match company.to_lowercase().as_str() {
        "apple" => Ok("Apple had 164,000 employees in 2024.".into()),
        "netflix" => Ok("Netflix had 14,000 employees in 2024.".into()),
        _ => Err(format!("no headcount known for {company}")),
    }
}

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

fn call(id: &str, name: &str, args: serde_json::Value) -> AiMessage {
    AiMessage::new("").with_tool_call(ToolCall::new(id, name, args))
}

const QUESTION: &str = "What is the combined headcount of Apple and Netflix in 2024?";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let full_history = std::env::args().any(|a| a == "--full-history");

    // The replies a model would give, worker by worker.
    let research = create_react_agent(
        FakeChatModel::new(vec![
            call("r1", "web_search", serde_json::json!({"company": "Apple"})),
            call(
                "r2",
                "web_search",
                serde_json::json!({"company": "Netflix"}),
            ),
            AiMessage::new("Apple: 164,000; Netflix: 14,000 (2024)."),
        ]),
        web_search,
    )
    .name("research_expert")
    .system_prompt("You are a researcher. Use web_search; do no math.");
    let math = create_react_agent(
        FakeChatModel::new(vec![
            call("m1", "add", serde_json::json!({"a": 164000, "b": 14000})),
            AiMessage::new("164,000 + 14,000 = 178,000."),
        ]),
        add,
    )
    .name("math_expert")
    .system_prompt("You are a mathematician. Use add.");
    let supervisor = FakeChatModel::new(vec![
        call("s1", "transfer_to_research_expert", serde_json::json!({})),
        call("s2", "transfer_to_math_expert", serde_json::json!({})),
        AiMessage::new("Apple and Netflix had 178,000 employees combined in 2024."),
    ]);

    let mode = if full_history {
        OutputMode::FullHistory
    } else {
        OutputMode::LastMessage
    };
    let app = create_supervisor(supervisor, [research, math])
        .prompt("You manage a research expert and a math expert. Hand each task to one of them.")
        .output_mode(mode)
        .compile()?;

    let input = MessagesState::update().messages(vec![Message::human(QUESTION)]);
    let out = app.invoke(input, &RunConfig::new()).await?;
    for m in &out.messages {
        let who = match m {
            Message::Ai(ai) => ai.name.clone().unwrap_or_else(|| "ai".into()),
            Message::Tool(t) => format!("tool {}", t.name.as_deref().unwrap_or("?")),
            other => other.kind().to_owned(),
        };
        let calls = m
            .as_ai()
            .map(|ai| {
                ai.tool_calls
                    .iter()
                    .map(|c| format!(" -> {}({})", c.name, c.args))
                    .collect::<String>()
            })
            .unwrap_or_default();
        println!("[{who}] {}{calls}", m.text());
    }
    if let Some(answer) = out.messages.last() {
        println!("{}", answer.text());
    }
    Ok(())
}
