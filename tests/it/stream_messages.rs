//! The engine side of stream mode `messages` (docs/semantics.md §9.1): chunks a
//! node emits with `Context::write_message_chunk` reach the caller at once, with
//! the task's node, id and step; nobody listening costs nothing.

use futures::StreamExt;
use stategraph::prelude::*;
use stategraph::MessageMetadata;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Talk {
    text: String,
    listening: bool,
}

#[node]
fn speak(_: &Talk, ctx: &Context) -> TalkUpdate {
    for token in ["Hel", "lo"] {
        ctx.write_message_chunk(serde_json::json!({ "content": token }));
    }
    Talk::update()
        .text("Hello".into())
        .listening(ctx.is_streaming_messages())
}

fn graph() -> CompiledGraph<Talk> {
    StateGraph::<Talk>::new()
        .add_node(speak)
        .add_edge(START, speak)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn chunks_arrive_in_order_before_the_node_update_with_task_metadata() {
    let mut events = Vec::new();
    let mut metas: Vec<MessageMetadata> = Vec::new();
    let mut stream = graph().stream(
        Talk::update(),
        &RunConfig::new(),
        [StreamMode::Messages, StreamMode::Updates],
    );
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Message { chunk, metadata } => {
                events.push(format!("chunk {}", chunk["content"]));
                metas.push(metadata);
            }
            StreamEvent::Updates { node, .. } => events.push(format!("updates {node}")),
            other => events.push(format!("other {:?}", other.mode())),
        }
    }
    assert_eq!(
        events,
        ["chunk \"Hel\"", "chunk \"lo\"", "updates speak"],
        "chunks come before the node's update"
    );
    assert!(metas.iter().all(|m| &*m.node == "speak" && m.step == 1));
    assert_eq!(metas[0].task_id, metas[1].task_id);
    assert!(!metas[0].task_id.is_empty());
}

#[tokio::test]
async fn without_the_messages_mode_nodes_are_told_nobody_listens() {
    let out = graph()
        .invoke(Talk::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.text, "Hello");
    assert!(!out.listening);

    let values: Vec<_> = graph()
        .stream(Talk::update(), &RunConfig::new(), StreamMode::Values)
        .collect()
        .await;
    assert!(values
        .iter()
        .all(|e| matches!(e, Ok(StreamEvent::Values(s)) if !s.listening)));
}
