//! Quickstart: a small agent loop with typed routing.
//!
//! A scripted stand-in for a chat model decides, turn by turn, whether to call a
//! tool or to answer. The model node returns `Command<Route>`: the compiler knows
//! every place it can go (`tools` or END), `compile()` checks those nodes exist,
//! and the tool node's errors travel through `?` like any Rust error.
//!
//! The conversation is checkpointed in `quickstart.db` (SQLite): run the example
//! twice and the second run continues the same thread, with the first run's
//! messages still there.
//!
//! Run it with `cargo run --example quickstart`.

use futures::StreamExt;
use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph::sqlite::SqliteSaver;

/// One entry of the conversation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
enum Message {
    Human(String),
    ToolCall { tool: String, input: String },
    ToolResult(String),
    Ai(String),
}

fn append(mut history: Vec<Message>, new: Vec<Message>) -> Vec<Message> {
    history.extend(new);
    history
}

/// The graph state: every field is a channel.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Agent {
    /// Appended to by every node (a reducer, so parallel writes combine).
    #[reducer(append)]
    messages: Vec<Message>,
    /// Summed across updates.
    #[reducer(std::ops::Add::add)]
    model_calls: u32,
}

/// Where the model node may go next.
#[derive(Goto, Clone, Copy, Debug)]
enum Route {
    /// The `tools` node.
    Tools,
    /// The end of the run.
    #[goto(end)]
    Done,
}

/// The stand-in model: asks the calculator for each question, then answers.
#[node]
async fn model(state: &Agent) -> Command<Route> {
    let reply = match state.messages.last() {
        Some(Message::Human(question)) => {
            let input = question
                .trim_end_matches('?')
                .rsplit(' ')
                .next()
                .unwrap_or("");
            return Command::goto(Route::Tools).update(
                Agent::update()
                    .messages(vec![Message::ToolCall {
                        tool: "calculator".into(),
                        input: input.into(),
                    }])
                    .model_calls(1),
            );
        }
        Some(Message::ToolResult(result)) => format!("The answer is {result}."),
        _ => "I have nothing to say.".to_owned(),
    };
    Command::goto(Route::Done).update(
        Agent::update()
            .messages(vec![Message::Ai(reply)])
            .model_calls(1),
    )
}

#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error("unknown tool `{0}`")]
    Unknown(String),
    #[error("cannot compute `{0}`: expected `a*b` or `a+b`")]
    BadInput(String),
}

fn calculator(input: &str) -> Result<i64, ToolError> {
    let bad = || ToolError::BadInput(input.to_owned());
    let (a, op, b) = input
        .find(['*', '+'])
        .map(|i| (&input[..i], &input[i..=i], &input[i + 1..]))
        .ok_or_else(bad)?;
    let (a, b): (i64, i64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    Ok(if op == "*" { a * b } else { a + b })
}

/// Runs the tool the model asked for.
#[node]
async fn tools(state: &Agent) -> Result<AgentUpdate, ToolError> {
    let Some(Message::ToolCall { tool, input }) = state.messages.last() else {
        return Ok(Agent::update());
    };
    if tool != "calculator" {
        return Err(ToolError::Unknown(tool.clone()));
    }
    let result = calculator(input)?;
    Ok(Agent::update().messages(vec![Message::ToolResult(result.to_string())]))
}

#[tokio::main]
async fn main() -> Result<(), GraphError> {
    let saver = SqliteSaver::open("quickstart.db").await?;
    let app = StateGraph::<Agent>::new()
        .add_node(model)
        .add_node(tools)
        .add_edge(START, model)
        .add_edge(tools, model)
        .compile_with(saver)?;
    let thread = RunConfig::thread("quickstart");

    let question = "What is 6*7?";
    println!("  user: {question}");
    let input = Agent::update().messages(vec![Message::Human(question.into())]);

    // Watch the run node by node.
    let mut updates = app.stream(input, &thread, StreamMode::Updates);
    while let Some(event) = updates.next().await {
        if let StreamEvent::Updates { node, updates } = event? {
            for update in updates {
                println!("{node:>6}: {update:?}");
            }
        }
    }

    // The thread is stored: its state, and every checkpoint so far.
    let state = app.get_state(&thread).await?;
    let history = app
        .get_state_history(&thread, &ListOptions::default())
        .await?;
    println!(
        "\nthread `quickstart`: {} messages, {} model calls, {} checkpoints in quickstart.db",
        state.values.messages.len(),
        state.values.model_calls,
        history.len()
    );
    println!("final answer: {:?}", state.values.messages.last());
    Ok(())
}
