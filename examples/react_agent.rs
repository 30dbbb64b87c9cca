//! A ReAct agent: a chat model that calls typed tools until it can answer, with
//! its tokens streamed as they are generated.
//!
//! By default it runs offline on a scripted model (no network, same output every
//! time). Pointed at an OpenAI-compatible server (OpenAI, vLLM, Ollama,
//! llama.cpp's server), it talks to a real model:
//!
//! ```text
//! cargo run --example react_agent
//! cargo run --features openai --example react_agent -- \
//!     --base-url http://localhost:11434/v1 --model llama3.2 "What is 12 * (3 + 4)?"
//! ```
//!
//! Options: `--base-url URL` and `--model NAME` select the server (feature
//! `openai`); the key is read from `--api-key KEY` or `OPENAI_API_KEY`. The last
//! other argument is the question.

use futures::StreamExt;
use stategraph::agents::{
    create_react_agent, tool, AiMessage, AiMessageChunk, ChatModel, FakeChatModel, ToolCall,
};
use stategraph::prelude::*;
use std::io::Write;
use std::sync::Arc;

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Multiplies two numbers.
#[tool]
fn multiply(a: f64, b: f64) -> f64 {
    a * b
}

/// Looks up a fact about a city in a small offline almanac.
#[tool]
async fn almanac(
    /// The city, e.g. "Paris".
    city: String,
) -> Result<String, String> {
    match city.to_lowercase().as_str() {
        "paris" => Ok("Paris: population 2.1 million, on the Seine.".into()),
        "oslo" => Ok("Oslo: population 0.7 million, on the Oslofjord.".into()),
        _ => Err(format!("the almanac has no entry for {city}")),
    }
}

const QUESTION: &str = "What is 12 * (3 + 4)?";

/// The offline model: the replies a model would give to the default question.
fn scripted_model() -> FakeChatModel {
    let call = |id: &str, name: &str, args: serde_json::Value| ToolCall::new(id, name, args);
    FakeChatModel::new(vec![
        AiMessage::new("First 3 + 4.").with_tool_call(call(
            "call_1",
            "add",
            serde_json::json!({"a": 3, "b": 4}),
        )),
        AiMessage::new("Now 12 * 7.").with_tool_call(call(
            "call_2",
            "multiply",
            serde_json::json!({"a": 12, "b": 7}),
        )),
        AiMessage::new("12 * (3 + 4) = 84."),
    ])
    .chunk_chars(3)
}

struct Options {
    base_url: Option<String>,
    model: Option<String>,
    api_key: Option<String>,
    question: String,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        base_url: None,
        model: None,
        api_key: std::env::var("OPENAI_API_KEY").ok(),
        question: QUESTION.to_owned(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--base-url" => o.base_url = Some(value("--base-url")?),
            "--model" => o.model = Some(value("--model")?),
            "--api-key" => o.api_key = Some(value("--api-key")?),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => o.question = arg,
        }
    }
    Ok(o)
}

#[cfg(feature = "openai")]
fn real_model(base_url: String, model: String, key: Option<String>) -> Arc<dyn ChatModel> {
    let mut client = stategraph::agents::model::openai::OpenAiChat::new(base_url, model);
    if let Some(key) = key {
        client = client.api_key(key);
    }
    Arc::new(client.temperature(0.0))
}

#[cfg(not(feature = "openai"))]
fn real_model(_: String, _: String, _: Option<String>) -> Arc<dyn ChatModel> {
    eprintln!("--base-url needs the HTTP client: run with `--features openai`");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options().map_err(|e| {
        format!("{e}\nusage: react_agent [--base-url URL --model NAME [--api-key KEY]] [QUESTION]")
    })?;
    let model: Arc<dyn ChatModel> = match (o.base_url, o.model) {
        (Some(url), Some(name)) => real_model(url, name, o.api_key),
        (None, None) => Arc::new(scripted_model()),
        _ => return Err("--base-url and --model go together".into()),
    };

    let agent = create_react_agent(model, (add, multiply, almanac))
        .system_prompt("You are a careful assistant. Use the tools for arithmetic and facts.")
        .compile()?;

    println!("> {}", o.question);
    let input = MessagesState::update().messages(vec![Message::human(o.question)]);
    let mut stream = agent.stream(
        input,
        &RunConfig::new(),
        [StreamMode::Messages, StreamMode::Updates],
    );
    let mut out = std::io::stdout();
    while let Some(event) = stream.next().await {
        let event = event?;
        if let Some((chunk, _meta)) = AiMessageChunk::from_event(&event) {
            write!(out, "{}", chunk.content)?;
            out.flush()?;
            continue;
        }
        // After each node: the tool calls the model made, and the tools' answers.
        if let StreamEvent::Updates { node, updates } = event {
            for update in updates {
                let messages = match &update.messages {
                    Some(ReducerWrite::Value(m) | ReducerWrite::Overwrite(m)) => m.as_slice(),
                    None => &[],
                };
                for message in messages {
                    match message {
                        Message::Ai(ai) => {
                            println!();
                            for call in &ai.tool_calls {
                                println!("  [{node}] calls {}({})", call.name, call.args);
                            }
                        }
                        Message::Tool(t) => {
                            println!(
                                "  [{node}] {} -> {}",
                                t.name.as_deref().unwrap_or("?"),
                                t.content
                            )
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(())
}
