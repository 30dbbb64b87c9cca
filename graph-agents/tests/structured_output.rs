//! Typed structured output: `with_structured_output::<T>()` and the ReAct agent's
//! `response_format::<T>()`, on scripted models; checked against LangGraph 1.2.22's
//! `create_react_agent(..., response_format=Weather)`.

use futures::future::BoxFuture;
use graph_agents::model::{ChatModel, ChatRequest, FakeChatModel, ResponseFormat};
use graph_agents::{
    create_react_agent, AgentError, AgentStateWithStructuredResponse, AiMessage, Message, Tool,
    ToolCall,
};
use graph_core::{GraphError, RetryPolicy, RunConfig};
use serde_json::json;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Weather {
    city: String,
    temperature: i32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CityArgs {
    city: String,
}

struct Forecast;

impl Tool for Forecast {
    type Args = CityArgs;
    type Output = String;
    type Error = std::convert::Infallible;

    fn name(&self) -> Cow<'static, str> {
        "weather".into()
    }

    fn description(&self) -> Cow<'static, str> {
        "Today's weather in a city.".into()
    }

    async fn call(&self, args: CityArgs) -> Result<String, Self::Error> {
        Ok(format!("21 degrees in {}", args.city))
    }
}

/// What one model call was asked.
#[derive(Debug, Clone)]
struct Seen {
    system: Option<String>,
    kinds: Vec<&'static str>,
    tools: usize,
    format: Option<ResponseFormat>,
}

/// A scripted model that records every request.
#[derive(Clone)]
struct Recording {
    inner: FakeChatModel,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl ChatModel for Recording {
    fn generate<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<Arc<AiMessage>, AgentError>> {
        self.seen.lock().unwrap().push(Seen {
            system: request.system.map(str::to_owned),
            kinds: request.messages.iter().map(Message::kind).collect(),
            tools: request.tools.len(),
            format: request.response_format.cloned(),
        });
        self.inner.generate(request)
    }
}

fn recording(replies: Vec<AiMessage>) -> (Recording, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = Recording {
        inner: FakeChatModel::new(replies),
        seen: Arc::clone(&seen),
    };
    (model, seen)
}

#[tokio::test]
async fn response_format_makes_one_more_call_with_the_schema_as_langgraph_does() {
    // Python (LangGraph 1.2.22, create_react_agent(model, [weather],
    // prompt="You answer weather questions.", response_format=Weather)):
    //   structured_response = Weather(city='Paris', temperature=21)
    //   messages = [('human', 'Weather in Paris?'), ('ai', ''), ('tool', '21 degrees in Paris'),
    //               ('ai', 'It is 21 degrees in Paris.')]
    //   structured call got: [[('human', ...), ('ai', ''), ('tool', ...), ('ai', ...)]]
    //     (the history without the system prompt)
    //   nodes: ['__start__', 'agent', 'tools', 'generate_structured_response', '__end__']
    let (model, seen) = recording(vec![
        AiMessage::new("").with_tool_call(ToolCall::new("c1", "weather", json!({"city": "Paris"}))),
        AiMessage::new("It is 21 degrees in Paris."),
        AiMessage::new(r#"{"city": "Paris", "temperature": 21}"#),
    ]);
    let agent = create_react_agent(model, Forecast)
        .system_prompt("You answer weather questions.")
        .response_format::<Weather>()
        .compile()
        .unwrap();
    let input = AgentStateWithStructuredResponse::update()
        .messages(vec![Message::human("Weather in Paris?")]);
    let out = agent.invoke(input, &RunConfig::new()).await.unwrap();
    assert_eq!(
        out.structured_response,
        Some(Weather {
            city: "Paris".into(),
            temperature: 21
        })
    );
    let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        [
            "Weather in Paris?",
            "",
            "21 degrees in Paris",
            "It is 21 degrees in Paris."
        ]
    );

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "two agent calls and the structured one");
    assert!(seen[..2].iter().all(|s| s.format.is_none() && s.tools == 1));
    assert_eq!(
        seen[0].system.as_deref(),
        Some("You answer weather questions.")
    );
    let last = &seen[2];
    assert_eq!(last.system, None);
    assert_eq!(last.tools, 0);
    assert_eq!(last.kinds, ["human", "ai", "tool", "ai"]);
    let format = last.format.as_ref().expect("the schema is sent");
    assert_eq!(format.name, "Weather");
    assert_eq!(format.schema["required"], json!(["city", "temperature"]));
}

#[tokio::test]
async fn a_structured_reply_that_does_not_fit_fails_the_run_with_the_raw_text() {
    let model = FakeChatModel::new(vec![
        AiMessage::new("It is warm."),
        AiMessage::new(r#"{"city": "Paris", "temperature": "warm"}"#),
    ]);
    let agent = create_react_agent(model, ())
        .response_format::<Weather>()
        .retry_policy(Some(RetryPolicy::new().max_attempts(3)))
        .compile()
        .unwrap();
    let input = AgentStateWithStructuredResponse::update().messages(vec![Message::human("?")]);
    let err = agent.invoke(input, &RunConfig::new()).await.unwrap_err();
    let GraphError::NodeFailed { node, source, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(node, "generate_structured_response");
    let Some(AgentError::StructuredOutput { raw, reason, .. }) =
        source.downcast_ref::<AgentError>()
    else {
        panic!("{source:?}")
    };
    assert_eq!(raw, r#"{"city": "Paris", "temperature": "warm"}"#);
    assert!(reason.contains("invalid type"), "{reason}");
}

#[tokio::test]
async fn with_structured_output_sends_the_format_and_parses_the_reply() {
    let (model, seen) = recording(vec![AiMessage::new(
        "```json\n{\"city\": \"Oslo\", \"temperature\": -3}\n```",
    )]);
    let weather = model
        .with_structured_output::<Weather>()
        .invoke(&[Message::human("Oslo?")])
        .await
        .unwrap();
    assert_eq!(weather.temperature, -3);
    assert_eq!(
        seen.lock().unwrap()[0].format.as_ref().unwrap().name,
        "Weather"
    );
}
