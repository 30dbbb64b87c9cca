//! `graph!`: a declared graph is the graph its builder calls make — the same runs,
//! the same drawing — for every kind of statement. (Its compile-time checks are
//! the trybuild cases in `tests/ui/graph/fail`.)

use stategraph::prelude::*;
use stategraph::{node_fn, PathMap, RetryPolicy, Subgraph};
use std::time::Duration;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Loop {
    #[reducer(concat)]
    log: Vec<String>,
    n: u32,
}

#[node]
fn a(s: &Loop) -> LoopUpdate {
    Loop::update().log(vec!["a".into()]).n(s.n + 1)
}
#[node]
fn b(_: &Loop) -> LoopUpdate {
    Loop::update().log(vec!["b".into()])
}
#[node]
fn c(_: &Loop) -> LoopUpdate {
    Loop::update().log(vec!["c".into()])
}
#[node]
fn d(_: &Loop) -> LoopUpdate {
    Loop::update().log(vec!["d".into()])
}

fn more(s: &Loop) -> &'static str {
    if s.n < 2 {
        "more"
    } else {
        "done"
    }
}

/// Python LangGraph 1.2.22, the same graph (`add_edge(["b", "c"], "d")`,
/// `add_conditional_edges("d", check, {"more": "a", "done": END})`), from
/// `{"n": 0, "log": []}`:
/// `{'log': ['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd'], 'n': 2}`.
#[tokio::test]
async fn chains_joins_and_a_keyed_path_map_run_as_the_builder_and_langgraph_do() {
    let declared = graph! {
        state Loop;
        // The facade's path, as a crate that renames it would give it.
        crate ::stategraph;
        node a, b, c, d;

        START -> a -> b;
        a -> c;
        (b, c) -> d -> match more { "more" => a, "done" => END };
    }
    .compile()
    .unwrap();
    let built = StateGraph::<Loop>::new()
        .add_node(a)
        .add_node(b)
        .add_node(c)
        .add_node(d)
        .add_edge(START, a)
        .add_edge(a, b)
        .add_edge(a, c)
        .add_edge((b, c), d)
        .add_conditional_edges_with(d, more, PathMap::from([("more", "a"), ("done", END)]))
        .compile()
        .unwrap();
    for app in [&declared, &built] {
        let out = app.invoke(Loop::update(), &RunConfig::new()).await.unwrap();
        assert_eq!(out.log, ["a", "b", "c", "d", "a", "b", "c", "d"]);
        assert_eq!(out.n, 2);
    }
    assert_eq!(declared.draw_mermaid(), built.draw_mermaid());
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Jobs {
    inputs: Vec<u32>,
    #[reducer(concat)]
    squares: Vec<u32>,
    #[reducer(concat)]
    log: Vec<String>,
    total: u32,
}

#[node(state = Jobs)]
fn square(n: u32) -> JobsUpdate {
    Jobs::update()
        .squares(vec![n * n])
        .log(vec!["square".into()])
}

#[node]
fn collect(j: &Jobs) -> JobsUpdate {
    Jobs::update()
        .total(j.squares.iter().sum())
        .log(vec!["collect".into()])
}

fn fan_out(j: &Jobs) -> Vec<stategraph::Send> {
    j.inputs.iter().map(|&n| send(square, n)).collect()
}

/// Python LangGraph 1.2.22, the same graph (`add_node("collect", collect,
/// defer=True)`, `add_conditional_edges(START, fan_out)` returning `Send`s), from
/// `{"inputs": [1, 2, 3]}`: `{'squares': [1, 4, 9], 'log': ['square', 'square',
/// 'square', 'collect'], 'total': 14}`.
#[tokio::test]
async fn sends_and_a_deferred_node_run_as_the_builder_and_langgraph_do() {
    let declared = graph! {
        state Jobs;
        node square;
        #[defer]
        node collect;

        START -> match fan_out;
        START -> send square;
        square -> collect;
    }
    .compile()
    .unwrap();
    let built = StateGraph::<Jobs>::new()
        .add_node(square)
        .add_node_with(collect, NodeOptions::new().defer(true))
        .add_conditional_edges(START, fan_out)
        .destinations(START, [square])
        .add_edge(square, collect)
        .compile()
        .unwrap();
    for app in [&declared, &built] {
        let out = app
            .invoke(Jobs::update().inputs(vec![1, 2, 3]), &RunConfig::new())
            .await
            .unwrap();
        assert_eq!(out.squares, [1, 4, 9]);
        assert_eq!(out.log, ["square", "square", "square", "collect"]);
        assert_eq!(out.total, 14);
    }
    assert_eq!(declared.draw_mermaid(), built.draw_mermaid());
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
    #[reducer(concat)]
    path: Vec<String>,
}

#[derive(Default)]
struct Settings {
    greeting: String,
}

#[derive(Goto, Clone, Copy)]
enum Triage {
    Answer,
    Research,
    #[goto(end)]
    Drop,
}

#[node]
fn triage(t: &Ticket) -> Command<Triage> {
    let route = if t.text.contains("spam") {
        Triage::Drop
    } else if t.text.contains("why") {
        Triage::Research
    } else {
        Triage::Answer
    };
    Command::goto(route).update(Ticket::update().path(vec!["triage".into()]))
}

#[node]
fn answer(_: &Ticket, ctx: &Context<Settings>) -> TicketUpdate {
    Ticket::update().path(vec![ctx.context().greeting.clone()])
}

#[derive(Goto, Clone, Copy)]
enum AfterAnswer {
    Fallback,
    #[goto(end)]
    Done,
}

fn after_answer(t: &Ticket) -> AfterAnswer {
    if t.text.contains("hard") {
        AfterAnswer::Fallback
    } else {
        AfterAnswer::Done
    }
}

/// A router returning a name as a string: `graph!` cannot see where it goes, so
/// the node it reaches is marked `#[dynamic]`.
fn by_name(t: &Ticket) -> &'static str {
    if t.text.contains("human") {
        "human"
    } else {
        END
    }
}

fn research_graph() -> Subgraph<Ticket, Ticket, Ticket, Settings> {
    let child = StateGraph::<Ticket, Settings>::with_context_schema()
        .add_node(node_fn("dig", |_: &Ticket| {
            Ticket::update().path(vec!["dig".into()])
        }))
        .add_edge(START, "dig")
        .compile()
        .unwrap();
    Subgraph::new("research", child)
}

#[tokio::test]
async fn gotos_typed_routers_values_options_and_a_context_run_as_the_builder_does() {
    let human = || {
        node_fn("human", |_: &Ticket| {
            Ticket::update().path(vec!["human".into()])
        })
    };
    let declared = graph! {
        state Ticket;
        context Settings;

        node triage;
        #[retry(RetryPolicy::new().max_attempts(2))]
        #[timeout(Duration::from_secs(5))]
        node answer;
        node research = research_graph();
        node fallback = node_fn("fallback", |_: &Ticket| Ticket::update().path(vec!["fallback".into()]));
        #[dynamic]
        node human = human();

        START -> triage;
        answer -> match after_answer;
        research -> match by_name;
        fallback -> END;
    }
    .compile()
    .unwrap();
    let built = StateGraph::<Ticket, Settings>::with_context_schema()
        .add_node(triage)
        .add_node_with(
            answer,
            NodeOptions::new()
                .retry(RetryPolicy::new().max_attempts(2))
                .timeout(Duration::from_secs(5)),
        )
        .add_node_with(research_graph(), NodeOptions::new().name("research"))
        .add_node_with(
            node_fn("fallback", |_: &Ticket| {
                Ticket::update().path(vec!["fallback".into()])
            }),
            NodeOptions::new().name("fallback"),
        )
        .add_node_with(human(), NodeOptions::new().name("human"))
        .add_edge(START, triage)
        .add_conditional_edges(answer, after_answer)
        .add_conditional_edges("research", by_name)
        .add_edge("fallback", END)
        .compile()
        .unwrap();
    let cases = [
        ("hello", vec!["triage", "hi"]),
        ("hard hello", vec!["triage", "hi", "fallback"]),
        // The subgraph shares the state: its output, the whole state, is
        // concatenated to `path` (so `triage` twice).
        ("why?", vec!["triage", "triage", "dig"]),
        ("why, human?", vec!["triage", "triage", "dig", "human"]),
        ("spam", vec!["triage"]),
    ];
    for (text, path) in cases {
        for app in [&declared, &built] {
            let settings = Settings {
                greeting: "hi".into(),
            };
            let out = app
                .with_context(settings)
                .invoke(Ticket::update().text(text.into()), &RunConfig::new())
                .await
                .unwrap();
            assert_eq!(out.path, path, "{text}");
        }
    }
    assert_eq!(declared.draw_mermaid(), built.draw_mermaid());
}
