//! Subgraphs (docs/semantics.md §8; scenarios 21–24, 36 of its appendix A): a
//! compiled graph as a node (shared or mapped state, reached by edges or by
//! `send`), run from inside a node, checkpoint namespaces, and interrupts inside
//! subgraphs.

use futures::StreamExt;
use serde_json::json;
use stategraph::checkpoint::{CheckpointConfig, Checkpointer, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::{Breakpoint, StreamEvent, Subgraph, SubgraphCheckpoints};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn add_str(a: String, b: String) -> String {
    a + &b
}

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

fn shared_saver() -> Arc<dyn Checkpointer> {
    Arc::new(InMemorySaver::new())
}

async fn all_checkpoints(saver: &Arc<dyn Checkpointer>, thread: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for t in saver
        .list(None, &ListOptions::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.config.thread_id == thread)
    {
        out.push((t.config.checkpoint_ns.to_string(), t.metadata.step));
    }
    out
}

// ---------------------------------------------------------------- scenario 21

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Key {
    my_key: String,
    my_other_key: String,
}

fn inner_there() -> CompiledGraph<Key> {
    StateGraph::<Key>::new()
        .add_node(node_fn("up", |s: &Key| {
            Key::update().my_key(format!("{} there", s.my_key))
        }))
        .add_edge(START, "up")
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_graph_with_the_same_state_runs_as_a_node() {
    let app = StateGraph::<Key>::new()
        .add_node(Subgraph::new("inner", inner_there()))
        .add_node(node_fn("side", |s: &Key| {
            Key::update().my_key(format!("{} and back again", s.my_key))
        }))
        .add_edge(START, "inner")
        .add_edge("inner", "side")
        .compile()
        .unwrap();
    let input = || Key::update().my_key("my value".into());
    let out = app.invoke(input(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.my_key, "my value there and back again");

    let mut updates = Vec::new();
    let mut stream = app.stream(input(), &RunConfig::new(), StreamMode::Updates);
    while let Some(event) = stream.next().await {
        if let StreamEvent::Updates { node, updates: u } = event.unwrap() {
            assert_eq!(u.len(), 1);
            updates.push((node.to_string(), u[0].my_key.clone()));
        }
    }
    assert_eq!(
        updates,
        [
            ("inner".to_owned(), Some("my value there".to_owned())),
            (
                "side".to_owned(),
                Some("my value there and back again".to_owned())
            ),
        ]
    );
    let mut values = 0;
    let mut stream = app.stream(input(), &RunConfig::new(), StreamMode::Values);
    while let Some(event) = stream.next().await {
        assert!(matches!(event.unwrap(), StreamEvent::Values(_)));
        values += 1;
    }
    assert_eq!(values, 3, "input, after inner, after side");
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Shared {
    #[reducer(concat)]
    items: Vec<String>,
}

#[tokio::test]
async fn a_shared_reducer_field_gets_the_childs_full_value_again() {
    // LangGraph semantics: the child's output is its whole final state, written
    // back through the parent's reducer.
    let inner = StateGraph::<Shared>::new()
        .add_node(node_fn("i1", |_: &Shared| {
            Shared::update().items(vec!["i1".into()])
        }))
        .add_node(node_fn("r", |_: &Shared| {
            Shared::update().items(vec!["R".into()])
        }))
        .add_edge(START, "i1")
        .add_edge("i1", "r")
        .compile()
        .unwrap();
    let app = StateGraph::<Shared>::new()
        .add_node(Subgraph::new("inner", inner))
        .add_edge(START, "inner")
        .compile()
        .unwrap();
    let out = app
        .invoke(Shared::update().items(vec!["p".into()]), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.items, ["p", "p", "i1", "R"]);
}

// ---------------------------------------------------------------- fan-out to a mapped subgraph

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct JokeState {
    subject: String,
    jokes: Vec<String>,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Show {
    subjects: Vec<String>,
    #[reducer(concat)]
    jokes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct JokeInput {
    subject: String,
}

fn joke_graph() -> CompiledGraph<JokeState> {
    StateGraph::<JokeState>::new()
        .add_node(node_fn("edit", |s: &JokeState| {
            JokeState::update().subject(format!("{} - hohoho", s.subject))
        }))
        .add_node(node_fn("generate", |s: &JokeState| {
            JokeState::update().jokes(vec![format!("Joke about {}", s.subject)])
        }))
        .add_node(node_fn("bump", |s: &JokeState| {
            JokeState::update().jokes(vec![format!("{} a", s.jokes[0])])
        }))
        .add_edge(START, "edit")
        .add_edge("edit", "generate")
        .add_edge("generate", "bump")
        .add_edge("generate", END)
        .add_conditional_edges("bump", |s: &JokeState| {
            if s.jokes[0].ends_with(&" a".repeat(3)) {
                END
            } else {
                "bump"
            }
        })
        .compile()
        .unwrap()
}

type JokeNode = Subgraph<Show, JokeInput, JokeState>;

fn joke_node() -> JokeNode {
    Subgraph::mapped(
        "generate_joke",
        joke_graph(),
        |i: &JokeInput| JokeState::update().subject(i.subject.clone()),
        |done: JokeState| Show::update().jokes(done.jokes),
    )
}

fn show(node: JokeNode) -> StateGraph<Show> {
    let target = node.clone();
    StateGraph::<Show>::new()
        .add_node(node)
        .add_conditional_edges(START, move |s: &Show| {
            s.subjects
                .iter()
                .map(|subject| {
                    send(
                        &target,
                        JokeInput {
                            subject: subject.clone(),
                        },
                    )
                })
                .collect::<Vec<_>>()
        })
        .add_edge("generate_joke", END)
}

#[tokio::test]
async fn sends_fan_out_to_a_subgraph_with_its_own_state_and_results_merge_in_send_order() {
    let subjects: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
    for saver in [None, Some(shared_saver())] {
        let graph = show(joke_node());
        let (app, config) = match &saver {
            Some(saver) => (
                graph.compile_with(Arc::clone(saver)).unwrap(),
                RunConfig::thread("t"),
            ),
            None => (graph.compile().unwrap(), RunConfig::new()),
        };
        let out = app
            .invoke(Show::update().subjects(subjects.clone()), &config)
            .await
            .unwrap();
        let expected: Vec<String> = subjects
            .iter()
            .map(|s| format!("Joke about {s} - hohoho a a a"))
            .collect();
        assert_eq!(out.jokes, expected);
        if let Some(saver) = saver {
            // One namespace per subgraph task: `generate_joke:<task id>`.
            let namespaces: std::collections::BTreeSet<String> = all_checkpoints(&saver, "t")
                .await
                .into_iter()
                .map(|(ns, _)| ns)
                .filter(|ns| !ns.is_empty())
                .collect();
            assert_eq!(namespaces.len(), 20);
            assert!(namespaces.iter().all(|ns| ns.starts_with("generate_joke:")));
        }
    }
}

// ---------------------------------------------------------------- interrupts (scenario 36)

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Child {
    prompt: String,
    human_input: String,
    #[reducer(concat)]
    human_inputs: Vec<String>,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Prompts {
    prompts: Vec<String>,
    #[reducer(concat)]
    human_inputs: Vec<String>,
}

fn child_graph(calls: Arc<AtomicUsize>) -> CompiledGraph<Child> {
    StateGraph::<Child>::new()
        .add_node(node_fn(
            "ask",
            move |s: &Child, ctx: &Context| -> Result<ChildUpdate, NodeError> {
                calls.fetch_add(1, Ordering::SeqCst);
                let answer: String = ctx.interrupt(&s.prompt)?;
                Ok(Child::update()
                    .human_input(answer.clone())
                    .human_inputs(vec![answer]))
            },
        ))
        .add_edge(START, "ask")
        .compile()
        .unwrap()
}

fn prompts_app(calls: Arc<AtomicUsize>) -> CompiledGraph<Prompts> {
    let child = Subgraph::mapped(
        "child_graph",
        child_graph(calls),
        |prompt: &String| Child::update().prompt(prompt.clone()),
        |done: Child| Prompts::update().human_inputs(done.human_inputs),
    );
    let target = child.clone();
    StateGraph::<Prompts>::new()
        .add_node(child)
        .add_conditional_edges(START, move |s: &Prompts| {
            s.prompts
                .iter()
                .map(|p| send(&target, p.clone()))
                .collect::<Vec<_>>()
        })
        .compile_with(InMemorySaver::new())
        .unwrap()
}

#[tokio::test]
async fn interrupts_in_send_spawned_subgraphs_resume_by_id_in_send_order() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = prompts_app(Arc::clone(&calls));
    let config = RunConfig::thread("t");
    let prompts: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
    let out = app
        .invoke(Prompts::update().prompts(prompts.clone()), &config)
        .await
        .unwrap();
    let asked: Vec<String> = out
        .interrupts
        .iter()
        .map(|i| i.value_as().unwrap())
        .collect();
    assert_eq!(asked, prompts);
    let ids: std::collections::BTreeSet<&str> =
        out.interrupts.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids.len(), 5, "each child task has its own interrupt id");
    assert_eq!(
        app.get_state(&config).await.unwrap().interrupts,
        out.interrupts
    );

    // One value for five paused children: ambiguous.
    let err = app.invoke(Command::resume("x"), &config).await.unwrap_err();
    assert!(matches!(err, GraphError::InvalidResume(_)), "{err}");

    let answers = out.interrupts.iter().map(|i| {
        let p: String = i.value_as().unwrap();
        (i.id.clone(), format!("human input for prompt {p}"))
    });
    let done = app
        .invoke(Command::resume_map(answers), &config)
        .await
        .unwrap();
    assert!(!done.is_interrupted());
    let expected: Vec<String> = prompts
        .iter()
        .map(|p| format!("human input for prompt {p}"))
        .collect();
    assert_eq!(done.human_inputs, expected);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        10,
        "each child asked once, answered once"
    );
}

#[tokio::test]
async fn resuming_some_children_leaves_the_others_paused_without_rerunning_the_done_ones() {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = prompts_app(Arc::clone(&calls));
    let config = RunConfig::thread("t");
    let prompts: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let out = app
        .invoke(Prompts::update().prompts(prompts.clone()), &config)
        .await
        .unwrap();
    let b = out.interrupts[1].clone();
    let partial = app
        .invoke(Command::resume_map([(b.id.clone(), "B")]), &config)
        .await
        .unwrap();
    assert_eq!(partial.interrupts.len(), 2);
    assert_eq!(partial.human_inputs, ["B"]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3 + 3,
        "b answered, a and c asked again"
    );
    let rest = partial
        .interrupts
        .iter()
        .map(|i| (i.id.clone(), i.value_as::<String>().unwrap().to_uppercase()));
    let done = app
        .invoke(Command::resume_map(rest), &config)
        .await
        .unwrap();
    assert_eq!(done.human_inputs, ["A", "B", "C"]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        6 + 2,
        "the finished child b did not run again"
    );
}

// ---------------------------------------------------------------- scenario 24 (function node)

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Foo {
    foo: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Bar {
    bar: String,
}

/// A graph whose one node, `ask`, asks for a value to append.
fn baz_asker() -> CompiledGraph<Bar> {
    StateGraph::<Bar>::new()
        .add_node(node_fn(
            "ask",
            |s: &Bar, ctx: &Context| -> Result<BarUpdate, NodeError> {
                let answer: String = ctx.interrupt("Provide baz value")?;
                Ok(Bar::update().bar(format!("{}{answer}", s.bar)))
            },
        ))
        .add_edge(START, "ask")
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_subgraph_invoked_from_a_node_pauses_and_resumes_with_its_caller() {
    let saver = shared_saver();
    let sub = baz_asker();
    let app = StateGraph::<Foo>::new()
        .add_node(node_fn("parent_node", |s: &Foo| {
            Foo::update().foo(format!("hi! {}", s.foo))
        }))
        .add_node(async_node_fn(
            "call_subgraph",
            move |s: Arc<Foo>, ctx: Context| {
                let sub = sub.clone();
                async move {
                    let done = sub
                        .invoke_nested(&ctx, Bar::update().bar(s.foo.clone()))
                        .await?;
                    Ok::<_, NodeError>(Foo::update().foo(done.bar))
                }
            },
        ))
        .add_edge(START, "parent_node")
        .add_edge("parent_node", "call_subgraph")
        .compile_with(Arc::clone(&saver))
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app
        .invoke(Foo::update().foo("foo".into()), &config)
        .await
        .unwrap();
    assert_eq!(out.foo, "hi! foo");
    assert_eq!(out.interrupts.len(), 1);
    assert_eq!(out.interrupts[0].value, json!("Provide baz value"));

    // The child's own checkpoint, in the calling task's namespace.
    let snapshot = app.get_state(&config).await.unwrap();
    let task = &snapshot.tasks[0];
    assert_eq!(task.name, "call_subgraph");
    let child_ns = format!("call_subgraph:{}", task.id);
    let child = saver
        .get_tuple(&CheckpointConfig {
            thread_id: "t".into(),
            checkpoint_ns: child_ns.clone().into(),
            checkpoint_id: None,
        })
        .await
        .unwrap()
        .expect("the subgraph's checkpoint");
    assert_eq!(
        child.checkpoint.channel_values["bar"].as_str(),
        "\"hi! foo\""
    );
    assert_eq!(
        child.metadata.parents.get("").map(String::as_str),
        snapshot.config.checkpoint_id.as_deref(),
        "the child's checkpoint names the parent's"
    );

    let out = app.invoke(Command::resume("baz"), &config).await.unwrap();
    assert_eq!(out.foo, "hi! foobaz");
    assert!(!out.is_interrupted());
}

#[tokio::test]
async fn two_subgraph_calls_in_one_node_get_their_own_namespaces() {
    let saver = shared_saver();
    let sub = StateGraph::<Bar>::new()
        .add_node(node_fn("b", |s: &Bar| {
            Bar::update().bar(format!("{}!", s.bar))
        }))
        .add_edge(START, "b")
        .compile()
        .unwrap();
    let app = StateGraph::<Foo>::new()
        .add_node(async_node_fn("twice", move |s: Arc<Foo>, ctx: Context| {
            let sub = sub.clone();
            async move {
                let one = sub
                    .invoke_nested(&ctx, Bar::update().bar(s.foo.clone()))
                    .await?;
                let two = sub.invoke_nested(&ctx, Bar::update().bar(one.bar)).await?;
                Ok::<_, NodeError>(Foo::update().foo(two.bar))
            }
        }))
        .add_edge(START, "twice")
        .compile_with(Arc::clone(&saver))
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app
        .invoke(Foo::update().foo("x".into()), &config)
        .await
        .unwrap();
    assert_eq!(out.foo, "x!!");
    let namespaces: std::collections::BTreeSet<String> = all_checkpoints(&saver, "t")
        .await
        .into_iter()
        .map(|(ns, _)| ns)
        .filter(|ns| !ns.is_empty())
        .collect();
    let namespaces: Vec<String> = namespaces.into_iter().collect();
    assert_eq!(namespaces.len(), 2, "{namespaces:?}");
    assert!(namespaces[1].ends_with("|1"), "{namespaces:?}");
    assert!(namespaces[1].starts_with(&namespaces[0]));
}

// ---------------------------------------------------------------- scenarios 22 and 23

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Inner {
    #[reducer(add_str)]
    my_key: String,
    my_other_key: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Outer {
    my_key: String,
}

fn reentered(mode: SubgraphCheckpoints) -> (CompiledGraph<Outer>, Arc<dyn Checkpointer>) {
    let inner = StateGraph::<Inner>::new()
        .add_node(node_fn("inner_1", |s: &Inner| {
            Inner::update()
                .my_key(" got here".into())
                .my_other_key(s.my_key.clone())
        }))
        .add_node(node_fn("inner_2", |_: &Inner| {
            Inner::update().my_key(" and there".into())
        }))
        .add_edge(START, "inner_1")
        .add_edge("inner_1", "inner_2")
        .compile()
        .unwrap();
    // As LangGraph passes shared keys: the parent's `my_key` in, the child's out.
    let node = Subgraph::mapped(
        "inner",
        inner,
        |s: &Outer| Inner::update().my_key(s.my_key.clone()),
        |done: Inner| Outer::update().my_key(done.my_key),
    )
    .checkpoints(mode);
    let saver = shared_saver();
    let app = StateGraph::<Outer>::new()
        .add_node(node)
        .add_edge(START, "inner")
        .add_conditional_edges("inner", |s: &Outer| {
            if s.my_key.matches("there").count() < 2 {
                "inner"
            } else {
                END
            }
        })
        .compile_with(Arc::clone(&saver))
        .unwrap();
    (app, saver)
}

#[tokio::test]
async fn a_persistent_subgraph_keeps_its_state_across_calls() {
    let (app, saver) = reentered(SubgraphCheckpoints::Persistent);
    let out = app
        .invoke(Outer::update(), &RunConfig::thread("t"))
        .await
        .unwrap();
    // The second call continues the first call's state: its reducer accumulates.
    assert_eq!(
        out.my_key,
        " got here and there got here and there got here and there"
    );
    let checkpoints = all_checkpoints(&saver, "t").await;
    let root = checkpoints.iter().filter(|(ns, _)| ns.is_empty()).count();
    let inner = checkpoints.iter().filter(|(ns, _)| ns == "inner").count();
    assert_eq!((root, inner, checkpoints.len()), (4, 8, 12));
}

#[tokio::test]
async fn a_per_call_subgraph_starts_fresh_each_call_and_keeps_every_checkpoint() {
    let (app, saver) = reentered(SubgraphCheckpoints::PerCall);
    let out = app
        .invoke(Outer::update(), &RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(out.my_key, " got here and there got here and there");
    let checkpoints = all_checkpoints(&saver, "t").await;
    assert_eq!(checkpoints.len(), 12, "4 for the root, 4 per call");
    let namespaces: std::collections::BTreeSet<&str> = checkpoints
        .iter()
        .map(|(ns, _)| ns.as_str())
        .filter(|ns| !ns.is_empty())
        .collect();
    assert_eq!(namespaces.len(), 2);
    assert!(namespaces.iter().all(|ns| ns.starts_with("inner:")));

    // Under durability `exit`, completed per-call subgraphs store nothing.
    let (app, saver) = reentered(SubgraphCheckpoints::PerCall);
    let config = RunConfig::thread("t").with_durability(stategraph::Durability::Exit);
    app.invoke(Outer::update(), &config).await.unwrap();
    assert_eq!(all_checkpoints(&saver, "t").await.len(), 1);
}

#[tokio::test]
async fn subgraphs_without_checkpoints_store_nothing() {
    let (app, saver) = reentered(SubgraphCheckpoints::Off);
    let out = app
        .invoke(Outer::update(), &RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(out.my_key, " got here and there got here and there");
    let checkpoints = all_checkpoints(&saver, "t").await;
    assert!(checkpoints.iter().all(|(ns, _)| ns.is_empty()));
    assert_eq!(checkpoints.len(), 4);
}

// ---------------------------------------------------------------- breakpoints inside subgraphs

#[tokio::test]
async fn a_breakpoint_inside_a_subgraph_pauses_the_parent_until_resumed() {
    let sibling_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&sibling_calls);
    let inner = StateGraph::<Key>::new()
        .add_node(node_fn("inner_1", |s: &Key| {
            Key::update().my_key(format!("{}got here", s.my_key))
        }))
        .add_node(node_fn("inner_2", |s: &Key| {
            Key::update().my_key(format!("{} and there", s.my_key))
        }))
        .add_edge(START, "inner_1")
        .add_edge("inner_1", "inner_2")
        .interrupt_before("inner_2")
        .compile()
        .unwrap();
    let app = StateGraph::<Key>::new()
        .add_node(Subgraph::mapped(
            "inner",
            inner,
            |s: &Key| Key::update().my_key(s.my_key.clone()),
            |done: Key| Key::update().my_other_key(done.my_key),
        ))
        .add_node(node_fn("outer_1", move |_: &Key| {
            calls.fetch_add(1, Ordering::SeqCst);
            Key::update().my_key(" and parallel".into())
        }))
        .add_node(node_fn("outer_2", |s: &Key| {
            Key::update().my_key(format!("{}{} and back again", s.my_other_key, s.my_key))
        }))
        .add_edge(START, "inner")
        .add_edge(START, "outer_1")
        .add_edge(("inner", "outer_1"), "outer_2")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app.invoke(Key::update(), &config).await.unwrap();
    assert_eq!(out.my_key, " and parallel");
    assert_eq!(
        out.breakpoint,
        Some(Breakpoint::Nested(vec!["inner".into()]))
    );
    assert!(out.interrupts.is_empty());
    let out = app.invoke(None, &config).await.unwrap();
    assert_eq!(out.my_key, "got here and there and parallel and back again");
    assert_eq!(
        sibling_calls.load(Ordering::SeqCst),
        1,
        "outer_1 kept its writes"
    );
}

// ---------------------------------------------------------------- scenario 38 (commands to the parent)

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Dialog {
    #[reducer(concat)]
    dialog_state: Vec<String>,
    jump_from_idx: Option<u32>,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct ChildStep {
    n: u32,
}

fn jumping_child() -> CompiledGraph<ChildStep> {
    StateGraph::<ChildStep>::new()
        .add_node(node_fn("child_node", |_: &ChildStep| {
            Command::goto("node_b_parent")
                .update(Dialog::update().dialog_state(vec!["b_child_state".into()]))
                .to_parent()
        }))
        .add_node(node_fn("never", |_: &ChildStep| ChildStep::update().n(99)))
        .add_edge(START, "child_node")
        .add_edge("child_node", "never")
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_subgraph_node_can_update_and_route_its_parent() {
    let app = StateGraph::<Dialog>::new()
        .add_node(Subgraph::mapped(
            "sub",
            jumping_child(),
            |_: &Dialog| ChildStep::update(),
            |_: ChildStep| Dialog::update().dialog_state(vec!["unreachable".into()]),
        ))
        .add_node(node_fn("node_b_parent", |_: &Dialog| {
            Dialog::update().dialog_state(vec!["node_b_parent".into()])
        }))
        .add_edge(START, "sub")
        .add_edge("node_b_parent", END)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let out = app
        .invoke(
            Dialog::update().dialog_state(vec!["init_state".into()]),
            &RunConfig::thread("t"),
        )
        .await
        .unwrap();
    assert_eq!(
        out.dialog_state,
        ["init_state", "b_child_state", "node_b_parent"]
    );
}

#[tokio::test]
async fn a_jump_from_a_subgraph_invoked_in_a_node_ends_that_node() {
    let after = Arc::new(AtomicUsize::new(0));
    let reached = Arc::clone(&after);
    let child = jumping_child();
    let app = StateGraph::<Dialog>::new()
        .add_node(async_node_fn(
            "parent_first",
            move |_: Arc<Dialog>, ctx: Context| {
                let child = child.clone();
                let reached = Arc::clone(&reached);
                async move {
                    child.invoke_nested(&ctx, ChildStep::update()).await?;
                    reached.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, NodeError>(Dialog::update().jump_from_idx(Some(0)))
                }
            },
        ))
        .add_node(node_fn("node_b_parent", |_: &Dialog| {
            Dialog::update().dialog_state(vec!["node_b_parent".into()])
        }))
        .add_edge(START, "parent_first")
        .compile()
        .unwrap();
    let out = app
        .invoke(Dialog::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.dialog_state, ["b_child_state", "node_b_parent"]);
    assert_eq!(out.jump_from_idx, None);
    assert_eq!(
        after.load(Ordering::SeqCst),
        0,
        "code after the jumping call never ran"
    );
}

#[tokio::test]
async fn a_command_for_the_parent_at_the_root_is_an_error() {
    let err = jumping_child()
        .invoke(ChildStep::update(), &RunConfig::new())
        .await
        .unwrap_err();
    let GraphError::ParentCommand { node, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(node, "child_node");
    assert!(
        err.to_string().contains("There is no parent graph"),
        "{err}"
    );
}

#[tokio::test]
async fn a_command_for_the_parent_with_the_wrong_update_type_fails_clearly() {
    let app = StateGraph::<Key>::new()
        .add_node(Subgraph::mapped(
            "sub",
            jumping_child(),
            |_: &Key| ChildStep::update(),
            |_: ChildStep| Key::update(),
        ))
        .add_edge(START, "sub")
        .compile()
        .unwrap();
    let err = app
        .invoke(Key::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::NodeFailed { ref node, .. } if node == "sub"),
        "{err}"
    );
    let report = format!(
        "{err}: {}",
        std::error::Error::source(&err).expect("the node's error")
    );
    assert!(report.contains("DialogUpdate"), "{report}");
    assert!(report.contains("KeyUpdate"), "{report}");
}

// ---------------------------------------------------------------- streaming with subgraphs (scenario 22)

#[tokio::test]
async fn streaming_subgraphs_reports_each_event_with_its_namespace() {
    let (app, _) = reentered(SubgraphCheckpoints::Persistent);
    let mut stream = app.stream(
        Outer::update(),
        &RunConfig::thread("t"),
        StreamMode::Updates.with_subgraphs(),
    );
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::Updates { node, updates } => {
                seen.push((
                    String::new(),
                    node.to_string(),
                    updates[0].my_key.clone().unwrap_or_default(),
                    None,
                ));
            }
            StreamEvent::Subgraph { namespace, event } => {
                let ns = namespace.to_string();
                match event.downcast::<Inner>() {
                    Ok(StreamEvent::Updates { node, updates }) => {
                        let key = match &updates[0].my_key {
                            Some(stategraph::channels::ReducerWrite::Value(v)) => v.clone(),
                            other => panic!("{other:?}"),
                        };
                        seen.push((ns, node.to_string(), key, updates[0].my_other_key.clone()))
                    }
                    Ok(other) => panic!("unexpected {other:?}"),
                    Err(e) => panic!("not an Inner event: {e:?}"),
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let inner = |node: &str, key: &str, other: Option<&str>| {
        (
            "inner".to_owned(),
            node.to_owned(),
            key.to_owned(),
            other.map(str::to_owned),
        )
    };
    let root = |key: &str| (String::new(), "inner".to_owned(), key.to_owned(), None);
    assert_eq!(
        seen,
        vec![
            inner("inner_1", " got here", Some("")),
            inner("inner_2", " and there", None),
            root(" got here and there"),
            inner(
                "inner_1",
                " got here",
                Some(" got here and there got here and there")
            ),
            inner("inner_2", " and there", None),
            root(" got here and there got here and there got here and there"),
        ]
    );
}

#[tokio::test]
async fn without_the_subgraphs_flag_only_root_events_are_streamed() {
    let (app, _) = reentered(SubgraphCheckpoints::PerCall);
    let mut stream = app.stream(
        Outer::update(),
        &RunConfig::thread("t"),
        [StreamMode::Updates, StreamMode::Values],
    );
    while let Some(event) = stream.next().await {
        assert!(!matches!(event.unwrap(), StreamEvent::Subgraph { .. }));
    }
    // With it, a per-call subgraph's namespace names the calling task.
    let (app, _) = reentered(SubgraphCheckpoints::PerCall);
    let mut stream = app.stream(
        Outer::update(),
        &RunConfig::thread("t"),
        StreamMode::Values.with_subgraphs(),
    );
    let mut namespaces = std::collections::BTreeSet::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Subgraph { namespace, event } = event.unwrap() {
            assert_eq!(namespace.nodes(), ["inner"]);
            assert!(namespace.segments()[0].starts_with("inner:"));
            assert!(event.downcast_ref::<Inner>().is_some());
            namespaces.insert(namespace.to_string());
        }
    }
    assert_eq!(namespaces.len(), 2, "one namespace per call");
}

// ---------------------------------------------------------------- state across namespaces

fn paused_foo_bar() -> CompiledGraph<Foo> {
    let sub = baz_asker();
    StateGraph::<Foo>::new()
        .add_node(node_fn("parent_node", |s: &Foo| {
            Foo::update().foo(format!("hi! {}", s.foo))
        }))
        .add_node(Subgraph::mapped(
            "sub",
            sub,
            |s: &Foo| Bar::update().bar(s.foo.clone()),
            |done: Bar| Foo::update().foo(done.bar),
        ))
        .add_edge(START, "parent_node")
        .add_edge("parent_node", "sub")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

#[tokio::test]
async fn get_state_with_subgraphs_shows_the_childs_snapshot() {
    let app = paused_foo_bar();
    let config = RunConfig::thread("t");
    app.invoke(Foo::update().foo("foo".into()), &config)
        .await
        .unwrap();
    let snapshot = app.get_state_with_subgraphs(&config).await.unwrap();
    assert_eq!(snapshot.next, ["sub"]);
    let task = &snapshot.tasks[0];
    let child = task.state.as_ref().expect("the child's snapshot");
    assert_eq!(child.next, ["ask"]);
    assert_eq!(child.interrupts.len(), 1);
    assert_eq!(child.config.checkpoint_ns, task.checkpoint_ns);
    let typed = child
        .downcast_ref::<Bar>()
        .expect("typed by the child's state");
    assert_eq!(typed.values.bar, "hi! foo");
    assert!(child.downcast_ref::<Foo>().is_none());
    // Without the flag, no child snapshot.
    let plain = app.get_state(&config).await.unwrap();
    assert!(plain.tasks[0].state.is_none());
}

#[tokio::test]
async fn a_child_namespace_is_read_and_updated_through_subgraph_at() {
    let app = paused_foo_bar();
    let config = RunConfig::thread("t");
    app.invoke(Foo::update().foo("foo".into()), &config)
        .await
        .unwrap();
    let ns = app.get_state(&config).await.unwrap().tasks[0]
        .checkpoint_ns
        .clone();
    let child = app.subgraph_at::<Bar>(&ns).unwrap();
    let at = config.clone().with_checkpoint_ns(ns.clone());
    let state = child.get_state(&at).await.unwrap();
    assert_eq!(state.values.bar, "hi! foo");
    assert_eq!(state.next, ["ask"]);
    let history = child
        .get_state_history(&at, &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        history.len(),
        2,
        "input and __start__ (the paused step stores none)"
    );
    assert!(history.iter().all(|s| s.config.checkpoint_ns == ns));

    // Edit the child's state, then resume: the child continues from the edit.
    child
        .update_state(&at, Bar::update().bar("edited ".into()), Some("__start__"))
        .await
        .unwrap();
    let out = app.invoke(Command::resume("baz"), &config).await.unwrap();
    assert_eq!(out.foo, "edited baz");
}

#[tokio::test]
async fn unknown_or_mistyped_namespaces_are_clear_errors() {
    let app = paused_foo_bar();
    let config = RunConfig::thread("t");
    app.invoke(Foo::update().foo("foo".into()), &config)
        .await
        .unwrap();
    let err = app
        .get_state(&config.clone().with_checkpoint_ns("nope:123"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("Subgraph nope:123 not found"),
        "{err}"
    );
    assert!(err.to_string().contains("[sub]"), "{err}");
    let ns = app.get_state(&config).await.unwrap().tasks[0]
        .checkpoint_ns
        .clone();
    let err = app
        .get_state(&config.clone().with_checkpoint_ns(ns.clone()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("subgraph_at::<"), "{err}");
    let err = app.subgraph_at::<Foo>(&ns).unwrap_err();
    assert!(err.to_string().contains("Bar"), "{err}");
}

#[tokio::test]
async fn a_graph_run_inside_a_node_is_read_with_the_callers_saver() {
    let saver = shared_saver();
    let sub = StateGraph::<Bar>::new()
        .add_node(node_fn("b", |s: &Bar| {
            Bar::update().bar(format!("{}!", s.bar))
        }))
        .add_edge(START, "b")
        .compile()
        .unwrap();
    let inner = sub.clone();
    let app = StateGraph::<Foo>::new()
        .add_node(async_node_fn("call", move |s: Arc<Foo>, ctx: Context| {
            let sub = inner.clone();
            async move {
                let done = sub
                    .invoke_nested(&ctx, Bar::update().bar(s.foo.clone()))
                    .await?;
                Ok::<_, NodeError>(Foo::update().foo(done.bar))
            }
        }))
        .add_edge(START, "call")
        .compile_with(Arc::clone(&saver))
        .unwrap();
    let config = RunConfig::thread("t");
    app.invoke(Foo::update().foo("x".into()), &config)
        .await
        .unwrap();
    let history = app
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    let ns = history
        .iter()
        .flat_map(|s| s.tasks.iter())
        .find(|t| t.name == "call")
        .map(|t| t.checkpoint_ns.clone())
        .unwrap();
    let state = sub
        .subgraph_view(Arc::clone(&saver))
        .get_state(&config.clone().with_checkpoint_ns(ns))
        .await
        .unwrap();
    assert_eq!(state.values.bar, "x!");
}

// ---------------------------------------------------------------- deeper nesting (scenario 26), names

#[tokio::test]
async fn a_breakpoint_two_levels_down_pauses_and_resumes_the_whole_stack() {
    let grandchild = StateGraph::<Key>::new()
        .add_node(node_fn("grandchild_1", |s: &Key| {
            Key::update().my_key(format!("{} here", s.my_key))
        }))
        .add_node(node_fn("grandchild_2", |s: &Key| {
            Key::update().my_key(format!("{} and there", s.my_key))
        }))
        .add_edge(START, "grandchild_1")
        .add_edge("grandchild_1", "grandchild_2")
        .interrupt_before("grandchild_2")
        .compile()
        .unwrap();
    let child = StateGraph::<Key>::new()
        .add_node(Subgraph::new("child_1", grandchild))
        .add_edge(START, "child_1")
        .compile()
        .unwrap();
    let app = StateGraph::<Key>::new()
        .add_node(node_fn("parent_1", |s: &Key| {
            Key::update().my_key(format!("hi {}", s.my_key))
        }))
        .add_node(Subgraph::new("child", child))
        .add_node(node_fn("parent_2", |s: &Key| {
            Key::update().my_key(format!("{} and back again", s.my_key))
        }))
        .add_edge(START, "parent_1")
        .add_edge("parent_1", "child")
        .add_edge("child", "parent_2")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let mut stream = app.stream(
        Key::update().my_key("my value".into()),
        &config,
        StreamMode::Updates,
    );
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(&events[0], StreamEvent::Updates { node, .. } if &**node == "parent_1"));
    assert!(matches!(&events[1], StreamEvent::Interrupt(i) if i.is_empty()));
    let paused = app.get_state(&config).await.unwrap();
    assert_eq!(paused.values.my_key, "hi my value");
    assert_eq!(paused.next, ["child"]);

    let out = app.invoke(None, &config).await.unwrap();
    assert_eq!(out.my_key, "hi my value here and there and back again");
    assert!(!out.is_interrupted());
}

#[tokio::test]
async fn a_subgraph_node_cannot_take_a_name_the_parent_already_uses() {
    let err = StateGraph::<Key>::new()
        .add_node(node_fn("inner", |_: &Key| {}))
        .add_node(Subgraph::new("inner", inner_there()))
        .add_edge(START, "inner")
        .compile()
        .unwrap_err();
    assert!(
        err.to_string().contains("Node `inner` already present"),
        "{err}"
    );
}

#[tokio::test]
async fn a_retried_subgraph_continues_from_its_checkpoint() {
    // docs/semantics.md §8.4, §11.1: a retry of the task running a subgraph
    // resumes the subgraph; its steps that completed do not run again.
    let first_calls = Arc::new(AtomicUsize::new(0));
    let second_calls = Arc::new(AtomicUsize::new(0));
    let (f, s) = (Arc::clone(&first_calls), Arc::clone(&second_calls));
    let child = StateGraph::<Key>::new()
        .add_node(node_fn("first", move |k: &Key| {
            f.fetch_add(1, Ordering::SeqCst);
            Key::update().my_key(format!("{}1", k.my_key))
        }))
        .add_node(node_fn(
            "second",
            move |k: &Key| -> Result<KeyUpdate, NodeError> {
                if s.fetch_add(1, Ordering::SeqCst) == 0 {
                    // Transient in the child: the parent's task running the
                    // child fails with a transient error, which its default
                    // policy retries.
                    return Err(NodeError::transient(NodeError::msg("flaky")));
                }
                Ok(Key::update().my_key(format!("{}2", k.my_key)))
            },
        ))
        .add_edge(START, "first")
        .add_edge("first", "second")
        .compile()
        .unwrap();
    let app = StateGraph::<Key>::new()
        .add_node_with(
            Subgraph::new("child", child),
            stategraph::NodeOptions::new().retry(
                stategraph::RetryPolicy::new()
                    .max_attempts(2)
                    .initial_interval(std::time::Duration::ZERO)
                    .jitter(false),
            ),
        )
        .add_edge(START, "child")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let out = app
        .invoke(Key::update().my_key(">".into()), &RunConfig::thread("t"))
        .await
        .unwrap();
    assert_eq!(out.my_key, ">12");
    assert_eq!(
        first_calls.load(Ordering::SeqCst),
        1,
        "not re-run by the retry"
    );
    assert_eq!(second_calls.load(Ordering::SeqCst), 2);
}

mod deep_nesting {
    //! Subgraphs nested 200 deep run on a tokio worker's default 2 MiB stack
    //! in a debug build (each level polled inline costs ~100 KiB there).

    use super::*;

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Probe {
        /// The checkpoint namespace of the innermost node's task.
        leaf_ns: String,
    }

    const DEPTH: usize = 200;

    /// A graph whose node `level` runs a graph whose node `level` runs ...
    /// (`depth` levels in all) a graph whose node `leaf` records its namespace.
    fn nested(depth: usize, saver: Option<Arc<dyn Checkpointer>>) -> CompiledGraph<Probe> {
        nested_around(
            StateGraph::<Probe>::new().add_node(node_fn("leaf", |_: &Probe, ctx: &Context| {
                Probe::update().leaf_ns(ctx.checkpoint_ns())
            })),
            depth,
            saver,
        )
    }

    fn nested_around(
        leaf: StateGraph<Probe>,
        depth: usize,
        saver: Option<Arc<dyn Checkpointer>>,
    ) -> CompiledGraph<Probe> {
        let mut graph = leaf.add_edge(START, "leaf").compile().unwrap();
        for level in 1..=depth {
            let outer = StateGraph::<Probe>::new()
                .add_node(Subgraph::new("level", graph))
                .add_edge(START, "level");
            graph = match (&saver, level == depth) {
                (Some(saver), true) => outer.compile_with(Arc::clone(saver)),
                _ => outer.compile(),
            }
            .unwrap();
        }
        graph
    }

    /// Runs on a worker thread of the multi-thread runtime (a `#[tokio::test]`
    /// body runs on the test's own thread, whose stack is larger).
    async fn run_on_a_worker(app: CompiledGraph<Probe>, config: RunConfig) -> Probe {
        tokio::spawn(async move { app.invoke(Probe::update(), &config).await })
            .await
            .unwrap()
            .unwrap()
            .into_state()
    }

    fn assert_the_leaf_ran_200_levels_down(out: &Probe) {
        let segments: Vec<&str> = out.leaf_ns.split('|').collect();
        assert_eq!(segments.len(), DEPTH + 1, "{}", out.leaf_ns);
        assert!(segments[..DEPTH].iter().all(|s| s.starts_with("level:")));
        assert!(segments[DEPTH].starts_with("leaf:"));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn two_hundred_levels_run_on_a_default_worker_stack() {
        let out = run_on_a_worker(nested(DEPTH, None), RunConfig::new()).await;
        assert_the_leaf_ran_200_levels_down(&out);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn two_hundred_levels_store_their_checkpoints_in_namespaces_200_deep() {
        let saver = shared_saver();
        let app = nested(DEPTH, Some(Arc::clone(&saver)));
        let out = run_on_a_worker(app, RunConfig::thread("deep")).await;
        assert_the_leaf_ran_200_levels_down(&out);
        let stored = saver.list(None, &ListOptions::default()).await.unwrap();
        let deepest = stored
            .iter()
            .map(|t| t.config.checkpoint_ns.split('|').count())
            .max();
        assert_eq!(deepest, Some(DEPTH));
        let namespaces: std::collections::BTreeSet<&str> = stored
            .iter()
            .map(|t| t.config.checkpoint_ns.as_str())
            .collect();
        assert_eq!(namespaces.len(), DEPTH + 1, "the root's and 200 levels'");
    }

    /// Levels 4 and 8 run as tasks of their own: an interrupt nine levels down
    /// pauses every level, and the answer reaches it.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_interrupt_nine_levels_down_pauses_and_resumes_every_level() {
        let leaf = StateGraph::<Probe>::new().add_node(node_fn(
            "leaf",
            |_: &Probe, ctx: &Context| -> Result<ProbeUpdate, NodeError> {
                let answer: String = ctx.interrupt("which way?")?;
                Ok(Probe::update().leaf_ns(answer))
            },
        ));
        let saver = shared_saver();
        let app = nested_around(leaf, 9, Some(Arc::clone(&saver)));
        let config = RunConfig::thread("deep interrupt");
        let paused = app.invoke(Probe::update(), &config).await.unwrap();
        assert_eq!(paused.interrupts.len(), 1);
        assert_eq!(paused.interrupts[0].value, json!("which way?"));
        let stored = saver.list(None, &ListOptions::default()).await.unwrap();
        let deepest = stored
            .iter()
            .max_by_key(|t| t.config.checkpoint_ns.split('|').count())
            .unwrap();
        assert_eq!(deepest.config.checkpoint_ns.split('|').count(), 9);
        assert_eq!(deepest.metadata.parents.len(), 9, "the root and 8 levels");

        let done = app.invoke(Command::resume("left"), &config).await.unwrap();
        assert!(!done.is_interrupted());
        assert_eq!(done.leaf_ns, "left");
    }
}

#[tokio::test]
async fn a_command_for_the_parent_holds_even_if_the_node_swallows_it() {
    let child = jumping_child();
    let app = StateGraph::<Dialog>::new()
        .add_node(async_node_fn(
            "parent_first",
            move |_: Arc<Dialog>, ctx: Context| {
                let child = child.clone();
                async move {
                    // The node ignores whatever the subgraph call returned.
                    let _ = child.invoke_nested(&ctx, ChildStep::update()).await.ok();
                    Dialog::update().jump_from_idx(Some(0))
                }
            },
        ))
        .add_node(node_fn("node_b_parent", |_: &Dialog| {
            Dialog::update().dialog_state(vec!["node_b_parent".into()])
        }))
        .add_edge(START, "parent_first")
        .compile()
        .unwrap();
    let out = app
        .invoke(Dialog::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.dialog_state, ["b_child_state", "node_b_parent"]);
    assert_eq!(
        out.jump_from_idx, None,
        "the node's own update was discarded"
    );
}

/// LangGraph 1.2.22, the same graphs (a child node jumps to the parent while its
/// sibling pauses in the same step): `invoke` returns
/// `{'dialog_state': ['init', 'b_child_state', 'node_b_parent']}`, and
/// `get_state` shows nothing next and no interrupt: the command wins.
#[tokio::test]
async fn a_command_for_the_parent_wins_over_a_sibling_that_pauses() {
    let child = StateGraph::<ChildStep>::new()
        .add_node(node_fn("jump", |_: &ChildStep| {
            Command::goto("node_b_parent")
                .update(Dialog::update().dialog_state(vec!["b_child_state".into()]))
                .to_parent()
        }))
        .add_node(node_fn("pause", |_: &ChildStep, ctx: &Context| {
            let _: String = ctx.interrupt("q")?;
            Ok::<_, NodeError>(ChildStep::update().n(1))
        }))
        .add_edge(START, "jump")
        .add_edge(START, "pause")
        .compile()
        .unwrap();
    let app = StateGraph::<Dialog>::new()
        .add_node(Subgraph::mapped(
            "sub",
            child,
            |_: &Dialog| ChildStep::update(),
            |_: ChildStep| Dialog::update(),
        ))
        .add_node(node_fn("node_b_parent", |_: &Dialog| {
            Dialog::update().dialog_state(vec!["node_b_parent".into()])
        }))
        .add_edge(START, "sub")
        .add_edge("node_b_parent", END)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let out = app
        .invoke(Dialog::update().dialog_state(vec!["init".into()]), &config)
        .await
        .unwrap();
    assert_eq!(out.dialog_state, ["init", "b_child_state", "node_b_parent"]);
    assert!(out.interrupts.is_empty(), "{:?}", out.interrupts);
    let state = app.get_state(&config).await.unwrap();
    assert!(state.next.is_empty(), "{:?}", state.next);
}

/// A node with a retry policy whose subgraph hands a command to the parent:
/// the command takes effect once; it is not an error to retry.
#[tokio::test]
async fn a_command_for_the_parent_is_not_retried() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let child = StateGraph::<ChildStep>::new()
        .add_node(node_fn("child_node", move |_: &ChildStep| {
            counted.fetch_add(1, Ordering::SeqCst);
            Command::goto("node_b_parent")
                .update(Dialog::update().dialog_state(vec!["b_child_state".into()]))
                .to_parent()
        }))
        .add_edge(START, "child_node")
        .compile()
        .unwrap();
    let app = StateGraph::<Dialog>::new()
        .add_node(Subgraph::mapped(
            "sub",
            child,
            |_: &Dialog| ChildStep::update(),
            |_: ChildStep| Dialog::update(),
        ))
        .add_node(node_fn("node_b_parent", |_: &Dialog| {
            Dialog::update().dialog_state(vec!["node_b_parent".into()])
        }))
        .add_edge(START, "sub")
        // Any error would be retried: the command is not one.
        .retry_policy(
            stategraph::RetryPolicy::new()
                .max_attempts(3)
                .retry_on(|_| true),
        )
        .compile()
        .unwrap();
    let out = app
        .invoke(Dialog::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.dialog_state, ["b_child_state", "node_b_parent"]);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the child ran once");
}
