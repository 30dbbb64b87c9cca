//! `react_agent_100` and `react_agent_100_ckpt`: the prebuilt ReAct agent driven by
//! a scripted model through 100 tool calls, then an answer.

use super::stream_values;
use crate::harness::{expect, Workload};
use stategraph::agents::{
    create_react_agent, new_id, AiMessage, FakeChatModel, Message, MessagesState, Tool, ToolCall,
};
use std::borrow::Cow;

/// The one tool: its name is a UUID, it repeats its query.
struct Search {
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    query: String,
}

impl Tool for Search {
    type Args = Query;
    type Output = String;
    type Error = std::convert::Infallible;

    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed("Searches for the query.")
    }

    async fn call(&self, args: Query) -> Result<String, Self::Error> {
        Ok(format!("result for query: {}", args.query).repeat(10))
    }
}

/// The workload; with `saver`, `react_agent_100_ckpt` (or its variant).
pub fn build(tool_calls: usize, saver: Option<stategraph::checkpoint::InMemorySaver>) -> Workload {
    let checkpointed = saver.is_some();
    let tool_name = new_id();
    let queries: Vec<String> = (0..tool_calls).map(|_| new_id().repeat(100)).collect();
    let mut script: Vec<AiMessage> = queries
        .iter()
        .map(|q| {
            AiMessage::new("")
                .with_id(new_id())
                .with_tool_call(ToolCall::new(
                    new_id(),
                    tool_name.clone(),
                    serde_json::json!({ "query": q }),
                ))
        })
        .collect();
    script.push(AiMessage::new("answer".repeat(100)).with_id(new_id()));
    let model = FakeChatModel::new(script);
    let agent = create_react_agent(model.clone(), Search { name: tool_name });
    let memory = std::sync::Arc::new(saver.unwrap_or_default());
    let graph = if checkpointed {
        agent.compile_with(std::sync::Arc::clone(&memory)
            as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>)
    } else {
        agent.compile()
    }
    .unwrap_or_else(|e| panic!("react_agent graph: {e}"));
    let rt = super::runtime();
    let workload = Workload::new(
        move || {
            rt.block_on(stream_values(
                &graph,
                MessagesState::update().messages(vec![Message::human("hi?")]),
            ))
        },
        move |(state, chunks)| {
            let m = &state.messages;
            expect(m.len() == 2 * tool_calls + 2, || {
                format!("len(messages)={}", m.len())
            })?;
            expect(
                matches!(&m[0], Message::Human(h) if h.content == "hi?"),
                || format!("messages[0] = {:?}", m[0]),
            )?;
            for (k, query) in queries.iter().enumerate() {
                let ai = m[1 + 2 * k].as_ai().filter(|ai| ai.tool_calls.len() == 1);
                let Some(ai) = ai else {
                    return Err(format!(
                        "messages[{}] is not an AI message with one call",
                        1 + 2 * k
                    ));
                };
                let expected = format!("result for query: {query}").repeat(10);
                let ok = m[2 + 2 * k].as_tool().is_some_and(|t| {
                    t.tool_call_id == ai.tool_calls[0].id && t.content == expected
                });
                expect(ok, || {
                    format!("messages[{}] does not answer its call", 2 + 2 * k)
                })?;
            }
            let last_ok = m
                .last()
                .and_then(Message::as_ai)
                .is_some_and(|ai| ai.tool_calls.is_empty() && ai.content == "answer".repeat(100));
            expect(last_ok, || "the last message is not the answer".to_owned())?;
            expect(chunks == 2 * tool_calls + 2, || {
                format!("{chunks} values chunks")
            })?;
            expect(model.cursor() == 0, || {
                format!("model cursor at {}", model.cursor())
            })
        },
    );
    if checkpointed {
        workload.with_stored(crate::harness::memory_stored(memory))
    } else {
        workload
    }
}
