//! The graphs of the Studio's browser test, on graph-server: the Rust side of
//! graphs.py (`langgraph dev` serves that one), so that
//! `studio_test.py --server URL --studio URL/studio/` runs against our server
//! with every check.
//!
//! - `agent`: the quickstart agent (examples/quickstart.rs), whose model also
//!   streams its answer word by word as message chunks (`messages` mode);
//! - `human_in_the_loop`: examples/human_in_the_loop.rs's write / review
//!   (`interrupt`) / publish;
//! - `slow`: `begin`, then `wait` for a minute, for the Cancel button;
//! - `nested`: `plan`, the subgraph `research` (`search`, `summarize`), `write`.
//!
//! Not built by any package yet: graph-server's Cargo.toml can make it an
//! example with `[[example]] name = "studio_server" path =
//! "tests/studio/studio_server.rs"`, then
//! `cargo run -p stategraph-server --example studio_server -- 127.0.0.1:PORT DB`.
//! It builds against graph-server at its commit bbdf4bb.
use graph_server::Server;
use stategraph::prelude::*;
use std::time::Duration;

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

#[node]
async fn model(state: &Agent, ctx: &Context) -> Command<Route> {
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
    // As a chat model would: the answer in pieces, before the node's update.
    for word in reply.split_inclusive(' ') {
        ctx.write_message_chunk(
            stategraph::json!({"type": "AIMessageChunk", "id": "answer", "content": word}),
        );
    }
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

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Slow {
    started: bool,
    finished: bool,
}

#[node]
fn begin(_: &Slow) -> SlowUpdate {
    Slow::update().started(true)
}

#[node]
async fn wait(_: &Slow) -> SlowUpdate {
    tokio::time::sleep(Duration::from_secs(60)).await;
    Slow::update().finished(true)
}

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct Research {
    topic: String,
    #[reducer(concat)]
    notes: Vec<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:2098".into());
    let db = args.next().unwrap_or_else(|| "studio_server.db".into());
    let agent = StateGraph::<Agent>::new()
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
    let slow = StateGraph::<Slow>::new()
        .add_node(begin)
        .add_node(wait)
        .add_edge(START, begin)
        .add_edge(begin, wait)
        .add_edge(wait, END)
        .compile()?;
    let research = StateGraph::<Research>::new()
        .add_node(node_fn("search", |r: &Research| {
            Research::update().notes(vec![format!("found: {}", r.topic)])
        }))
        .add_node(node_fn("summarize", |_: &Research| {
            Research::update().notes(vec!["summary".into()])
        }))
        .add_edge(START, "search")
        .add_edge("search", "summarize")
        .add_edge("summarize", END)
        .compile()?;
    let nested = StateGraph::<Research>::new()
        .add_node(node_fn("plan", |_: &Research| {
            Research::update().notes(vec!["plan".into()])
        }))
        .add_node(stategraph::Subgraph::new("research", research))
        .add_node(node_fn("write", |_: &Research| {
            Research::update().notes(vec!["written".into()])
        }))
        .add_edge(START, "plan")
        .add_edge("plan", "research")
        .add_edge("research", "write")
        .add_edge("write", END)
        .compile()?;
    Server::new()
        .assistant_with_schema("agent", agent)
        .assistant_with_schema("human_in_the_loop", hitl)
        .assistant_with_schema("slow", slow)
        .assistant_with_schema("nested", nested)
        .database(db)
        .serve(&addr)
        .await?;
    Ok(())
}
