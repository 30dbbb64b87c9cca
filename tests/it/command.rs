//! `Command` as a node result: update and goto together, several per node, typed
//! targets checked by `compile()` (docs/semantics.md §3.3, §4.1; scenarios 9, 29,
//! 30 of its appendix A).

use futures::StreamExt;
use stategraph::prelude::*;

fn add_str(a: String, b: String) -> String {
    a + &b
}

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct FooBar {
    foo: String,
    bar: String,
}

#[derive(Goto, Clone, Copy, Debug)]
enum AThen {
    B,
}

#[derive(Goto, Clone, Copy, Debug)]
enum BThen {
    #[goto(end)]
    Finish,
}

#[node]
fn a(_: &FooBar) -> Command<AThen> {
    Command::goto(AThen::B).update(FooBar::update().foo("bar".into()))
}

#[node]
async fn b(_: &FooBar) -> Command<BThen> {
    Command::goto(BThen::Finish).update(FooBar::update().bar("baz".into()))
}

#[tokio::test]
async fn command_goto_routes_and_updates() {
    let app = StateGraph::<FooBar>::new()
        .add_node(a)
        .add_node(b)
        .add_edge(START, a)
        .compile()
        .unwrap();
    let out = app
        .invoke(FooBar::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.state,
        FooBar {
            foo: "bar".into(),
            bar: "baz".into()
        }
    );
}

#[tokio::test]
async fn a_goto_to_a_node_missing_from_the_graph_fails_compile_naming_both() {
    let err = StateGraph::<FooBar>::new()
        .add_node(a)
        .add_edge(START, a)
        .compile()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("node `a` can go to `b`") && text.contains("no node `b`"),
        "{text}"
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Foo {
    #[reducer(add_str)]
    foo: String,
}

#[node]
fn node_a(_: &Foo) -> Vec<Command<NoGotoAlias>> {
    vec![
        Command::update_only(Foo::update().foo("a1".into())),
        Command::update_only(Foo::update().foo("a2".into())),
    ]
}

type NoGotoAlias = stategraph::NoGoto;

#[node]
fn node_b(_: &Foo) -> FooUpdate {
    Foo::update().foo("b".into())
}

fn two_commands_graph() -> CompiledGraph<Foo> {
    StateGraph::<Foo>::new()
        .add_node(node_a)
        .add_node(node_b)
        .add_edge(START, node_a)
        .add_edge(node_a, node_b)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn several_commands_from_one_node_apply_in_order() {
    let out = two_commands_graph()
        .invoke(Foo::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.foo, "a1a2b");
}

#[tokio::test]
async fn the_updates_stream_reports_each_update_of_a_node_in_order() {
    let events: Vec<(String, Vec<String>)> = two_commands_graph()
        .stream(Foo::update(), &RunConfig::new(), StreamMode::Updates)
        .map(|e| match e.unwrap() {
            StreamEvent::Updates { node, updates } => (
                node.to_string(),
                updates
                    .into_iter()
                    .map(|u| match u.foo {
                        Some(ReducerWrite::Value(v)) => v,
                        other => panic!("unexpected write {other:?}"),
                    })
                    .collect(),
            ),
            _ => panic!("only updates were asked for"),
        })
        .collect()
        .await;
    assert_eq!(
        events,
        [
            ("node_a".to_owned(), vec!["a1".to_owned(), "a2".to_owned()]),
            ("node_b".to_owned(), vec!["b".to_owned()]),
        ]
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Letters {
    #[reducer(concat)]
    letters: Vec<String>,
}

#[tokio::test]
async fn a_command_update_and_a_plain_update_mix_in_one_result() {
    let app = StateGraph::<Letters>::new()
        .add_node(node_fn("mixed", |_: &Letters| {
            stategraph::NodeOutput::<Letters>::new()
                .with_update(Letters::update().letters(vec!["a".into()]))
                .with_update(Letters::update().letters(vec!["b".into()]))
        }))
        .add_edge(START, "mixed")
        .compile()
        .unwrap();
    let out = app
        .invoke(Letters::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.letters, ["a", "b"]);
}

#[tokio::test]
async fn a_command_can_send() {
    #[node]
    fn fan(_: &Letters) -> Command<stategraph::NoGoto> {
        Command::send(send(shout, "x".to_owned())).and_send(send(shout, "y".to_owned()))
    }
    #[node]
    fn shout(word: &String) -> LettersUpdate {
        Letters::update().letters(vec![word.to_uppercase()])
    }
    let app = StateGraph::<Letters>::new()
        .add_node(fan)
        .add_node(shout)
        .add_edge(START, fan)
        .compile()
        .unwrap();
    let out = app
        .invoke(Letters::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.letters, ["X", "Y"]);
}

#[tokio::test]
async fn a_string_goto_to_an_unknown_node_is_ignored() {
    let app = StateGraph::<Letters>::new()
        .add_node(node_fn("only", |_: &Letters| {
            Command::<&'static str, LettersUpdate>::goto("nowhere")
                .update(Letters::update().letters(vec!["only".into()]))
        }))
        .add_edge(START, "only")
        .compile()
        .unwrap();
    let out = app
        .invoke(Letters::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.letters, ["only"]);
}
