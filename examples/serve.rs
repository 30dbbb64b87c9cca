//! Serves the quickstart agent over LangGraph Server's HTTP API, with the
//! human-in-the-loop example's reviewed post next to it (`human_in_the_loop`:
//! its run pauses at an `interrupt` until a person answers), and the Studio at
//! `/studio`.
//!
//! `cargo run --example serve` listens on 127.0.0.1:2024
//! (or the address given as the first argument) and keeps threads, runs and
//! checkpoints in `serve.db`. Talk to it with the Python SDK:
//!
//! ```text
//! from langgraph_sdk import get_sync_client
//! client = get_sync_client(url="http://127.0.0.1:2024")
//! thread = client.threads.create()
//! client.runs.wait(thread["thread_id"], "agent",
//!                  input={"messages": [{"Human": "What is 6*7?"}]})
//! ```
//!
//! Ctrl-C stops it; a run cut short is resumed by the next start.

use stategraph::prelude::*;
use stategraph::server::Server;

/// One entry of the conversation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

/// The quickstart's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Agent {
    #[reducer(append)]
    messages: Vec<Message>,
    #[reducer(std::ops::Add::add)]
    model_calls: u32,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Route {
    Tools,
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
#[error("cannot compute `{0}`: expected `a*b` or `a+b`")]
struct BadInput(String);

/// Runs the calculator the model asked for.
#[node]
async fn tools(state: &Agent) -> Result<AgentUpdate, BadInput> {
    let Some(Message::ToolCall { input, .. }) = state.messages.last() else {
        return Ok(Agent::update());
    };
    let bad = || BadInput(input.clone());
    let (a, op, b) = input
        .find(['*', '+'])
        .map(|i| (&input[..i], &input[i..=i], &input[i + 1..]))
        .ok_or_else(bad)?;
    let (a, b): (i64, i64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    let result = if op == "*" { a * b } else { a + b };
    Ok(Agent::update().messages(vec![Message::ToolResult(result.to_string())]))
}

/// The human-in-the-loop example's post: written, reviewed by a person
/// (an `interrupt` answered from the Studio or the SDK), then published.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Post {
    topic: String,
    draft: String,
    #[reducer(std::ops::Add::add)]
    revisions: u32,
    note: Option<String>,
    published: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Question {
    draft: String,
    revision: u32,
}

#[derive(Debug, Serialize, Deserialize)]
struct Decision {
    approve: bool,
    note: Option<String>,
}

#[derive(Goto, Clone, Copy, Debug)]
enum AfterReview {
    Publish,
    Write,
}

#[node]
fn write(post: &Post) -> PostUpdate {
    let mut draft = format!(
        "{}: why the compiler should check your agent graph.",
        post.topic
    );
    if let Some(note) = &post.note {
        draft = format!("{draft} (revised: {note})");
    }
    Post::update().draft(draft).revisions(1).note(None)
}

#[node]
fn review(post: &Post, ctx: &Context) -> Result<Command<AfterReview>, NodeError> {
    let decision: Decision = ctx.interrupt(Question {
        draft: post.draft.clone(),
        revision: post.revisions,
    })?;
    Ok(if decision.approve {
        Command::goto(AfterReview::Publish)
    } else {
        Command::goto(AfterReview::Write).update(Post::update().note(decision.note))
    })
}

#[node]
fn publish(post: &Post) -> PostUpdate {
    Post::update().published(Some(format!("[published] {}", post.draft)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2024".into());
    let db = std::env::args().nth(2).unwrap_or_else(|| "serve.db".into());
    let app = StateGraph::<Agent>::new()
        .add_node(model)
        .add_node(tools)
        .add_edge(START, model)
        .add_edge(tools, model)
        .compile()?;
    let hitl = StateGraph::<Post>::new()
        .add_node(write)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, write)
        .add_edge(write, review)
        .add_edge(publish, END)
        .compile()?;
    println!(
        "serving the quickstart agent as `agent` and a reviewed post as \
         `human_in_the_loop` on http://{addr}; the Studio is at http://{addr}/studio (Ctrl-C stops)"
    );
    Server::new()
        .assistant_with_schema("agent", app)
        .assistant_with_schema("human_in_the_loop", hitl)
        .database(db)
        .serve(&addr)
        .await?;
    Ok(())
}
