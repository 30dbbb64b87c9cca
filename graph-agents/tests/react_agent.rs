//! The ReAct agent end to end on the scripted model: the loop, tool errors, bad
//! tool calls, retries, human approval, and stream mode `messages`.

use futures::StreamExt;
use graph_agents::limit::{LimitExceeded, ToolCallLimit};
use graph_agents::model::FakeChatModel;
use graph_agents::{
    create_react_agent, validate_chat_history, AgentError, AgentVersion, AiMessage, AiMessageChunk,
    InvalidToolCall, Message, MessagesState, StreamedMessage, Tool, ToolApproval,
    ToolApprovalRequest, ToolCall, ToolStatus, NEED_MORE_STEPS,
};
use graph_core::channels::ReducerWrite;
use graph_core::checkpoint::InMemorySaver;
use graph_core::{Command, RetryPolicy, RunConfig, StreamEvent, StreamMode};
use serde_json::json;
use std::borrow::Cow;
use std::time::Duration;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

struct Add;

impl Tool for Add {
    type Args = AddArgs;
    type Output = i64;
    type Error = String;

    fn name(&self) -> Cow<'static, str> {
        "add".into()
    }

    fn description(&self) -> Cow<'static, str> {
        "Adds two integers.".into()
    }

    async fn call(&self, args: AddArgs) -> Result<i64, String> {
        args.a
            .checked_add(args.b)
            .ok_or_else(|| "overflow".to_owned())
    }
}

fn call(id: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, "add", args)
}

fn input(text: &str) -> graph_agents::MessagesStateUpdate {
    MessagesState::update().messages(vec![Message::human(text)])
}

/// Asserts the history a model would accept: every tool call answered, once.
fn assert_valid(messages: &[Message]) {
    validate_chat_history(messages).unwrap();
    let answers = messages.iter().filter_map(Message::as_tool).count();
    let calls: usize = messages
        .iter()
        .filter_map(Message::as_ai)
        .map(|ai| ai.tool_calls.len() + ai.invalid_tool_calls.len())
        .sum();
    assert_eq!(answers, calls, "one answer per call");
}

#[tokio::test]
async fn the_loop_runs_tools_until_the_model_answers() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_id("r1")
            .with_tool_call(call("c1", json!({"a": 1, "b": 2})))
            .with_tool_call(call("c2", json!({"a": 3, "b": 4}))),
        AiMessage::new("3 and 7").with_id("r2"),
    ]);
    let agent = create_react_agent(model.clone(), Add)
        .system_prompt("be exact")
        .compile()
        .unwrap();
    let out = agent
        .invoke(input("sums?"), &RunConfig::new())
        .await
        .unwrap();
    let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["sums?", "", "3", "7", "3 and 7"]);
    let answered: Vec<&str> = out.messages[2..4]
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| t.tool_call_id.as_str())
        .collect();
    assert_eq!(answered, ["c1", "c2"], "Send order, not completion order");
    assert_eq!(model.calls(), 2);
    assert_eq!(
        model.last_history_len(),
        4,
        "the model sees the whole history"
    );
    assert_valid(&out.messages);
}

#[tokio::test]
async fn bad_tool_calls_are_answered_and_the_model_recovers() {
    let model = FakeChatModel::new(vec![
        AiMessage {
            invalid_tool_calls: vec![InvalidToolCall {
                id: Some("bad".into()),
                name: Some("add".into()),
                args: Some("{\"a\": 1,".into()),
                error: Some("EOF while parsing".into()),
            }],
            ..AiMessage::new("")
                .with_tool_call(ToolCall::new("u", "subtract", json!({})))
                .with_tool_call(call("d", json!({"a": "one", "b": 2})))
                .with_tool_call(call("o", json!({"a": i64::MAX, "b": 1})))
        },
        AiMessage::new("I give up"),
    ]);
    let agent = create_react_agent(model, Add).compile().unwrap();
    let out = agent.invoke(input("go"), &RunConfig::new()).await.unwrap();
    assert_valid(&out.messages);
    let answers: Vec<(&str, ToolStatus, &str)> = out
        .messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.tool_call_id.as_str(), t.status, t.content.as_str()))
        .collect();
    assert_eq!(answers.len(), 4);
    assert!(answers.iter().all(|(_, s, _)| *s == ToolStatus::Error));
    assert!(answers[0]
        .2
        .contains("subtract is not a valid tool, try one of [add]"));
    assert!(answers[1].2.contains("invalid arguments"));
    assert!(answers[2].2.contains("overflow"));
    assert_eq!(answers[3].0, "bad");
    assert!(answers[3].2.contains("not valid JSON"));
    assert_eq!(out.messages.last().unwrap().text(), "I give up");
}

#[tokio::test]
async fn retryable_model_errors_are_retried_by_the_agent_node() {
    let model = FakeChatModel::new(vec![AiMessage::new("finally")]).fail_next(2);
    let policy = RetryPolicy::new()
        .initial_interval(Duration::ZERO)
        .jitter(false)
        .retry_on(graph_agents::is_retryable);
    let agent = create_react_agent(model.clone(), Add)
        .retry_policy(Some(policy))
        .compile()
        .unwrap();
    let out = agent.invoke(input("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages.last().unwrap().text(), "finally");
    assert_eq!(model.calls(), 3);

    // The agent node marks the model's 503 transient, so the default rule
    // (no retry_on) retries it too.
    let model = FakeChatModel::new(vec![AiMessage::new("finally")]).fail_next(2);
    let policy = RetryPolicy::new()
        .initial_interval(Duration::ZERO)
        .jitter(false);
    let agent = create_react_agent(model.clone(), Add)
        .retry_policy(Some(policy))
        .compile()
        .unwrap();
    let out = agent.invoke(input("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages.last().unwrap().text(), "finally");
    assert_eq!(model.calls(), 3);

    let model = FakeChatModel::new(vec![AiMessage::new("never")]).fail_next(1);
    let agent = create_react_agent(model, Add)
        .retry_policy(None)
        .compile()
        .unwrap();
    let err = agent
        .invoke(input("hi"), &RunConfig::new())
        .await
        .unwrap_err();
    // The node's error is the source, not part of NodeFailed's message.
    let source = std::error::Error::source(&err).map(ToString::to_string);
    assert!(
        source.as_deref().is_some_and(|s| s.contains("HTTP 503")),
        "{err}: {source:?}"
    );
}

#[tokio::test]
async fn near_the_recursion_limit_the_agent_stops_asking_for_tools() {
    let model = FakeChatModel::new(vec![AiMessage::new("")
        .with_id("r")
        .with_tool_call(call("c", json!({"a": 1, "b": 1})))]);
    let agent = create_react_agent(model, Add).compile().unwrap();
    // Steps: __start__ (0), agent (1); with a limit of 2 the agent has 1 step left.
    let out = agent
        .invoke(input("x"), &RunConfig::new().with_recursion_limit(2))
        .await
        .unwrap();
    let last = out.messages.last().and_then(Message::as_ai).unwrap();
    assert_eq!(last.content, NEED_MORE_STEPS);
    assert!(last.tool_calls.is_empty());
    assert_eq!(last.id.as_deref(), Some("r"));
}

#[tokio::test]
async fn human_approval_pauses_before_each_call_and_rejections_reach_the_model() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("").with_tool_call(call("c1", json!({"a": 1, "b": 1}))),
        AiMessage::new("").with_tool_call(call("c2", json!({"a": 2, "b": 2}))),
        AiMessage::new("").with_tool_call(call("c3", json!({"a": 5, "b": 5}))),
        AiMessage::new("done"),
    ]);
    let agent = create_react_agent(model, Add)
        .require_approval(true)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("approval");

    let paused = agent.invoke(input("go"), &config).await.unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    let asked: ToolApprovalRequest = paused.interrupts[0].value_as().unwrap();
    assert_eq!(asked.tool_call.id, "c1");
    assert!(paused.messages.iter().all(|m| m.as_tool().is_none()));

    let paused = agent
        .invoke(Command::resume(ToolApproval::Approve), &config)
        .await
        .unwrap();
    let asked: ToolApprovalRequest = paused.interrupts[0].value_as().unwrap();
    assert_eq!(asked.tool_call.id, "c2");

    let edit = json!({"action": "edit", "args": {"a": 20, "b": 2}});
    let paused = agent.invoke(Command::resume(edit), &config).await.unwrap();
    let asked: ToolApprovalRequest = paused.interrupts[0].value_as().unwrap();
    assert_eq!(asked.tool_call.id, "c3");

    let reject = ToolApproval::Reject {
        reason: Some("too big".into()),
    };
    let done = agent
        .invoke(Command::resume(reject), &config)
        .await
        .unwrap();
    assert!(done.interrupts.is_empty());
    assert_valid(&done.messages);
    let answers: Vec<(&str, &str)> = done
        .messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.tool_call_id.as_str(), t.content.as_str()))
        .collect();
    assert_eq!(
        answers,
        [
            ("c1", "2"),
            ("c2", "22"),
            ("c3", "The tool call was rejected: too big")
        ]
    );
    assert_eq!(done.messages.last().unwrap().text(), "done");
}

#[tokio::test]
async fn messages_mode_streams_the_model_tokens_and_tool_results_with_node_metadata() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_id("r1")
            .with_tool_call(call("c1", json!({"a": 10, "b": 20}))),
        AiMessage::new("The sum is 30.").with_id("r2"),
    ])
    .chunk_chars(5);
    let agent = create_react_agent(model, Add).compile().unwrap();
    let mut stream = agent.stream(
        input("sum?"),
        &RunConfig::new(),
        [StreamMode::Messages, StreamMode::Values],
    );
    let mut chunks: Vec<(AiMessageChunk, String, i64)> = Vec::new();
    let mut whole: Vec<(Message, String)> = Vec::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        match StreamedMessage::from_event(&event) {
            Some((StreamedMessage::Chunk(c), meta)) => {
                chunks.push((c, meta.node.to_string(), meta.step))
            }
            Some((StreamedMessage::Message(m), meta)) => whole.push((m, meta.node.to_string())),
            Some((other, _)) => {
                panic!("a kind of streamed message this test does not know: {other:?}")
            }
            None => {
                if let StreamEvent::Values(s) = event {
                    last = Some(s);
                }
            }
        }
    }
    assert!(chunks.iter().all(|(_, node, _)| node == "agent"));
    let text: String = chunks
        .iter()
        .filter(|(c, _, _)| c.id.as_deref() == Some("r2"))
        .map(|(c, _, _)| c.content.as_str())
        .collect();
    assert_eq!(text, "The sum is 30.");
    assert!(
        chunks
            .iter()
            .filter(|(c, _, _)| c.id.as_deref() == Some("r2"))
            .count()
            > 1
    );
    let args: String = chunks
        .iter()
        .flat_map(|(c, _, _)| c.tool_call_chunks.iter())
        .map(|t| t.args.as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&args).unwrap(),
        json!({"a": 10, "b": 20})
    );
    let steps: Vec<i64> = chunks.iter().map(|(_, _, s)| *s).collect();
    assert_eq!(steps.first(), Some(&1));
    assert_eq!(
        steps.last(),
        Some(&3),
        "the second model call runs in step 3"
    );

    // The tool's result is streamed whole, with the id it has in the state.
    assert_eq!(whole.len(), 1);
    let (tool_message, node) = &whole[0];
    assert_eq!(node, "tools");
    assert_eq!(tool_message.text(), "30");
    let state = last.unwrap();
    assert_eq!(state.messages[2].id(), tool_message.id());
    assert!(tool_message.id().is_some());
}

#[tokio::test]
async fn streamed_and_invoked_runs_end_in_the_same_history() {
    let script = vec![
        AiMessage::new("")
            .with_id("r1")
            .with_tool_call(call("c1", json!({"a": 1, "b": 2}))),
        AiMessage::new("three").with_id("r2"),
    ];
    let plain = create_react_agent(FakeChatModel::new(script.clone()), Add)
        .compile()
        .unwrap()
        .invoke(input("q"), &RunConfig::new())
        .await
        .unwrap();
    let agent = create_react_agent(FakeChatModel::new(script).chunk_chars(1), Add)
        .compile()
        .unwrap();
    let mut last = None;
    let mut stream = agent.stream(
        input("q"),
        &RunConfig::new(),
        [StreamMode::Messages, StreamMode::Values],
    );
    while let Some(event) = stream.next().await {
        if let StreamEvent::Values(s) = event.unwrap() {
            last = Some(s);
        }
    }
    let streamed = last.unwrap();
    let strip = |ms: &[Message]| -> Vec<serde_json::Value> {
        ms.iter()
            .map(|m| {
                let mut v = serde_json::to_value(m).unwrap();
                if m.as_ai().is_none() {
                    v["id"] = json!(null);
                }
                v
            })
            .collect()
    };
    assert_eq!(strip(&streamed.messages), strip(&plain.messages));
}

#[tokio::test]
async fn tokens_of_an_agent_running_as_a_subgraph_stream_with_its_namespace() {
    let model =
        FakeChatModel::new(vec![AiMessage::new("Hi from inside.").with_id("r1")]).chunk_chars(4);
    let inner = create_react_agent(model, Add).compile().unwrap();
    let outer = graph_core::StateGraph::<MessagesState>::new()
        .add_node(graph_core::Subgraph::new("assistant", inner))
        .add_edge(graph_core::START, "assistant")
        .compile()
        .unwrap();
    let mut stream = outer.stream(
        input("hello"),
        &RunConfig::new(),
        StreamMode::Messages.with_subgraphs(),
    );
    let mut text = String::new();
    let mut namespaces = Vec::new();
    while let Some(event) = stream.next().await {
        let StreamEvent::Subgraph { namespace, event } = event.unwrap() else {
            panic!("the outer graph calls no model itself");
        };
        let inner = event
            .downcast_ref::<MessagesState>()
            .expect("the agent's state");
        let (chunk, meta) = AiMessageChunk::from_event(inner).expect("a messages event");
        assert_eq!(&*meta.node, "agent");
        text.push_str(&chunk.content);
        namespaces.push(namespace.nodes().join("|"));
    }
    assert_eq!(text, "Hi from inside.");
    assert!(
        namespaces.iter().all(|ns| ns == "assistant"),
        "{namespaces:?}"
    );
}

#[tokio::test]
async fn model_hooks_run_around_every_model_call_as_in_langgraph() {
    // LangGraph 1.2.22, create_react_agent(model, [add], pre_model_hook=pre,
    // post_model_hook=post), pre keeping only the last message (RemoveMessage
    // of REMOVE_ALL_MESSAGES, then it), post returning {}:
    //   order: ['pre_model_hook', 'agent', 'post_model_hook', 'tools',
    //           'pre_model_hook', 'agent', 'post_model_hook']
    //   final: [('tool', '3'), ('ai', '3')]
    let model = FakeChatModel::new(vec![
        AiMessage::new("").with_tool_call(call("c1", json!({"a": 1, "b": 2}))),
        AiMessage::new("3"),
    ]);
    let agent = create_react_agent(model.clone(), Add)
        .pre_model_hook(|s: &MessagesState| {
            let last = s.messages.last().cloned().into_iter();
            MessagesState::update()
                .messages(std::iter::once(Message::remove_all()).chain(last).collect())
        })
        .post_model_hook(|_: &MessagesState| MessagesState::update())
        .compile()
        .unwrap();
    let mut order = Vec::new();
    let mut stream = agent.stream(input("1 + 2?"), &RunConfig::new(), StreamMode::Updates);
    while let Some(event) = stream.next().await {
        if let StreamEvent::Updates { node, .. } = event.unwrap() {
            order.push(node.to_string());
        }
    }
    assert_eq!(
        order,
        [
            "pre_model_hook",
            "agent",
            "post_model_hook",
            "tools",
            "pre_model_hook",
            "agent",
            "post_model_hook"
        ]
    );
    let out = agent
        .invoke(input("1 + 2?"), &RunConfig::new())
        .await
        .unwrap();
    let rows: Vec<(&str, &str)> = out.messages.iter().map(|m| (m.kind(), m.text())).collect();
    assert_eq!(rows, [("tool", "3"), ("ai", "3")]);
    assert_eq!(
        model.last_history_len(),
        1,
        "the model saw the trimmed history"
    );
}

#[tokio::test]
async fn interrupt_before_tools_pauses_with_the_calls_and_resumes_them() {
    // LangGraph 1.2.22, create_react_agent(..., interrupt_before=["tools"]):
    //   paused: [('human', '1 + 2?'), ('ai', '')] next: ('tools',)
    //   resumed: [('human', '1 + 2?'), ('ai', ''), ('tool', '3'), ('ai', '3')]
    let model = FakeChatModel::new(vec![
        AiMessage::new("").with_tool_call(call("c1", json!({"a": 1, "b": 2}))),
        AiMessage::new("3"),
    ]);
    let agent = create_react_agent(model, Add)
        .interrupt_before_tools(true)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let out = agent.invoke(input("1 + 2?"), &config).await.unwrap();
    let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["1 + 2?", ""]);
    let snapshot = agent.get_state(&config).await.unwrap();
    assert_eq!(snapshot.next, ["tools"]);
    let out = agent.invoke(None, &config).await.unwrap();
    let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["1 + 2?", "", "3", "3"]);
}

/// Adds, the first call (`a == 1`) finishing last, so completion order and call
/// order differ.
struct SlowFirstAdd;

impl Tool for SlowFirstAdd {
    type Args = AddArgs;
    type Output = i64;
    type Error = String;

    fn name(&self) -> Cow<'static, str> {
        "add".into()
    }

    fn description(&self) -> Cow<'static, str> {
        "Adds two integers.".into()
    }

    async fn call(&self, args: AddArgs) -> Result<i64, String> {
        if args.a == 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(args.a + args.b)
    }
}

/// (node, [(tool_call_id or "", text)]) per `updates` event, and the names of
/// the tasks started, of a run of `agent` on the two-call script.
async fn updates_and_tasks(
    version: AgentVersion,
) -> (
    Vec<(String, Vec<(String, String)>)>,
    Vec<String>,
    Vec<Message>,
) {
    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_id("r1")
            .with_tool_call(call("c1", json!({"a": 1, "b": 2})))
            .with_tool_call(call("c2", json!({"a": 3, "b": 4}))),
        AiMessage::new("3 and 7").with_id("r2"),
    ]);
    let agent = create_react_agent(model, SlowFirstAdd)
        .version(version)
        .compile()
        .unwrap();
    let mut stream = agent.stream(
        input("sums?"),
        &RunConfig::new(),
        [StreamMode::Updates, StreamMode::Tasks, StreamMode::Values],
    );
    let (mut updates, mut tasks, mut last) = (Vec::new(), Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Updates { node, updates: u } => {
                let messages = u.into_iter().flat_map(|u| match u.messages {
                    Some(ReducerWrite::Value(ms) | ReducerWrite::Overwrite(ms)) => ms,
                    None => Vec::new(),
                });
                let messages = messages.map(|m| {
                    let id = m.as_tool().map(|t| t.tool_call_id.clone());
                    (id.unwrap_or_default(), m.text().to_owned())
                });
                updates.push((node.to_string(), messages.collect()));
            }
            StreamEvent::TaskStart { name, .. } => tasks.push(name.to_string()),
            StreamEvent::Values(s) => last = Some(s.messages.clone()),
            _ => {}
        }
    }
    (updates, tasks, last.unwrap())
}

fn owned(rows: &[(&str, &[(&str, &str)])]) -> Vec<(String, Vec<(String, String)>)> {
    rows.iter()
        .map(|(node, ms)| {
            let ms = ms.iter().map(|(i, t)| (i.to_string(), t.to_string()));
            (node.to_string(), ms.collect())
        })
        .collect()
}

// Python, langgraph 1.2.22, the same script and an async tool where c1 sleeps:
//   create_react_agent(model, [add], version="v2").astream(.., stream_mode="updates")
//     agent [AIMessage '']
//     tools [ToolMessage '7' c2]        <- completion order
//     tools [ToolMessage '3' c1]
//     agent [AIMessage '3 and 7']
//   stream_mode="tasks": agent, tools (input tool_call c1), tools (c2), agent
//   final messages: Human 'sums?', AI '', Tool '3' c1, Tool '7' c2, AI '3 and 7'
//   version="v1": agent, tools [Tool '3' c1, Tool '7' c2], agent; tasks agent,
//   tools, agent; the same final messages.
// stategraph reports a step's updates in task order (docs/semantics.md §9.2),
// so c1's update comes first; everything else is the same.
#[tokio::test]
async fn v2_runs_each_call_as_a_task_of_its_own_and_v1_all_in_one() {
    let (updates, tasks, messages) = updates_and_tasks(AgentVersion::V2).await;
    assert_eq!(
        updates,
        owned(&[
            ("agent", &[("", "")]),
            ("tools", &[("c1", "3")]),
            ("tools", &[("c2", "7")]),
            ("agent", &[("", "3 and 7")]),
        ])
    );
    assert_eq!(tasks, ["agent", "tools", "tools", "agent"]);
    let v2_texts: Vec<&str> = messages.iter().map(Message::text).collect();
    assert_eq!(v2_texts, ["sums?", "", "3", "7", "3 and 7"]);
    assert_valid(&messages);

    let (updates, tasks, messages) = updates_and_tasks(AgentVersion::V1).await;
    assert_eq!(
        updates,
        owned(&[
            ("agent", &[("", "")]),
            ("tools", &[("c1", "3"), ("c2", "7")]),
            ("agent", &[("", "3 and 7")]),
        ])
    );
    assert_eq!(tasks, ["agent", "tools", "agent"]);
    let v1_texts: Vec<&str> = messages.iter().map(Message::text).collect();
    assert_eq!(v1_texts, v2_texts);
}

#[tokio::test]
async fn v1_asks_about_each_call_in_turn_before_running_them() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_tool_call(call("c1", json!({"a": 1, "b": 2})))
            .with_tool_call(call("c2", json!({"a": 3, "b": 4}))),
        AiMessage::new("done"),
    ]);
    let agent = create_react_agent(model, Add)
        .version(AgentVersion::V1)
        .require_approval(true)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("v1-approval");
    let paused = agent.invoke(input("sums?"), &config).await.unwrap();
    let asked: ToolApprovalRequest =
        serde_json::from_value(paused.interrupts[0].value.clone()).unwrap();
    assert_eq!(asked.tool_call.id, "c1");
    let paused = agent
        .invoke(Command::resume(ToolApproval::Approve), &config)
        .await
        .unwrap();
    let asked: ToolApprovalRequest =
        serde_json::from_value(paused.interrupts[0].value.clone()).unwrap();
    assert_eq!(asked.tool_call.id, "c2");
    let out = agent
        .invoke(
            Command::resume(ToolApproval::Reject {
                reason: Some("no".into()),
            }),
            &config,
        )
        .await
        .unwrap();
    assert!(out.interrupts.is_empty());
    let answers: Vec<(&str, ToolStatus)> = out
        .messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.content.as_str(), t.status))
        .collect();
    assert_eq!(
        answers,
        [
            ("3", ToolStatus::Success),
            ("The tool call was rejected: no", ToolStatus::Error)
        ]
    );
    assert_eq!(out.messages.last().unwrap().text(), "done");
}

/// The script of langchain's ToolCallLimitMiddleware check: one call, then two.
fn limit_script() -> FakeChatModel {
    FakeChatModel::new(vec![
        AiMessage::new("")
            .with_id("r1")
            .with_tool_call(call("c1", json!({"a": 1, "b": 1}))),
        AiMessage::new("")
            .with_id("r2")
            .with_tool_call(call("c2", json!({"a": 2, "b": 1})))
            .with_tool_call(call("c3", json!({"a": 3, "b": 1}))),
        AiMessage::new("done").with_id("r3"),
    ])
}

fn rows(messages: &[Message]) -> Vec<(&'static str, &str, &str)> {
    messages
        .iter()
        .map(|m| match m {
            Message::Tool(t) => (
                if t.status == ToolStatus::Error {
                    "tool error"
                } else {
                    "tool"
                },
                t.content.as_str(),
                t.tool_call_id.as_str(),
            ),
            other => (other.kind(), other.text(), ""),
        })
        .collect()
}

// Python, langchain 1.5.2 (langgraph 1.2.22), the same script:
//   create_agent(model, [add], middleware=[ToolCallLimitMiddleware(run_limit=2, exit_behavior=B)])
//   B="end":      human 'go', ai '', tool '2' c1, ai '',
//                 tool(error) 'Tool call limit exceeded. Do not make additional tool calls.' c3,
//                 tool(error) 'Execution stopped before this tool call could run because another
//                   tool call in the same batch exceeded the limit.' c2,
//                 ai 'Tool call limit reached: run limit exceeded (3/2 calls).'
//   B="continue": human, ai, tool '2' c1, ai, tool(error) 'Tool call limit exceeded. ...' c3,
//                 tool '3' c2, ai 'done'
//   B="error":    ToolCallLimitExceededError: Tool call limit reached: run limit exceeded (3/2 calls).
// Ours counts per turn (since the last human message), so the text says "turn".
#[tokio::test]
async fn a_tool_call_limit_stops_continues_or_fails_as_langchains_middleware() {
    for version in [AgentVersion::V2, AgentVersion::V1] {
        let limit = ToolCallLimit::per_turn(2);
        let agent = create_react_agent(limit_script(), Add)
            .version(version)
            .tool_call_limit(limit.clone().on_exceed(LimitExceeded::End))
            .compile()
            .unwrap();
        let out = agent.invoke(input("go"), &RunConfig::new()).await.unwrap();
        assert_valid(&out.messages);
        assert_eq!(
            rows(&out.messages),
            [
                ("human", "go", ""),
                ("ai", "", ""),
                ("tool", "2", "c1"),
                ("ai", "", ""),
                (
                    "tool error",
                    "Tool call limit exceeded. Do not make additional tool calls.",
                    "c3"
                ),
                (
                    "tool error",
                    "Execution stopped before this tool call could run because another tool call \
                     in the same batch exceeded the limit.",
                    "c2"
                ),
                (
                    "ai",
                    "Tool call limit reached: turn limit exceeded (3/2 calls).",
                    ""
                ),
            ],
            "{version:?}"
        );

        let agent = create_react_agent(limit_script(), Add)
            .version(version)
            .tool_call_limit(limit.clone().on_exceed(LimitExceeded::Continue))
            .compile()
            .unwrap();
        let out = agent.invoke(input("go"), &RunConfig::new()).await.unwrap();
        assert_valid(&out.messages);
        assert_eq!(
            rows(&out.messages),
            [
                ("human", "go", ""),
                ("ai", "", ""),
                ("tool", "2", "c1"),
                ("ai", "", ""),
                (
                    "tool error",
                    "Tool call limit exceeded. Do not make additional tool calls.",
                    "c3"
                ),
                ("tool", "3", "c2"),
                ("ai", "done", ""),
            ],
            "{version:?}"
        );

        let agent = create_react_agent(limit_script(), Add)
            .version(version)
            .tool_call_limit(limit.on_exceed(LimitExceeded::Error))
            .compile()
            .unwrap();
        let err = agent
            .invoke(input("go"), &RunConfig::new())
            .await
            .unwrap_err();
        let source = std::error::Error::source(&err).and_then(|e| e.downcast_ref::<AgentError>());
        assert!(
            matches!(
                source,
                Some(AgentError::ToolCallLimitExceeded {
                    tool: None,
                    count: 3,
                    limit: 2
                })
            ),
            "{err}: {source:?}"
        );
    }
}

#[tokio::test]
async fn a_new_human_message_starts_a_new_count_and_every_blocked_call_returns_to_the_model() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("").with_tool_call(call("c1", json!({"a": 1, "b": 1}))),
        // Over the limit: answered, not run, and the model is asked again.
        AiMessage::new("").with_tool_call(call("c2", json!({"a": 2, "b": 1}))),
        AiMessage::new("first done"),
        AiMessage::new("").with_tool_call(call("c3", json!({"a": 3, "b": 1}))),
        AiMessage::new("second done"),
    ]);
    let agent = create_react_agent(model.clone(), Add)
        .tool_call_limit(ToolCallLimit::per_turn(1).on_exceed(LimitExceeded::Continue))
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("turns");
    let out = agent.invoke(input("one"), &config).await.unwrap();
    assert_eq!(
        rows(&out.messages)[2..],
        [
            ("tool", "2", "c1"),
            ("ai", "", ""),
            (
                "tool error",
                "Tool call limit exceeded. Do not make additional tool calls.",
                "c2"
            ),
            ("ai", "first done", ""),
        ]
    );
    let out = agent.invoke(input("two"), &config).await.unwrap();
    assert_eq!(
        rows(&out.messages)[6..],
        [
            ("human", "two", ""),
            ("ai", "", ""),
            ("tool", "4", "c3"),
            ("ai", "second done", "")
        ]
    );
    assert_eq!(model.calls(), 5);
}
