//! The memory tools (langmem's manage_memory / search_memory) in a ReAct agent
//! over an InMemoryStore with the local deterministic embedder.

use graph_agents::memory::{manage_memory_tool, search_memory_tool, MemoryNamespace};
use graph_agents::model::FakeChatModel;
use graph_agents::{
    create_react_agent, AgentError, AiMessage, Message, MessagesState, ToolCall, ToolStatus,
};
use graph_core::checkpoint::InMemorySaver;
use graph_core::store::{
    HashEmbeddings, InMemoryStore, IndexConfig, Namespace, SearchOp, Store, StoreConfig,
};
use graph_core::{CompileOptions, RunConfig};
use serde_json::{json, Value};
use std::sync::Arc;

fn input(text: &str) -> graph_agents::MessagesStateUpdate {
    MessagesState::update().messages(vec![Message::human(text)])
}

fn tools_answers(messages: &[Message]) -> Vec<(ToolStatus, String)> {
    messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.status, t.content.clone()))
        .collect()
}

fn store() -> Arc<dyn Store> {
    let index = IndexConfig::new(64, HashEmbeddings::new(64));
    Arc::new(InMemoryStore::with_config(StoreConfig::new().index(index)))
}

fn manage(id: &str, args: Value) -> ToolCall {
    ToolCall::new(id, "manage_memory", args)
}

// Python, langgraph 1.2.22 + langmem 0.0.30, the same script, an InMemoryStore
// with index {"dims": 64, "embed": <the same xxh3 word hashing as HashEmbeddings>},
// namespace ("memories", "{langgraph_user_id}") -> here ("memories", "{user_id}"),
// config {"configurable": {"user_id": "alice"}}:
//   turn 1 tool messages: "created memory 0e6c869f-..." and "created memory 66bbb2c2-..."
//   store.search(("memories", "alice")): {'content': 'Alice lives in Lisbon'},
//                                        {'content': 'Alice is vegetarian'}
//   turn 2 search_memory {"query": "is alice vegetarian", "limit": 1}:
//   [{"namespace":["memories","alice"],"key":"0e6c869f-...","value":{"content":"Alice is vegetarian"},
//     "created_at":"2026-12-02T20:58:09.393150+00:00","updated_at":"2026-12-02T20:58:09.393150+00:00",
//     "score":0.8660254037844388}]
//   turn 3 manage_memory {"action": "delete"} (no id): ValueError "You must provide a MEMORY ID
//   when deleting or updating a MEMORY." fails the run (ToolNode re-raises it); here it is
//   an error message the model can act on.
#[tokio::test]
async fn an_agent_saves_searches_updates_and_deletes_memories_per_user() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_tool_call(manage("c1", json!({"content": "Alice is vegetarian"})))
            .with_tool_call(manage("c2", json!({"content": "Alice lives in Lisbon"}))),
        AiMessage::new("Noted."),
        AiMessage::new("").with_tool_call(ToolCall::new(
            "c3",
            "search_memory",
            json!({"query": "is alice vegetarian", "limit": 1}),
        )),
        AiMessage::new("She is vegetarian."),
    ]);
    let namespace = ["memories", "{user_id}"];
    let store = store();
    let agent = create_react_agent(
        model,
        (manage_memory_tool(namespace), search_memory_tool(namespace)),
    )
    .compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .store(Arc::clone(&store)),
    )
    .unwrap();
    let config = RunConfig::thread("t1").with_configurable("user_id", "alice");
    let out = agent
        .invoke(input("I'm vegetarian and live in Lisbon"), &config)
        .await
        .unwrap();
    let answers = tools_answers(&out.messages);
    let ids: Vec<&str> = answers
        .iter()
        .map(|(status, text)| {
            assert_eq!(*status, ToolStatus::Success);
            text.strip_prefix("created memory ").unwrap()
        })
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| id.len() == 36), "UUID keys: {ids:?}");

    let alice = Namespace::new(["memories", "alice"]).unwrap();
    let saved = store.search(SearchOp::new(alice.clone())).await.unwrap();
    let mut contents: Vec<&Value> = saved.iter().map(|m| &m.value["content"]).collect();
    contents.sort_by_key(|v| v.as_str());
    assert_eq!(
        contents,
        [
            &json!("Alice is vegetarian"),
            &json!("Alice lives in Lisbon")
        ]
    );

    let out = agent
        .invoke(input("what do I eat?"), &config)
        .await
        .unwrap();
    let found = out.messages[out.messages.len() - 2].as_tool().unwrap();
    let found: Value = serde_json::from_str(&found.content).unwrap();
    let found = found.as_array().unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["namespace"], json!(["memories", "alice"]));
    assert_eq!(found[0]["key"], ids[0]);
    assert_eq!(found[0]["value"], json!({"content": "Alice is vegetarian"}));
    // The same words hashed the same way: Python's score to the last digit
    // (3 of the 4 words of `{"content": "Alice is vegetarian"}`).
    let score = found[0]["score"].as_f64().unwrap();
    assert!((score - 0.866_025_403_784_438_8).abs() < 1e-6, "{score}");
    let created = found[0]["created_at"].as_str().unwrap();
    assert_eq!(created.len(), "2026-12-02T20:58:09.393150+00:00".len());
    assert!(created.ends_with("+00:00"));

    // Another user sees nothing of Alice's.
    let bob = Namespace::new(["memories", "bob"]).unwrap();
    assert!(store.search(SearchOp::new(bob)).await.unwrap().is_empty());
}

#[tokio::test]
async fn updates_deletes_and_misuse_are_answered_as_langmem_words_them() {
    let store = store();
    let alice = Namespace::new(["memories", "alice"]).unwrap();
    store
        .put(&alice, "m1", json!({"content": "Alice is vegan"}))
        .await
        .unwrap();
    store
        .put(&alice, "m2", json!({"content": "Alice lives in Porto"}))
        .await
        .unwrap();
    let model = FakeChatModel::new(vec![
        AiMessage::new("")
            .with_tool_call(manage(
                "c1",
                json!({"action": "update", "id": "m1", "content": "Alice is vegetarian"}),
            ))
            .with_tool_call(manage("c2", json!({"action": "delete", "id": "m2"})))
            .with_tool_call(manage("c3", json!({"action": "delete"})))
            .with_tool_call(manage("c4", json!({"content": "x", "id": "m9"})))
            .with_tool_call(ToolCall::new(
                "c5",
                "search_memory",
                json!({"query": "x", "filter": {"content": {"$bogus": 1}}}),
            )),
        AiMessage::new("done"),
    ]);
    let namespace = MemoryNamespace::from_fn(|ctx| {
        Namespace::new(["memories", ctx.thread_id().unwrap_or("nobody")])
    });
    let agent = create_react_agent(
        model,
        (
            manage_memory_tool(namespace.clone()),
            search_memory_tool(namespace),
        ),
    )
    .compile_with(
        CompileOptions::new()
            .checkpointer(InMemorySaver::new())
            .store(Arc::clone(&store)),
    )
    .unwrap();
    let out = agent
        .invoke(input("fix my memories"), &RunConfig::thread("alice"))
        .await
        .unwrap();
    let answers = tools_answers(&out.messages);
    assert_eq!(
        answers[0],
        (ToolStatus::Success, "updated memory m1".to_owned())
    );
    assert_eq!(
        answers[1],
        (ToolStatus::Success, "Deleted memory m2".to_owned())
    );
    assert_eq!(answers[2].0, ToolStatus::Error);
    assert!(answers[2]
        .1
        .contains("You must provide a MEMORY ID when deleting or updating a MEMORY."));
    assert!(answers[3]
        .1
        .contains("You cannot provide a MEMORY ID when creating a MEMORY."));
    assert_eq!(answers[4].0, ToolStatus::Error);
    assert!(answers[4].1.contains("$bogus"), "{}", answers[4].1);

    let left = store.search(SearchOp::new(alice)).await.unwrap();
    let left: Vec<(&str, &Value)> = left
        .iter()
        .map(|m| (m.key.as_str(), &m.value["content"]))
        .collect();
    assert_eq!(left, [("m1", &json!("Alice is vegetarian"))]);
}

#[tokio::test]
async fn a_graph_without_a_store_or_the_configurable_key_fails_the_run_with_a_typed_error() {
    let call = || {
        FakeChatModel::new(vec![AiMessage::new("").with_tool_call(ToolCall::new(
            "c1",
            "search_memory",
            json!({"query": "anything"}),
        ))])
    };
    let agent = create_react_agent(call(), search_memory_tool(["memories", "{user_id}"]))
        .compile_with(CompileOptions::new().store(InMemoryStore::new()))
        .unwrap();
    let err = agent
        .invoke(input("hi"), &RunConfig::new().with_configurable("org", "x"))
        .await
        .unwrap_err();
    let source = std::error::Error::source(&err).and_then(|e| e.downcast_ref::<AgentError>());
    match source {
        Some(AgentError::MissingConfigurable { key, available, .. }) => {
            assert_eq!(key, "user_id");
            assert_eq!(available, &["org"]);
        }
        other => panic!("{err}: {other:?}"),
    }

    let agent = create_react_agent(call(), search_memory_tool(["memories"]))
        .compile()
        .unwrap();
    let err = agent
        .invoke(input("hi"), &RunConfig::new())
        .await
        .unwrap_err();
    let source = std::error::Error::source(&err).and_then(|e| e.downcast_ref::<AgentError>());
    assert!(
        matches!(
            source,
            Some(AgentError::Store { source, .. })
                if matches!(**source, graph_core::store::StoreError::NoStore)
        ),
        "{err}: {source:?}"
    );
}
