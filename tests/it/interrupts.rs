//! Human in the loop: `Context::interrupt`, `Command::resume` / `resume_map`,
//! `Command` as graph input, static breakpoints (docs/semantics.md §4.3, §5;
//! scenarios 17, 27, 28, 32–35, 39, 43 of its appendix A) and the bad inputs
//! around them.

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::{InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::{Breakpoint, Durability, GraphInput, ResumeTypeError, RetryPolicy, StreamEvent};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn add_str(a: String, b: String) -> String {
    a + &b
}

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

async fn collect<S: stategraph::State>(
    mut stream: stategraph::graph::GraphStream<S>,
) -> Vec<StreamEvent<S>> {
    let mut out = Vec::new();
    while let Some(event) = stream.next().await {
        out.push(event.unwrap());
    }
    out
}

// ---------------------------------------------------------------- scenario 27

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Market {
    #[reducer(add_str)]
    my_key: String,
    market: String,
}

fn two_questions(calls: Arc<AtomicUsize>) -> CompiledGraph<Market> {
    StateGraph::<Market>::new()
        .add_node(node_fn(
            "node",
            move |_: &Market, ctx: &Context| -> Result<MarketUpdate, NodeError> {
                calls.fetch_add(1, Ordering::SeqCst);
                let answer1: String = ctx.interrupt(json!({"value": 1}))?;
                let answer2: String = ctx.interrupt(json!({"value": 2}))?;
                Ok(Market::update().my_key(format!("{answer1} {answer2}")))
            },
        ))
        .add_edge(START, "node")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

fn interrupts_of<S: stategraph::State>(events: &[StreamEvent<S>]) -> Vec<Vec<Interrupt>> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Interrupt(i) => Some(i.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn two_interrupts_in_one_node_are_answered_in_order_and_the_node_reruns() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = two_questions(Arc::clone(&calls));
    let config = RunConfig::thread("t");

    let first = collect(app.stream(
        Market::update().my_key("DE".into()).market("DE".into()),
        &config,
        StreamMode::Updates,
    ))
    .await;
    let asked = interrupts_of(&first);
    assert_eq!(asked.len(), 1, "{first:?}");
    assert_eq!(asked[0][0].value, json!({"value": 1}));
    let id = asked[0][0].id.clone();
    assert_eq!(id.len(), 32);

    let second = collect(app.stream(
        Command::resume("answer 1").update(Market::update().my_key(" foofoo ".into())),
        &config,
        StreamMode::Updates,
    ))
    .await;
    let asked = interrupts_of(&second);
    assert_eq!(asked.len(), 1, "{second:?}");
    assert_eq!(asked[0][0].value, json!({"value": 2}));
    assert_eq!(
        asked[0][0].id, id,
        "both interrupts of one task share the id"
    );
    // The update given with the resume is pending, and visible in the state.
    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.values.my_key, "DE foofoo ");
    assert_eq!(snapshot.next, vec!["node"]);
    assert_eq!(snapshot.interrupts.len(), 1);
    assert_eq!(snapshot.tasks[0].interrupts[0].value, json!({"value": 2}));

    let third = collect(app.stream(Command::resume("answer 2"), &config, StreamMode::Values)).await;
    let values: Vec<String> = third
        .iter()
        .map(|e| match e {
            StreamEvent::Values(s) => s.my_key.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(values, ["DE foofoo ", "DE foofoo answer 1 answer 2"]);
    // The node re-ran from its beginning on each resume.
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let done = app.get_state(&config).await.unwrap();
    assert!(done.next.is_empty() && done.interrupts.is_empty());
}

#[tokio::test]
async fn invoke_returns_the_state_with_the_pending_interrupts() {
    let app = two_questions(Arc::default());
    let config = RunConfig::thread("t");
    let out = app
        .invoke(Market::update().my_key("x".into()), &config)
        .await
        .unwrap();
    assert!(out.is_interrupted());
    assert_eq!(out.my_key, "x", "the output dereferences to the state");
    assert_eq!(out.interrupts[0].value, json!({"value": 1}));
    assert_eq!(out.breakpoint, None);

    let out = app.invoke(Command::resume("a"), &config).await.unwrap();
    assert_eq!(out.interrupts[0].value, json!({"value": 2}));
    let out = app.invoke(Command::resume("b"), &config).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(out.into_state().my_key, "xa b");
}

/// `{:?}` of what `invoke` returns shows the state and the questions, as JSON
/// text, and the breakpoint only when there is one.
#[tokio::test]
async fn an_invoke_result_debugs_as_its_state_and_its_interrupts() {
    let app = two_questions(Arc::default());
    let config = RunConfig::thread("t");
    let out = app
        .invoke(Market::update().my_key("x".into()), &config)
        .await
        .unwrap();
    let id = &out.interrupts[0].id;
    assert_eq!(
        format!("{out:?}"),
        format!(
            r#"GraphOutput {{ state: Market {{ my_key: "x", market: "" }}, interrupts: [Interrupt {{ value: {{"value":1}}, id: "{id}" }}] }}"#
        )
    );
    app.invoke(Command::resume("a"), &config).await.unwrap();
    let out = app.invoke(Command::resume("b"), &config).await.unwrap();
    assert_eq!(
        format!("{out:?}"),
        r#"GraphOutput { state: Market { my_key: "xa b", market: "" }, interrupts: [] }"#
    );

    let app = StateGraph::<Plain>::new()
        .add_node(node_fn("node1", |_: &Plain| Plain::update()))
        .add_edge(START, "node1")
        .interrupt_before("node1")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let out = app
        .invoke(Plain::update().foo("abc".into()), &config)
        .await
        .unwrap();
    assert_eq!(
        format!("{out:?}"),
        r#"GraphOutput { state: Plain { foo: "abc" }, interrupts: [], breakpoint: Before(["node1"]) }"#
    );
}

// ---------------------------------------------------------------- scenario 28

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Age {
    age: u32,
}

#[node]
fn ask_age(_: &Age, ctx: &Context) -> Result<AgeUpdate, NodeError> {
    let mut prompt = "what is your age?".to_owned();
    loop {
        let answer: String = ctx.interrupt(&prompt)?;
        match answer.parse::<u32>() {
            Ok(age) if age >= 18 => return Ok(Age::update().age(age)),
            _ => prompt = "invalid response".to_owned(),
        }
    }
}

#[tokio::test]
async fn an_interrupt_loop_asks_until_the_answer_is_valid() {
    let app = StateGraph::<Age>::new()
        .add_node(ask_age)
        .add_edge(START, ask_age)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app.invoke(Age::update(), &config).await.unwrap();
    assert_eq!(out.interrupts[0].value, json!("what is your age?"));
    for answer in ["13", "15"] {
        let events =
            collect(app.stream(Command::resume(answer), &config, StreamMode::Updates)).await;
        let asked = interrupts_of(&events);
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0][0].value, json!("invalid response"));
    }
    let events = collect(app.stream(Command::resume("19"), &config, StreamMode::Updates)).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let StreamEvent::Updates { node, updates } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(&**node, "ask_age");
    assert_eq!(updates.len(), 1);
    assert_eq!(app.get_state(&config).await.unwrap().values.age, 19);
}

// ---------------------------------------------------------------- scenario 32

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Plain {
    foo: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Added {
    #[reducer(add_str)]
    foo: String,
}

#[tokio::test]
async fn a_static_breakpoint_resumes_with_command_resume_and_command_goto() {
    let app = StateGraph::<Plain>::new()
        .add_node(node_fn("node1", |s: &Plain| {
            Plain::update().foo(format!("{}|node-1", s.foo))
        }))
        .add_node(node_fn("node2", |s: &Plain| {
            Plain::update().foo(format!("{}|node-2", s.foo))
        }))
        .add_edge(START, "node1")
        .add_edge("node1", "node2")
        .interrupt_before("node1")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app
        .invoke(Plain::update().foo("abc".into()), &config)
        .await
        .unwrap();
    assert_eq!(out.foo, "abc");
    assert_eq!(
        out.breakpoint,
        Some(Breakpoint::Before(vec!["node1".into()]))
    );
    assert!(out.interrupts.is_empty());
    let out = app.invoke(Command::resume("node1"), &config).await.unwrap();
    assert_eq!(out.foo, "abc|node-1|node-2");
    assert!(!out.is_interrupted());

    // With a reducer, a goto given with the resume runs node2 next to node1.
    let app = StateGraph::<Added>::new()
        .add_node(node_fn("node1", |_: &Added| {
            Added::update().foo("|node-1".into())
        }))
        .add_node(node_fn("node2", |_: &Added| {
            Added::update().foo("|node-2".into())
        }))
        .add_edge(START, "node1")
        .add_edge("node1", "node2")
        .interrupt_before("node1")
        .compile_with(InMemorySaver::new())
        .unwrap();
    app.invoke(Added::update().foo("abc".into()), &config)
        .await
        .unwrap();
    let out = app.invoke(Command::goto("node2"), &config).await.unwrap();
    assert_eq!(out.foo, "abc|node-1|node-2|node-2");
}

// ---------------------------------------------------------------- scenario 33

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Steps {
    #[reducer(concat)]
    steps: Vec<String>,
}

#[tokio::test]
async fn state_is_unchanged_while_a_node_waits_for_answers() {
    let app = StateGraph::<Steps>::new()
        .add_node(node_fn(
            "both",
            |_: &Steps, ctx: &Context| -> Result<StepsUpdate, NodeError> {
                let a: String = ctx.interrupt("step1?")?;
                let b: String = ctx.interrupt("step2?")?;
                Ok(Steps::update().steps(vec![a, b]))
            },
        ))
        .add_edge(START, "both")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    app.invoke(Steps::update(), &config).await.unwrap();
    assert!(app
        .get_state(&config)
        .await
        .unwrap()
        .values
        .steps
        .is_empty());
    app.invoke(Command::resume("step1"), &config).await.unwrap();
    assert!(app
        .get_state(&config)
        .await
        .unwrap()
        .values
        .steps
        .is_empty());
    let out = app.invoke(Command::resume("step2"), &config).await.unwrap();
    assert_eq!(out.steps, ["step1", "step2"]);
}

// ---------------------------------------------------------------- scenario 34

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Texts {
    text_1: String,
    text_2: String,
}

fn parallel_questions() -> CompiledGraph<Texts> {
    StateGraph::<Texts>::new()
        .add_node(node_fn(
            "one",
            |s: &Texts, ctx: &Context| -> Result<TextsUpdate, NodeError> {
                let answer: String = ctx.interrupt(format!("prompt: {}", s.text_1))?;
                Ok(Texts::update().text_1(answer))
            },
        ))
        .add_node(node_fn(
            "two",
            |s: &Texts, ctx: &Context| -> Result<TextsUpdate, NodeError> {
                let answer: String = ctx.interrupt(format!("prompt: {}", s.text_2))?;
                Ok(Texts::update().text_2(answer))
            },
        ))
        .add_edge(START, "one")
        .add_edge(START, "two")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

fn texts() -> TextsUpdate {
    Texts::update()
        .text_1("original text 1".into())
        .text_2("original text 2".into())
}

#[tokio::test]
async fn parallel_interrupts_need_a_resume_map_and_resume_independently() {
    let app = parallel_questions();
    let config = RunConfig::thread("t");
    let out = app.invoke(texts(), &config).await.unwrap();
    assert_eq!(out.interrupts.len(), 2);
    assert_ne!(out.interrupts[0].id, out.interrupts[1].id);

    // One value for two pending interrupts: ambiguous.
    let err = app.invoke(Command::resume("x"), &config).await.unwrap_err();
    assert!(matches!(err, GraphError::InvalidResume(_)), "{err}");
    assert!(err.to_string().contains("resume_map"), "{err}");
    for i in &out.interrupts {
        assert!(err.to_string().contains(&i.id), "{err}");
    }

    // All at once.
    let answers = out.interrupts.iter().map(|i| {
        let prompt: String = i.value_as().unwrap();
        (i.id.clone(), format!("resume for {prompt}"))
    });
    let done = app
        .invoke(Command::resume_map(answers), &config)
        .await
        .unwrap();
    assert_eq!(done.text_1, "resume for prompt: original text 1");
    assert_eq!(done.text_2, "resume for prompt: original text 2");
    assert!(!done.is_interrupted());
}

#[tokio::test]
async fn resuming_one_of_two_interrupts_leaves_the_other_pending() {
    let app = parallel_questions();
    let config = RunConfig::thread("t");
    let out = app.invoke(texts(), &config).await.unwrap();
    let (first, second) = (out.interrupts[0].clone(), out.interrupts[1].clone());

    let out = app
        .invoke(
            Command::resume_map([(first.id.clone(), "one done")]),
            &config,
        )
        .await
        .unwrap();
    assert_eq!(out.interrupts, vec![second.clone()]);
    // The answered task's write is in the returned state (not yet in a checkpoint).
    assert_eq!(out.text_1, "one done");
    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.next, vec!["two"]);
    assert_eq!(snapshot.interrupts, vec![second.clone()]);
    assert_eq!(snapshot.values.text_1, "one done");

    // Now a single value is unambiguous: one interrupt is left.
    let out = app
        .invoke(Command::resume("two done"), &config)
        .await
        .unwrap();
    assert_eq!(
        (out.text_1.as_str(), out.text_2.as_str()),
        ("one done", "two done")
    );
    assert!(!out.is_interrupted());
}

#[tokio::test]
async fn history_keeps_the_interrupts_of_tasks_that_were_answered_since() {
    // LangGraph 1.2.22, `a` and `b` each `interrupt("a?")` / `interrupt("b?")`
    // from START, `a` answered with a resume map: `get_state` lists
    // next ('b',), interrupts (b?,), tasks [('a', (), {'messages': ['a:A']}),
    // ('b', (b?,), None)]; the same checkpoint in `get_state_history` lists
    // next ('a', 'b'), interrupts [a?, b?], tasks [('a', [a?], {..}),
    // ('b', [b?], None)]: a checkpoint read as stored keeps every task's
    // interrupts, only the latest state drops those of completed tasks.
    let app = parallel_questions();
    let config = RunConfig::thread("t");
    let out = app.invoke(texts(), &config).await.unwrap();
    let (first, second) = (out.interrupts[0].clone(), out.interrupts[1].clone());
    app.invoke(
        Command::resume_map([(first.id.clone(), "one done")]),
        &config,
    )
    .await
    .unwrap();
    let latest = app.get_state(&config).await.unwrap();
    assert_eq!(latest.interrupts, vec![second.clone()]);
    let answered = latest.tasks.iter().find(|t| t.name == "one").unwrap();
    assert!(answered.interrupts.is_empty());

    let history = app
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    let paused = &history[0];
    assert_eq!(paused.next, vec!["one", "two"]);
    assert_eq!(paused.interrupts, vec![first.clone(), second.clone()]);
    let one = paused.tasks.iter().find(|t| t.name == "one").unwrap();
    assert_eq!(one.interrupts, vec![first.clone()]);
    assert!(one.result.is_some());
    let two = paused.tasks.iter().find(|t| t.name == "two").unwrap();
    assert_eq!(two.interrupts, vec![second]);
    assert!(two.result.is_none());
}

// ---------------------------------------------------------------- scenario 35

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Robot {
    robot_input: String,
    human_input: String,
}

#[tokio::test]
async fn interrupt_events_in_updates_and_values_modes() {
    let app = StateGraph::<Robot>::new()
        .add_node(node_fn("robot", |_: &Robot| {
            Robot::update().robot_input("beep".into())
        }))
        .add_node(node_fn(
            "human_input_node",
            |_: &Robot, ctx: &Context| -> Result<RobotUpdate, NodeError> {
                let said: String = ctx.interrupt("your turn")?;
                Ok(Robot::update().human_input(said))
            },
        ))
        .add_edge(START, "robot")
        .add_edge("robot", "human_input_node")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let modes = [StreamMode::Updates, StreamMode::Values];
    let events = collect(app.stream(Robot::update(), &config, modes)).await;
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(matches!(&events[0], StreamEvent::Updates { node, .. } if &**node == "robot"));
    assert!(matches!(&events[1], StreamEvent::Values(s) if s.robot_input == "beep"));
    assert!(matches!(&events[2], StreamEvent::Interrupt(i) if i[0].value == json!("your turn")));
    assert!(matches!(
        &events[3],
        StreamEvent::ValuesAtInterrupt { values, interrupts }
            if values.robot_input == "beep" && interrupts.len() == 1
    ));

    let events = collect(app.stream(Command::resume("hello"), &config, modes)).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(&events[0], StreamEvent::Values(s) if s.human_input.is_empty()));
    assert!(
        matches!(&events[1], StreamEvent::Updates { node, .. } if &**node == "human_input_node")
    );
    assert!(matches!(&events[2], StreamEvent::Values(s) if s.human_input == "hello"));
}

#[tokio::test]
async fn tasks_mode_reports_the_interrupts_of_a_task() {
    let app = two_questions(Arc::default());
    let config = RunConfig::thread("t");
    let events = collect(app.stream(Market::update(), &config, StreamMode::Tasks)).await;
    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TaskResult {
                name, interrupts, ..
            } => Some((name.to_string(), interrupts.len())),
            _ => None,
        })
        .collect();
    assert!(results.contains(&("node".to_owned(), 1)), "{events:?}");
}

// ---------------------------------------------------------------- Sends

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Review {
    prompts: Vec<String>,
    #[reducer(concat)]
    answers: Vec<String>,
}

#[node]
fn ask_human(prompt: &String, ctx: &Context) -> Result<ReviewUpdate, NodeError> {
    let answer: String = ctx.interrupt(prompt)?;
    Ok(Review::update().answers(vec![answer]))
}

fn fan_out(s: &Review) -> Vec<stategraph::Send> {
    s.prompts
        .iter()
        .map(|p| send(ask_human, p.clone()))
        .collect()
}

#[tokio::test]
async fn interrupts_in_send_tasks_resume_independently_in_send_order() {
    let app = StateGraph::<Review>::new()
        .add_node(ask_human)
        .add_conditional_edges(START, fan_out)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let prompts: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
    let out = app
        .invoke(Review::update().prompts(prompts.clone()), &config)
        .await
        .unwrap();
    let asked: Vec<String> = out
        .interrupts
        .iter()
        .map(|i| i.value_as().unwrap())
        .collect();
    assert_eq!(asked, prompts);

    // Answer b and d first: the others stay pending, and b and d do not re-run.
    let some: Vec<(String, String)> = out
        .interrupts
        .iter()
        .filter(|i| i.value == json!("b") || i.value == json!("d"))
        .map(|i| (i.id.clone(), format!("human input for prompt {}", i.value)))
        .collect();
    let partial = app
        .invoke(Command::resume_map(some), &config)
        .await
        .unwrap();
    assert_eq!(partial.interrupts.len(), 3);
    let rest: Vec<(String, String)> = partial
        .interrupts
        .iter()
        .map(|i| (i.id.clone(), format!("human input for prompt {}", i.value)))
        .collect();
    let done = app
        .invoke(Command::resume_map(rest), &config)
        .await
        .unwrap();
    assert!(!done.is_interrupted());
    let expected: Vec<String> = prompts
        .iter()
        .map(|p| format!("human input for prompt \"{p}\""))
        .collect();
    assert_eq!(done.answers, expected, "answers in Send order");
}

// ---------------------------------------------------------------- scenario 43

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Nothing {
    n: u32,
}

fn no_op_chain(durability: Durability) -> (CompiledGraph<Nothing>, RunConfig) {
    let app = StateGraph::<Nothing>::new()
        .add_node(node_fn("step_1", |_: &Nothing| {}))
        .add_node(node_fn("step_2", |_: &Nothing| {}))
        .add_node(node_fn("step_3", |_: &Nothing| {}))
        .add_edge(START, "step_1")
        .add_edge("step_1", "step_2")
        .add_edge("step_2", "step_3")
        .interrupt_after("*")
        .compile_with(InMemorySaver::new())
        .unwrap();
    (app, RunConfig::thread("t").with_durability(durability))
}

async fn checkpoints<S: stategraph::State>(app: &CompiledGraph<S>, config: &RunConfig) -> usize {
    app.get_state_history(config, &ListOptions::default())
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn interrupt_after_every_node_advances_one_node_per_resume() {
    for (durability, counts) in [
        (Durability::Async, [3, 4, 5]),
        (Durability::Exit, [1, 2, 3]),
    ] {
        let (app, config) = no_op_chain(durability);
        let out = app.invoke(Nothing::update(), &config).await.unwrap();
        assert_eq!(
            out.breakpoint,
            Some(Breakpoint::After(vec!["step_1".into()]))
        );
        let mut next = vec![app.get_state(&config).await.unwrap().next];
        let mut counted = vec![checkpoints(&app, &config).await];
        for _ in 0..2 {
            app.invoke(None, &config).await.unwrap();
            next.push(app.get_state(&config).await.unwrap().next);
            counted.push(checkpoints(&app, &config).await);
        }
        assert_eq!(
            next,
            vec![vec!["step_2".to_owned()], vec!["step_3".to_owned()], vec![]],
            "{durability:?}"
        );
        assert_eq!(counted, counts, "{durability:?}");
    }
}

#[tokio::test]
async fn per_call_breakpoints_replace_the_graphs() {
    let (app, _) = no_op_chain(Durability::Async);
    let config = RunConfig::thread("t").with_interrupt_after(Breakpoints::None);
    let out = app.invoke(Nothing::update(), &config).await.unwrap();
    assert!(!out.is_interrupted());

    let config = RunConfig::thread("u").with_interrupt_before(Breakpoints::nodes(["step_3"]));
    let app = StateGraph::<Nothing>::new()
        .add_node(node_fn("step_1", |_: &Nothing| {}))
        .add_node(node_fn("step_3", |_: &Nothing| {}))
        .add_edge(START, "step_1")
        .add_edge("step_1", "step_3")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let out = app.invoke(Nothing::update(), &config).await.unwrap();
    assert_eq!(
        out.breakpoint,
        Some(Breakpoint::Before(vec!["step_3".into()]))
    );
    assert_eq!(app.get_state(&config).await.unwrap().next, vec!["step_3"]);
    // Resuming with the same per-call breakpoint does not stop at it again.
    let out = app.invoke(None, &config).await.unwrap();
    assert!(!out.is_interrupted());
    assert!(app.get_state(&config).await.unwrap().next.is_empty());
}

// ---------------------------------------------------------------- scenario 17

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Rag {
    query: String,
    #[reducer(sorted_add)]
    docs: Vec<String>,
    answer: String,
}

fn sorted_add(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a.sort();
    a
}

#[tokio::test]
async fn interrupt_before_a_join_then_update_state_then_resume() {
    let app = StateGraph::<Rag>::new()
        .add_node(node_fn("rewrite_query", |s: &Rag| {
            Rag::update().query(format!("query: {}", s.query))
        }))
        .add_node(node_fn("analyzer_one", |s: &Rag| {
            Rag::update().query(format!("analyzed: {}", s.query))
        }))
        .add_node(node_fn("retriever_one", |_: &Rag| {
            Rag::update().docs(vec!["doc1".into(), "doc2".into()])
        }))
        .add_node(node_fn("retriever_two", |_: &Rag| {
            Rag::update().docs(vec!["doc3".into(), "doc4".into()])
        }))
        .add_node(node_fn("qa", |s: &Rag| {
            Rag::update().answer(s.docs.join(","))
        }))
        .add_edge(START, "rewrite_query")
        .add_edge("rewrite_query", "analyzer_one")
        .add_edge("analyzer_one", "retriever_one")
        .add_edge("rewrite_query", "retriever_two")
        .add_edge(("retriever_one", "retriever_two"), "qa")
        .add_edge("qa", END)
        .interrupt_before("qa")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let events = collect(app.stream(
        Rag::update().query("what is weather in sf".into()),
        &config,
        StreamMode::Updates,
    ))
    .await;
    assert!(
        matches!(events.last(), Some(StreamEvent::Interrupt(i)) if i.is_empty()),
        "{events:?}"
    );
    app.update_state(&config, Rag::update().docs(vec!["doc5".into()]), None)
        .await
        .unwrap();
    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.next, vec!["qa"]);
    let metadata = snapshot.metadata.unwrap();
    assert_eq!(metadata.step, 4);
    assert_eq!(
        snapshot.values.docs,
        ["doc1", "doc2", "doc3", "doc4", "doc5"]
    );
    let events = collect(app.stream(None, &config, StreamMode::Updates)).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let StreamEvent::Updates { node, .. } = &events[0] else {
        panic!()
    };
    assert_eq!(&**node, "qa");
    assert_eq!(
        app.get_state(&config).await.unwrap().values.answer,
        "doc1,doc2,doc3,doc4,doc5"
    );
}

// ---------------------------------------------------------------- scenario 39

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Trail {
    #[reducer(concat)]
    value: Vec<String>,
}

#[tokio::test]
async fn replaying_before_an_interrupt_asks_again_on_a_fork() {
    let a_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&a_calls);
    let app = StateGraph::<Trail>::new()
        .add_node(node_fn("a", move |_: &Trail| {
            calls.fetch_add(1, Ordering::SeqCst);
            Trail::update().value(vec!["a".into()])
        }))
        .add_node(node_fn(
            "ask",
            |_: &Trail, ctx: &Context| -> Result<TrailUpdate, NodeError> {
                let answer: String = ctx.interrupt("What is your input?")?;
                Ok(Trail::update().value(vec![format!("human:{answer}")]))
            },
        ))
        .add_node(node_fn("b", |_: &Trail| {
            Trail::update().value(vec!["b".into()])
        }))
        .add_edge(START, "a")
        .add_edge("a", "ask")
        .add_edge("ask", "b")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    app.invoke(Trail::update(), &config).await.unwrap();
    let out = app.invoke(Command::resume("old"), &config).await.unwrap();
    assert_eq!(out.value, ["a", "human:old", "b"]);
    let history = app
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 5);
    let before_ask = history
        .iter()
        .find(|s| s.next == ["ask"])
        .expect("a checkpoint before ask");

    let replay = RunConfig::at_checkpoint(&before_ask.config);
    let out = app.invoke(None, &replay).await.unwrap();
    assert_eq!(out.value, ["a"]);
    assert_eq!(out.interrupts[0].value, json!("What is your input?"));
    assert_eq!(a_calls.load(Ordering::SeqCst), 1, "a is not re-run");
    let latest = app.get_state(&config).await.unwrap();
    assert_eq!(latest.next, vec!["ask"]);
    assert_eq!(
        latest.metadata.as_ref().map(|m| m.source),
        Some(stategraph::checkpoint::CheckpointSource::Fork)
    );

    let out = app.invoke(Command::resume("new"), &config).await.unwrap();
    assert_eq!(out.value, ["a", "human:new", "b"]);
    assert_eq!(
        checkpoints(&app, &config).await,
        8,
        "the old branch is kept"
    );
}

// ---------------------------------------------------------------- bad input

/// A policy that retries any error: the tests using it check that pauses and
/// answers of the wrong type are not retried even so.
fn retry_any(attempts: u32) -> RetryPolicy {
    RetryPolicy::new().max_attempts(attempts).retry_on(|_| true)
}

/// Without a checkpointer a pause could never be answered: the node's
/// `interrupt` fails the run at the step that asked, naming the node and the
/// fix, and a resume is an error too. LangGraph 1.2.22 reports the interrupt
/// and fails only at the resume (a deliberate difference, docs/semantics.md
/// §10), for `ask` returning `{"a": interrupt("what?")}` compiled without a
/// checkpointer:
///
/// ```text
/// invoke({"a": ""})            -> {'a': '', '__interrupt__': [Interrupt(value='what?', id='4f71…')]}
/// invoke(Command(resume="yes")) -> RuntimeError: Cannot use Command(resume=...) without checkpointer
/// ```
#[tokio::test]
async fn interrupt_or_resume_without_a_checkpointer_is_an_error() {
    let app = StateGraph::<Age>::new()
        .add_node(ask_age)
        .add_edge(START, ask_age)
        .compile()
        .unwrap();
    let err = app
        .invoke(Command::resume("19"), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NoCheckpointer(_)), "{err}");
    let err = app
        .invoke(Age::update(), &RunConfig::new())
        .await
        .unwrap_err();
    match &err {
        GraphError::InterruptWithoutCheckpointer { node, step, value } => {
            assert_eq!((node.as_str(), *step), ("ask_age", 1));
            assert_eq!(value, &json!("what is your age?"));
        }
        other => panic!("expected InterruptWithoutCheckpointer, got {other:?}"),
    }
    assert!(err.to_string().contains("compile_with(saver)"), "{err}");
}

#[tokio::test]
async fn resume_of_a_thread_with_nothing_pending_is_an_error() {
    let app = StateGraph::<Age>::new()
        .add_node(ask_age)
        .add_edge(START, ask_age)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let fresh = app
        .invoke(Command::resume("19"), &RunConfig::thread("new"))
        .await
        .unwrap_err();
    assert!(matches!(fresh, GraphError::InvalidResume(_)), "{fresh}");
    assert!(fresh.to_string().contains("no checkpoint"), "{fresh}");

    let config = RunConfig::thread("t");
    app.invoke(Age::update(), &config).await.unwrap();
    app.invoke(Command::resume("30"), &config).await.unwrap();
    let before = app.get_state(&config).await.unwrap();
    let done = app
        .invoke(Command::resume("40"), &config)
        .await
        .unwrap_err();
    assert!(matches!(done, GraphError::InvalidResume(_)), "{done}");
    assert!(done.to_string().contains("no pending interrupt"), "{done}");
    let after = app.get_state(&config).await.unwrap();
    assert_eq!(after.values, before.values);
    assert_eq!(after.config, before.config, "no checkpoint was written");
}

#[tokio::test]
async fn a_resume_map_with_an_unknown_id_is_an_error() {
    let app = parallel_questions();
    let config = RunConfig::thread("t");
    let out = app.invoke(texts(), &config).await.unwrap();
    let err = app
        .invoke(
            Command::resume_map([("0123456789abcdef0123456789abcdef", "x")]),
            &config,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::InvalidResume(_)), "{err}");
    assert!(err.to_string().contains(&out.interrupts[0].id), "{err}");
}

#[tokio::test]
async fn a_resume_value_of_the_wrong_type_fails_and_leaves_the_thread_resumable() {
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
    struct Count {
        n: u32,
    }
    let app = StateGraph::<Count>::new()
        .add_node(node_fn(
            "ask",
            |_: &Count, ctx: &Context| -> Result<CountUpdate, NodeError> {
                let n: u32 = ctx.interrupt("how many?")?;
                Ok(Count::update().n(n))
            },
        ))
        .add_edge(START, "ask")
        .retry_policy(retry_any(3))
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    app.invoke(Count::update(), &config).await.unwrap();
    let before = app.get_state(&config).await.unwrap();

    let err = app
        .invoke(Command::resume("many"), &config)
        .await
        .unwrap_err();
    let GraphError::NodeFailed { node, source, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(node, "ask");
    let mismatch = source.downcast_ref::<ResumeTypeError>().expect("typed");
    assert_eq!(mismatch.expected, "u32");
    assert!(mismatch.to_string().contains("\"many\""), "{mismatch}");
    let after = app.get_state(&config).await.unwrap();
    assert_eq!(after.values, before.values);
    assert_eq!(after.next, vec!["ask"]);

    let out = app.invoke(Command::resume(7), &config).await.unwrap();
    assert_eq!(out.n, 7);
}

#[tokio::test]
async fn an_empty_command_is_an_empty_input_error() {
    let app = two_questions(Arc::default());
    let config = RunConfig::thread("t");
    app.invoke(Market::update(), &config).await.unwrap();
    let err = app
        .invoke(Command::<&'static str, MarketUpdate>::default(), &config)
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::EmptyInput(_)), "{err}");
    assert!(err.to_string().contains("empty Command"), "{err}");
}

#[tokio::test]
async fn a_node_cannot_return_command_resume() {
    let app = StateGraph::<Plain>::new()
        .add_node(node_fn(
            "bad",
            |_: &Plain| -> Command<&'static str, PlainUpdate> { Command::resume("x") },
        ))
        .add_edge(START, "bad")
        .compile()
        .unwrap();
    let err = app
        .invoke(Plain::update(), &RunConfig::new())
        .await
        .unwrap_err();
    let report = format!(
        "{err}: {}",
        std::error::Error::source(&err).expect("the node's error")
    );
    assert!(report.contains("only graph input"), "{report}");
}

#[tokio::test]
async fn command_goto_on_a_new_thread_is_an_error_and_its_update_is_input() {
    let app = StateGraph::<Plain>::new()
        .add_node(node_fn("node1", |s: &Plain| {
            Plain::update().foo(format!("{}!", s.foo))
        }))
        .add_edge(START, "node1")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let err = app
        .invoke(Command::goto("node1"), &RunConfig::thread("a"))
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::InvalidUpdate(_)), "{err}");
    let out = app
        .invoke(
            Command::update_only(Plain::update().foo("hi".into())),
            &RunConfig::thread("b"),
        )
        .await
        .unwrap();
    assert_eq!(out.foo, "hi!");
    let err = app
        .invoke(Command::goto("nope"), &RunConfig::thread("b"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`nope`"), "{err}");
}

#[tokio::test]
async fn breakpoints_at_unknown_nodes_are_reported() {
    let err = StateGraph::<Plain>::new()
        .add_node(node_fn("node1", |_: &Plain| {}))
        .add_edge(START, "node1")
        .interrupt_before("nope")
        .compile()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("interrupt_before names node `nope`"),
        "{err}"
    );

    let app = StateGraph::<Plain>::new()
        .add_node(node_fn("node1", |_: &Plain| {}))
        .add_edge(START, "node1")
        .compile()
        .unwrap();
    let err = app
        .invoke(
            Plain::update(),
            &RunConfig::new().with_interrupt_after(Breakpoints::nodes(["nope"])),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::InvalidConfig(_)), "{err}");
}

#[tokio::test]
async fn interrupts_are_not_retried_and_completed_siblings_do_not_rerun() {
    let sibling_calls = Arc::new(AtomicUsize::new(0));
    let asker_calls = Arc::new(AtomicUsize::new(0));
    let (s, a) = (Arc::clone(&sibling_calls), Arc::clone(&asker_calls));
    let app = StateGraph::<Texts>::new()
        .add_node(node_fn("sibling", move |_: &Texts| {
            s.fetch_add(1, Ordering::SeqCst);
            Texts::update().text_1("sibling".into())
        }))
        .add_node(node_fn(
            "asker",
            move |_: &Texts, ctx: &Context| -> Result<TextsUpdate, NodeError> {
                a.fetch_add(1, Ordering::SeqCst);
                let t: String = ctx.interrupt("?")?;
                Ok(Texts::update().text_2(t))
            },
        ))
        .add_edge(START, "sibling")
        .add_edge(START, "asker")
        .retry_policy(retry_any(5))
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app.invoke(Texts::update(), &config).await.unwrap();
    assert_eq!(out.text_1, "sibling");
    assert_eq!(asker_calls.load(Ordering::SeqCst), 1, "not retried");
    let out = app
        .invoke(Command::resume("answer"), &config)
        .await
        .unwrap();
    assert_eq!(
        (out.text_1.as_str(), out.text_2.as_str()),
        ("sibling", "answer")
    );
    assert_eq!(
        sibling_calls.load(Ordering::SeqCst),
        1,
        "sibling not re-run"
    );
    assert_eq!(asker_calls.load(Ordering::SeqCst), 2);
}

/// `graph` (with a node `other`, async, that waits once before it ends) with
/// `sibling` (sync, counted in the returned counter): both run in one step.
fn sibling_and(graph: StateGraph<Texts>) -> (CompiledGraph<Texts>, Arc<AtomicUsize>) {
    let sibling_calls = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&sibling_calls);
    let app = graph
        .add_node(node_fn("sibling", move |_: &Texts| {
            s.fetch_add(1, Ordering::SeqCst);
            Texts::update().text_1("sibling".into())
        }))
        .add_edge(START, "sibling")
        .add_edge(START, "other")
        .compile_with(InMemorySaver::new())
        .unwrap();
    (app, sibling_calls)
}

/// A sibling that completed while the other task of its step still ran
/// (and then paused) is not run again on resume, under every durability:
/// under `exit` its writes were held by the run and stored with the paused
/// step's checkpoint, after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sibling_completed_before_an_async_pause_does_not_rerun() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let (app, sibling_calls) = sibling_and(StateGraph::new().add_node(
            stategraph::async_node_fn("other", |_: Arc<Texts>, ctx: Context| async move {
                // Pending once: the sibling completes first.
                tokio::task::yield_now().await;
                let t: String = ctx.interrupt("?")?;
                Ok::<_, NodeError>(Texts::update().text_2(t))
            }),
        ));
        let config = RunConfig::thread("t").with_durability(durability);
        let out = app.invoke(Texts::update(), &config).await.unwrap();
        assert!(out.is_interrupted(), "{durability:?}");
        let out = app
            .invoke(Command::resume("answer"), &config)
            .await
            .unwrap();
        assert_eq!(
            (
                out.text_1.as_str(),
                out.text_2.as_str(),
                sibling_calls.load(Ordering::SeqCst)
            ),
            ("sibling", "answer", 1),
            "{durability:?}"
        );
    }
}

/// As above, with the other task failing instead of pausing: the thread,
/// run again, re-runs only the failed task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sibling_completed_before_an_async_failure_does_not_rerun() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let failures_left = Arc::new(AtomicUsize::new(1));
        let (app, sibling_calls) = sibling_and(StateGraph::new().add_node(
            stategraph::async_node_fn("other", move |_: Arc<Texts>, _ctx| {
                let failures_left = Arc::clone(&failures_left);
                async move {
                    tokio::task::yield_now().await;
                    let fail =
                        failures_left
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
                    match fail {
                        Ok(_) => Err(NodeError::msg("not yet")),
                        Err(_) => Ok(Texts::update().text_2("done".into())),
                    }
                }
            }),
        ));
        let config = RunConfig::thread("t").with_durability(durability);
        let failed = app.invoke(Texts::update(), &config).await;
        assert!(failed.is_err(), "{durability:?}");
        let out = app.invoke(None, &config).await.unwrap();
        assert_eq!(
            (
                out.text_1.as_str(),
                out.text_2.as_str(),
                sibling_calls.load(Ordering::SeqCst)
            ),
            ("sibling", "done", 1),
            "{durability:?}"
        );
    }
}

#[tokio::test]
async fn graph_input_can_be_built_generically() {
    async fn run<S: stategraph::State>(
        app: &CompiledGraph<S>,
        update: S::Update,
    ) -> Result<GraphOutput<S>, GraphError> {
        app.invoke(GraphInput::update(update), &RunConfig::new())
            .await
    }
    let app = StateGraph::<Plain>::new()
        .add_node(node_fn("node1", |s: &Plain| {
            Plain::update().foo(format!("{}!", s.foo))
        }))
        .add_edge(START, "node1")
        .compile()
        .unwrap();
    let out = run(&app, Plain::update().foo("x".into())).await.unwrap();
    assert_eq!(out.foo, "x!");
}

// ---------------------------------------------------------------- durability

#[tokio::test]
async fn a_paused_thread_survives_reopening_the_sqlite_file() {
    use stategraph::sqlite::SqliteSaver;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hitl.db");
    let config = RunConfig::thread("t");
    let open = || async {
        StateGraph::<Market>::new()
            .add_node(node_fn(
                "node",
                |_: &Market, ctx: &Context| -> Result<MarketUpdate, NodeError> {
                    let a: String = ctx.interrupt("first")?;
                    let b: String = ctx.interrupt("second")?;
                    Ok(Market::update().my_key(format!("{a}+{b}")))
                },
            ))
            .add_edge(START, "node")
            .compile_with(SqliteSaver::open(&path).await.unwrap())
            .unwrap()
    };
    {
        let app = open().await;
        app.invoke(Market::update().my_key(">".into()), &config)
            .await
            .unwrap();
        let out = app.invoke(Command::resume("a"), &config).await.unwrap();
        assert_eq!(out.interrupts[0].value, json!("second"));
    }
    // A new saver on the same file, as a second process would open it.
    let app = open().await;
    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.interrupts[0].value, json!("second"));
    let out = app.invoke(Command::resume("b"), &config).await.unwrap();
    assert_eq!(out.my_key, ">a+b");
}

#[tokio::test]
async fn durability_exit_stores_the_paused_step_once() {
    let app = two_questions(Arc::default());
    let config = RunConfig::thread("t").with_durability(Durability::Exit);
    app.invoke(Market::update().my_key("x".into()), &config)
        .await
        .unwrap();
    assert_eq!(checkpoints(&app, &config).await, 1);
    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.next, vec!["node"]);
    assert_eq!(snapshot.interrupts.len(), 1);
    app.invoke(Command::resume("a"), &config).await.unwrap();
    let out = app.invoke(Command::resume("b"), &config).await.unwrap();
    assert_eq!(out.my_key, "xa b");
    assert_eq!(checkpoints(&app, &config).await, 2);
}

#[tokio::test]
async fn a_failing_sibling_keeps_the_interrupt_of_the_task_that_paused() {
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let failing = Arc::clone(&fail);
    let app = StateGraph::<Texts>::new()
        .add_node(node_fn(
            "flaky",
            move |_: &Texts| -> Result<TextsUpdate, NodeError> {
                if failing.load(Ordering::SeqCst) {
                    return Err(NodeError::msg("boom"));
                }
                Ok(Texts::update().text_1("fixed".into()))
            },
        ))
        .add_node(node_fn(
            "asker",
            |_: &Texts, ctx: &Context| -> Result<TextsUpdate, NodeError> {
                let t: String = ctx.interrupt("?")?;
                Ok(Texts::update().text_2(t))
            },
        ))
        .add_edge(START, "flaky")
        .add_edge(START, "asker")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let err = app.invoke(Texts::update(), &config).await.unwrap_err();
    assert!(
        matches!(err, GraphError::NodeFailed { ref node, .. } if node == "flaky"),
        "{err}"
    );
    let snapshot = app.get_state(&config).await.unwrap();
    let asker = snapshot.tasks.iter().find(|t| t.name == "asker").unwrap();
    let flaky = snapshot.tasks.iter().find(|t| t.name == "flaky").unwrap();
    assert_eq!(asker.interrupts.len(), 1);
    assert!(flaky.error.as_deref().unwrap_or_default().contains("boom"));

    fail.store(false, Ordering::SeqCst);
    let out = app.invoke(Command::resume("ok"), &config).await.unwrap();
    assert_eq!((out.text_1.as_str(), out.text_2.as_str()), ("fixed", "ok"));
}

#[tokio::test]
async fn an_update_without_resume_reruns_the_paused_node_which_asks_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = two_questions(Arc::clone(&calls));
    let config = RunConfig::thread("t");
    let first = app
        .invoke(Market::update().my_key("x".into()), &config)
        .await
        .unwrap();
    let again = app
        .invoke(
            Command::update_only(Market::update().market("FR".into())),
            &config,
        )
        .await
        .unwrap();
    assert_eq!(again.interrupts, first.interrupts);
    assert_eq!(again.market, "FR");
    let again = app.invoke(None, &config).await.unwrap();
    assert_eq!(again.interrupts, first.interrupts);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

mod swallowed_signals {
    //! A pause is recorded where `ctx.interrupt` raises it: a node that handles
    //! its errors generically (`.ok()`, `unwrap_or`, `map_err` to an error of its
    //! own, a retry-anything policy) still pauses, and is not retried.
    use super::*;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
    struct Named {
        name: String,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("the approval step failed")]
    struct ApprovalFailed;

    /// Deliberately unlike LangGraph 1.2.22, where a node that catches the
    /// pause (`try: v = interrupt("who?") except Exception: v = "nobody"`) runs
    /// on: `invoke` returns `{'name': 'nobody'}` and nothing is next.
    #[tokio::test]
    async fn a_node_that_swallows_its_interrupt_still_pauses() {
        let app = StateGraph::<Named>::new()
            .add_node(node_fn("ask", |_: &Named, ctx: &Context| {
                // The node treats every error alike and carries on.
                let name: String = ctx
                    .interrupt("who?")
                    .unwrap_or_else(|_| "nobody".to_owned());
                Named::update().name(name)
            }))
            .add_edge(START, "ask")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("t");
        let paused = app.invoke(Named::update(), &config).await.unwrap();
        assert_eq!(paused.interrupts.len(), 1, "{paused:?}");
        assert_eq!(paused.interrupts[0].value, "who?");
        assert_eq!(
            paused.name, "",
            "the swallowed pause's result was discarded"
        );
        assert_eq!(app.get_state(&config).await.unwrap().next, ["ask"]);
        let done = app.invoke(Command::resume("ada"), &config).await.unwrap();
        assert!(done.interrupts.is_empty());
        assert_eq!(done.name, "ada");
    }

    #[tokio::test]
    async fn a_pause_mapped_to_another_error_is_not_retried_and_still_pauses() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&attempts);
        let app = StateGraph::<Named>::new()
            .add_node(node_fn(
                "ask",
                move |_: &Named, ctx: &Context| -> Result<NamedUpdate, NodeError> {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let name: String = ctx.interrupt("who?").map_err(|_| ApprovalFailed)?;
                    Ok(Named::update().name(name))
                },
            ))
            .retry_policy(retry_any(5))
            .add_edge(START, "ask")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("t");
        let paused = app.invoke(Named::update(), &config).await.unwrap();
        assert_eq!(paused.interrupts.len(), 1, "paused, not failed: {paused:?}");
        assert_eq!(
            attempts.load(Ordering::SeqCst),
            1,
            "a pause is never retried"
        );
        let done = app.invoke(Command::resume("grace"), &config).await.unwrap();
        assert_eq!(done.name, "grace");
    }
}
