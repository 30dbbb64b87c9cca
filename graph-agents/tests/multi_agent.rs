//! Supervisor and swarm on scripted models, against langgraph-supervisor 0.0.31
//! and langgraph-swarm 0.1.0 (LangGraph 1.2.22) running the same conversation.

use graph_agents::model::FakeChatModel;
use graph_agents::multi_agent::{
    create_handoff_tool, create_supervisor, create_supervisor_of, create_swarm, create_swarm_of,
    handoff_to, OutputMode, SwarmState,
};
use graph_agents::{create_react_agent, AiMessage, Message, MessagesState, Tool, ToolCall};
use graph_core::checkpoint::InMemorySaver;
use graph_core::error::GraphProblem;
use graph_core::{GraphError, RunConfig};
use serde_json::json;
use std::borrow::Cow;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

struct Add;

impl Tool for Add {
    type Args = AddArgs;
    type Output = i64;
    type Error = std::convert::Infallible;

    fn name(&self) -> Cow<'static, str> {
        "add".into()
    }

    fn description(&self) -> Cow<'static, str> {
        "Adds two integers.".into()
    }

    async fn call(&self, args: AddArgs) -> Result<i64, Self::Error> {
        Ok(args.a + args.b)
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> AiMessage {
    AiMessage::new("").with_tool_call(ToolCall::new(id, name, args))
}

/// (type, name, content, names of the tool calls), as the Python script prints.
fn rows(messages: &[Message]) -> Vec<(String, String, String, Vec<String>)> {
    messages
        .iter()
        .map(|m| {
            let (name, calls) = match m {
                Message::Ai(ai) => (
                    ai.name.clone(),
                    ai.tool_calls.iter().map(|c| c.name.clone()).collect(),
                ),
                Message::Tool(t) => (t.name.clone(), Vec::new()),
                _ => (None, Vec::new()),
            };
            (
                m.kind().to_owned(),
                name.unwrap_or_else(|| "None".to_owned()),
                m.text().to_owned(),
                calls,
            )
        })
        .collect()
}

fn row(
    kind: &str,
    name: &str,
    content: &str,
    calls: &[&str],
) -> (String, String, String, Vec<String>) {
    (
        kind.to_owned(),
        name.to_owned(),
        content.to_owned(),
        calls.iter().map(|c| (*c).to_owned()).collect(),
    )
}

fn supervisor_app(mode: OutputMode) -> graph_core::CompiledGraph<MessagesState> {
    let math = create_react_agent(
        FakeChatModel::new(vec![
            call("m1", "add", json!({"a": 3, "b": 4})),
            AiMessage::new("3 + 4 = 7."),
        ]),
        Add,
    )
    .name("math_expert");
    let research = create_react_agent(FakeChatModel::new(vec![AiMessage::new("unused")]), ())
        .name("research_expert");
    let supervisor = FakeChatModel::new(vec![
        call("s1", "transfer_to_math_expert", json!({})),
        AiMessage::new("The answer is 7."),
    ]);
    create_supervisor(supervisor, [research, math])
        .output_mode(mode)
        .compile()
        .unwrap()
}

async fn ask(app: &graph_core::CompiledGraph<MessagesState>, q: &str) -> Vec<Message> {
    app.invoke(
        MessagesState::update().messages(vec![Message::human(q)]),
        &RunConfig::new(),
    )
    .await
    .unwrap()
    .into_state()
    .messages
}

#[tokio::test]
async fn supervisor_last_message_matches_langgraph_supervisor() {
    // Python (create_supervisor([research, math], model=..., output_mode="last_message")):
    //   human name=None                 'what is 3 + 4?'
    //   ai    name=supervisor           '' [('transfer_to_math_expert', {})]
    //   tool  name=transfer_to_math_expert 'Successfully transferred to math_expert'
    //   ai    name=math_expert          '3 + 4 = 7.'
    //   ai    name=math_expert          'Transferring back to supervisor' [('transfer_back_to_supervisor', {})]
    //   tool  name=transfer_back_to_supervisor 'Successfully transferred back to supervisor'
    //   ai    name=supervisor           'The answer is 7.'
    let out = ask(&supervisor_app(OutputMode::LastMessage), "what is 3 + 4?").await;
    assert_eq!(
        rows(&out),
        [
            row("human", "None", "what is 3 + 4?", &[]),
            row("ai", "supervisor", "", &["transfer_to_math_expert"]),
            row(
                "tool",
                "transfer_to_math_expert",
                "Successfully transferred to math_expert",
                &[]
            ),
            row("ai", "math_expert", "3 + 4 = 7.", &[]),
            row(
                "ai",
                "math_expert",
                "Transferring back to supervisor",
                &["transfer_back_to_supervisor"]
            ),
            row(
                "tool",
                "transfer_back_to_supervisor",
                "Successfully transferred back to supervisor",
                &[]
            ),
            row("ai", "supervisor", "The answer is 7.", &[]),
        ]
    );
    graph_agents::validate_chat_history(&out).unwrap();
    let handoff_back = out[4].as_ai().unwrap();
    assert_eq!(
        handoff_back.response_metadata["__is_handoff_back"],
        json!(true)
    );
    assert_eq!(
        handoff_back.tool_calls[0].id,
        out[5].as_tool().unwrap().tool_call_id
    );
}

#[tokio::test]
async fn supervisor_full_history_matches_langgraph_supervisor() {
    // Python (output_mode="full_history"):
    //   human name=None                 'what is 3 + 4?'
    //   ai    name=supervisor           '' [('transfer_to_math_expert', {})]
    //   tool  name=transfer_to_math_expert 'Successfully transferred to math_expert'
    //   ai    name=math_expert          '' [('add', {'a': 3, 'b': 4})]
    //   tool  name=add                  '7'
    //   ai    name=math_expert          '3 + 4 = 7.'
    //   ai    name=math_expert          'Transferring back to supervisor' [('transfer_back_to_supervisor', {})]
    //   tool  name=transfer_back_to_supervisor 'Successfully transferred back to supervisor'
    //   ai    name=supervisor           'The answer is 7.'
    let out = ask(&supervisor_app(OutputMode::FullHistory), "what is 3 + 4?").await;
    assert_eq!(
        rows(&out),
        [
            row("human", "None", "what is 3 + 4?", &[]),
            row("ai", "supervisor", "", &["transfer_to_math_expert"]),
            row(
                "tool",
                "transfer_to_math_expert",
                "Successfully transferred to math_expert",
                &[]
            ),
            row("ai", "math_expert", "", &["add"]),
            row("tool", "add", "7", &[]),
            row("ai", "math_expert", "3 + 4 = 7.", &[]),
            row(
                "ai",
                "math_expert",
                "Transferring back to supervisor",
                &["transfer_back_to_supervisor"]
            ),
            row(
                "tool",
                "transfer_back_to_supervisor",
                "Successfully transferred back to supervisor",
                &[]
            ),
            row("ai", "supervisor", "The answer is 7.", &[]),
        ]
    );
    graph_agents::validate_chat_history(&out).unwrap();
}

#[tokio::test]
async fn without_handoff_back_messages_the_worker_answer_is_followed_by_the_supervisor() {
    let math =
        create_react_agent(FakeChatModel::new(vec![AiMessage::new("7.")]), ()).name("math_expert");
    let supervisor = FakeChatModel::new(vec![
        call("s1", "transfer_to_math_expert", json!({})),
        AiMessage::new("Done."),
    ]);
    let app = create_supervisor(supervisor, [math])
        .add_handoff_back_messages(false)
        .compile()
        .unwrap();
    let texts: Vec<String> = ask(&app, "q")
        .await
        .iter()
        .map(|m| m.text().to_owned())
        .collect();
    assert_eq!(
        texts,
        [
            "q",
            "",
            "Successfully transferred to math_expert",
            "7.",
            "Done."
        ]
    );
}

fn alice_and_bob() -> (
    graph_agents::ReactAgent<SwarmState>,
    graph_agents::ReactAgent<SwarmState>,
) {
    let alice = create_react_agent(
        FakeChatModel::new(vec![call("a1", "transfer_to_bob", json!({}))]),
        (Add, create_handoff_tool("bob")),
    )
    .name("alice")
    .with_state::<SwarmState>();
    let bob = create_react_agent(
        FakeChatModel::new(vec![
            AiMessage::new("Hi, I am Bob."),
            AiMessage::new("Still Bob: 5 + 7 = 12."),
        ]),
        create_handoff_tool("alice"),
    )
    .name("bob")
    .with_state::<SwarmState>();
    (alice, bob)
}

#[tokio::test]
async fn swarm_remembers_the_active_agent_across_turns_as_langgraph_swarm_does() {
    // Python (create_swarm([alice, bob], default_active_agent="alice"), InMemorySaver):
    // swarm turn 1 active_agent = bob
    //   human name=None            'let me talk to bob'
    //   ai    name=alice           '' [('transfer_to_bob', {})]
    //   tool  name=transfer_to_bob 'Successfully transferred to bob'
    //   ai    name=bob             'Hi, I am Bob.'
    // swarm turn 2 active_agent = bob
    //   ... the four above, then
    //   human name=None            'what is 5 + 7?'
    //   ai    name=bob             'Still Bob: 5 + 7 = 12.'
    let (alice, bob) = alice_and_bob();
    let app = create_swarm([alice, bob], "alice")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("1");
    let turn = |q: &str| SwarmState::update().messages(vec![Message::human(q)]);
    let out = app
        .invoke(turn("let me talk to bob"), &config)
        .await
        .unwrap();
    assert_eq!(out.active_agent.as_deref(), Some("bob"));
    let first = [
        row("human", "None", "let me talk to bob", &[]),
        row("ai", "alice", "", &["transfer_to_bob"]),
        row(
            "tool",
            "transfer_to_bob",
            "Successfully transferred to bob",
            &[],
        ),
        row("ai", "bob", "Hi, I am Bob.", &[]),
    ];
    assert_eq!(rows(&out.messages), first);

    let out = app.invoke(turn("what is 5 + 7?"), &config).await.unwrap();
    assert_eq!(out.active_agent.as_deref(), Some("bob"));
    let mut both = first.to_vec();
    both.push(row("human", "None", "what is 5 + 7?", &[]));
    both.push(row("ai", "bob", "Still Bob: 5 + 7 = 12.", &[]));
    assert_eq!(rows(&out.messages), both);
    graph_agents::validate_chat_history(&out.messages).unwrap();
}

fn problems(err: GraphError) -> Vec<GraphProblem> {
    match err {
        GraphError::InvalidGraph { problems } => problems,
        other => panic!("expected InvalidGraph, got {other:?}"),
    }
}

#[test]
fn a_handoff_to_a_missing_agent_is_a_compile_error() {
    let (alice, _) = alice_and_bob();
    let carol = create_react_agent(FakeChatModel::new(vec![]), create_handoff_tool("dave"))
        .name("carol")
        .with_state::<SwarmState>();
    let err = create_swarm([alice, carol], "erin").compile().unwrap_err();
    let found = problems(err);
    assert!(
        found.contains(&GraphProblem::UnknownDestination {
            source: "alice".into(),
            target: "bob".into()
        }),
        "{found:?}"
    );
    assert!(
        found.contains(&GraphProblem::UnknownDestination {
            source: "carol".into(),
            target: "dave".into()
        }),
        "{found:?}"
    );
    assert!(
        found.iter().any(
            |p| matches!(p, GraphProblem::UnknownPathMapTarget { target, .. } if target == "erin")
        ),
        "the default agent is checked too: {found:?}"
    );

    // A worker of a supervisor handing off to an agent that is not there.
    let worker = create_react_agent(FakeChatModel::new(vec![]), create_handoff_tool("nobody"))
        .name("worker");
    let err = create_supervisor(FakeChatModel::new(vec![]), [worker])
        .compile()
        .unwrap_err();
    assert!(problems(err).contains(&GraphProblem::UnknownDestination {
        source: "worker".into(),
        target: "nobody".into()
    }));
}

#[test]
fn agents_need_distinct_names() {
    let unnamed = create_react_agent(FakeChatModel::new(vec![]), ());
    let err = create_supervisor(FakeChatModel::new(vec![]), [unnamed])
        .compile()
        .unwrap_err();
    assert!(problems(err).contains(&GraphProblem::EmptyNodeName));
    let twice = || create_react_agent(FakeChatModel::new(vec![]), ()).name("a");
    let err = create_supervisor(FakeChatModel::new(vec![]), [twice(), twice()])
        .compile()
        .unwrap_err();
    assert!(problems(err)
        .iter()
        .any(|p| matches!(p, GraphProblem::DuplicateNode { .. })),);
}

#[tokio::test]
async fn a_handoff_outside_a_multi_agent_graph_is_a_parent_command_error() {
    let (alice, _) = alice_and_bob();
    let app = alice.compile().unwrap();
    let err = app
        .invoke(
            SwarmState::update().messages(vec![Message::human("hi")]),
            &RunConfig::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::ParentCommand { .. }), "{err:?}");
}

#[tokio::test]
async fn a_checkpointed_supervisor_keeps_the_conversation_across_turns() {
    let math = create_react_agent(
        FakeChatModel::new(vec![AiMessage::new("7."), AiMessage::new("12.")]),
        (),
    )
    .name("math_expert");
    let supervisor = FakeChatModel::new(vec![
        call("s1", "transfer_to_math_expert", json!({})),
        AiMessage::new("It is 7."),
        call("s2", "transfer_to_math_expert", json!({})),
        AiMessage::new("It is 12."),
    ]);
    let app = create_supervisor(supervisor, [math])
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let turn = |q: &str| MessagesState::update().messages(vec![Message::human(q)]);
    let first = app.invoke(turn("3 + 4?"), &config).await.unwrap();
    assert_eq!(first.messages.len(), 7);
    let out = app.invoke(turn("5 + 7?"), &config).await.unwrap();
    let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
    assert_eq!(texts.len(), 14, "{texts:?}");
    assert_eq!(texts[7], "5 + 7?");
    assert_eq!(texts[10], "12.");
    assert_eq!(texts[13], "It is 12.");
    graph_agents::validate_chat_history(&out.messages).unwrap();
}

/// The agents of the typed-team tests.
#[derive(graph_macros::Goto, Clone, Copy, Debug)]
enum Team {
    Alice,
    #[goto(name = "Math Expert")]
    Math,
}

#[tokio::test]
async fn a_typed_team_names_its_agents_after_its_members() {
    let alice = create_react_agent(
        FakeChatModel::new(vec![call("c1", "transfer_to_math_expert", json!({}))]),
        handoff_to(Team::Math),
    )
    .with_state::<SwarmState>();
    let math = create_react_agent(FakeChatModel::new(vec![AiMessage::new("4")]), ())
        .with_state::<SwarmState>();
    let swarm = create_swarm_of([(Team::Alice, alice), (Team::Math, math)], Team::Alice)
        .compile()
        .unwrap();
    let out = swarm
        .invoke(
            SwarmState::update().messages(vec![Message::human("2 + 2?")]),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.active_agent.as_deref(), Some("Math Expert"));
    let authors: Vec<Option<&str>> = out
        .messages
        .iter()
        .filter_map(Message::as_ai)
        .map(|ai| ai.name.as_deref())
        .collect();
    assert_eq!(authors, [Some("alice"), Some("Math Expert")]);

    let math = create_react_agent(FakeChatModel::new(vec![AiMessage::new("4")]), ());
    let supervisor = FakeChatModel::new(vec![
        call("c1", "transfer_to_math_expert", json!({})),
        AiMessage::new("It is 4."),
    ]);
    let app = create_supervisor_of(supervisor, [(Team::Math, math)]);
    // Alice has no agent: the supervisor's handoff to her has nowhere to go.
    let err = app.compile().unwrap_err();
    assert!(problems(err).contains(&GraphProblem::UnknownDestination {
        source: "supervisor".into(),
        target: "alice".into()
    }));
}

#[test]
fn a_team_member_without_an_agent_is_a_compile_error() {
    let alice = create_react_agent(FakeChatModel::new(vec![]), handoff_to(Team::Math))
        .with_state::<SwarmState>();
    let err = create_swarm_of([(Team::Alice, alice)], Team::Alice)
        .compile()
        .unwrap_err();
    let found = problems(err);
    assert!(
        found.iter().any(|p| matches!(
            p,
            GraphProblem::UnknownPathMapTarget { target, .. } if target == "Math Expert"
        )),
        "{found:?}"
    );
    assert!(found.contains(&GraphProblem::UnknownDestination {
        source: "alice".into(),
        target: "Math Expert".into()
    }));
}
