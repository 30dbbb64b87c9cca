//! Agents through the facade: `#[reducer(add_messages)]` on a user's own state,
//! `#[tool]` fns, `ToolNode` and `tools_condition` in a hand-built graph.

use stategraph::agents::{
    tool, tools_condition, AiMessage, FakeChatModel, HasMessages, ToolCall, ToolNode, ToolStatus,
};
use stategraph::prelude::*;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(add_messages)]
    messages: Vec<Message>,
    model_calls: u32,
}

impl HasMessages for Chat {
    fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn messages_update(messages: Vec<Message>) -> ChatUpdate {
        Chat::update().messages(messages)
    }
}

/// Looks up the population of a city, in millions.
#[tool]
async fn population(
    /// The city's English name.
    city: String,
) -> Result<f64, String> {
    match city.as_str() {
        "Paris" => Ok(2.1),
        other => Err(format!("no data for {other}")),
    }
}

#[tool(name = "shout")]
/// Upper-cases text.
fn loud(text: String) -> String {
    text.to_uppercase()
}

#[tokio::test]
async fn a_hand_built_agent_loop_with_tool_fns() {
    use stategraph::agents::{call_model, ChatRequest, Toolbox};
    let tools = Toolbox::new((population, loud));
    let specs = tools.specs().clone();
    assert_eq!(
        specs[0].parameters["properties"]["city"]["description"],
        "The city's English name."
    );
    assert_eq!(specs[1].name, "shout");

    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_tool_call(ToolCall::new(
                "a",
                "population",
                serde_json::json!({"city": "Paris"}),
            ))
            .with_tool_call(ToolCall::new(
                "b",
                "population",
                serde_json::json!({"city": "Oz"}),
            ))
            .with_tool_call(ToolCall::new(
                "c",
                "shout",
                serde_json::json!({"text": "hi"}),
            )),
        AiMessage::new("Paris has 2.1 million people."),
    ]);
    let app = StateGraph::<Chat>::new()
        .add_node(async_node_fn(
            "agent",
            move |s: std::sync::Arc<Chat>, ctx: Context| {
                let (model, specs) = (model.clone(), specs.clone());
                async move {
                    let request = ChatRequest::new(&s.messages).tools(&specs);
                    let reply = call_model(&model, request, &ctx).await?;
                    Ok::<_, NodeError>(
                        Chat::update()
                            .messages(vec![reply.into()])
                            .model_calls(s.model_calls + 1),
                    )
                }
            },
        ))
        .add_node(ToolNode::from_toolbox(tools))
        .add_edge(START, "agent")
        .add_conditional_edges("agent", tools_condition::<Chat>)
        .add_edge("tools", "agent")
        .compile()
        .unwrap();
    let out = app
        .invoke(
            Chat::update().messages(vec![Message::human("How many people live in Paris?")]),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.model_calls, 2);
    let answers: Vec<(&str, &str, ToolStatus)> = out
        .messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.tool_call_id.as_str(), t.content.as_str(), t.status))
        .collect();
    assert_eq!(answers[0], ("a", "2.1", ToolStatus::Success));
    assert_eq!(
        answers[1],
        (
            "b",
            "Error: no data for Oz\n Please fix your mistakes.",
            ToolStatus::Error
        )
    );
    assert_eq!(answers[2], ("c", "HI", ToolStatus::Success));
    assert_eq!(
        out.messages.last().unwrap().text(),
        "Paris has 2.1 million people."
    );
    assert!(app.draw_mermaid().contains("agent -.-> tools;"));
}

#[tokio::test]
async fn tool_fns_stay_callable_directly() {
    assert_eq!(population::call("Paris".into()).await, Ok(2.1));
    assert_eq!(loud::call("a".into()), "A");
}

#[tokio::test]
async fn an_agent_thread_survives_a_sqlite_round_trip() {
    use stategraph::agents::create_react_agent;
    use stategraph::sqlite::SqliteSaver;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agent.db");
    let script = vec![
        AiMessage::new("")
            .with_id("r1")
            .with_tool_call(ToolCall::new(
                "c1",
                "shout",
                serde_json::json!({"text": "hey"}),
            )),
        AiMessage::new("done").with_id("r2"),
    ];
    let config = RunConfig::thread("t1");
    let first = create_react_agent(FakeChatModel::new(script.clone()), loud)
        .compile_with(SqliteSaver::open(&db).await.unwrap())
        .unwrap()
        .invoke(
            MessagesState::update().messages(vec![Message::human("shout hey")]),
            &config,
        )
        .await
        .unwrap();
    assert_eq!(first.messages.len(), 4);

    // Another process: a new saver on the same file sees the same history.
    let again = create_react_agent(FakeChatModel::new(script), loud)
        .compile_with(SqliteSaver::open(&db).await.unwrap())
        .unwrap();
    let snapshot = again.get_state(&config).await.unwrap();
    assert_eq!(snapshot.values.messages, first.messages);
    assert_eq!(
        snapshot.values.messages[2].as_tool().unwrap().content,
        "HEY"
    );
    assert!(snapshot.next.is_empty());
}

/// LangGraph 1.2.22, `messages: Annotated[list, add_messages]`, a node returning
/// `{"messages": [RemoveMessage(id="nope")]}`: invoke raises
/// ValueError("Attempting to delete a message with an ID that doesn't exist ('nope')").
#[tokio::test]
async fn removing_an_unknown_message_fails_the_step_as_in_langgraph() {
    use stategraph::agents::{Message, MessagesState};
    let app = StateGraph::<MessagesState>::new()
        .add_node(node_fn("rm", |_: &MessagesState| {
            MessagesState::update().messages(vec![Message::remove("nope")])
        }))
        .add_edge(START, "rm")
        .compile()
        .unwrap();
    let input = MessagesState::update().messages(vec![Message::human("hi").with_id("1")]);
    let err = app.invoke(input, &RunConfig::new()).await.unwrap_err();
    let GraphError::InvalidUpdate(invalid) = &err else {
        panic!("expected InvalidUpdate, got {err:?}");
    };
    assert_eq!(
        invalid.message(),
        "the reducer of `messages` rejected a write: Attempting to delete a message with an ID \
         that doesn't exist ('nope')"
    );
}
