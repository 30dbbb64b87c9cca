//! A ReAct agent whose tools come from an MCP server: pip's `mcp-server-time`,
//! spawned as a child process and spoken to over stdio. The model is scripted
//! (offline, the same replies every time); the tool calls go to the real server.
//!
//! ```text
//! python3 -m pip install mcp-server-time
//! cargo run --example mcp_agent
//! ```
//!
//! `--server PROGRAM` runs another build of the time server (default
//! `mcp-server-time` on PATH).

use stategraph::agents::mcp::{McpClient, McpServer};
use stategraph::agents::{
    create_react_agent, AiMessage, FakeChatModel, Message, MessagesState, ToolCall,
};
use stategraph::prelude::*;

const QUESTION: &str = "It is noon in London (UTC). What time is it in Tokyo?";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let program = args
        .iter()
        .position(|a| a == "--server")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "mcp-server-time".to_owned());

    let server = McpServer::stdio(program, ["--local-timezone", "UTC"]);
    let tools = match McpClient::new().server("time", server).tools().await {
        Ok(tools) => tools,
        Err(e) => {
            eprintln!("{e}\n(install the server with `python3 -m pip install mcp-server-time`)");
            std::process::exit(1);
        }
    };
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    println!("tools from the MCP server: {}", names.join(", "));

    // What a model would answer, scripted: one call of the server's tool, then
    // the answer.
    let model = FakeChatModel::new(vec![
        AiMessage::new("").with_tool_call(ToolCall::new(
            "call_1",
            "convert_time",
            serde_json::json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        )),
        AiMessage::new("When it is noon in London (UTC), it is 21:00 in Tokyo."),
    ]);
    let agent = create_react_agent(model, tools)
        .system_prompt("You answer questions about time zones with the tools you have.")
        .compile()?;
    let input = MessagesState::update().messages(vec![Message::human(QUESTION)]);
    let out = agent.invoke(input, &RunConfig::new()).await?;
    for m in &out.messages {
        let calls: String = m
            .as_ai()
            .map(|ai| {
                ai.tool_calls
                    .iter()
                    .map(|c| format!(" -> {}({})", c.name, c.args))
                    .collect()
            })
            .unwrap_or_default();
        println!("[{}] {}{calls}", m.kind(), m.text());
    }
    Ok(())
}
