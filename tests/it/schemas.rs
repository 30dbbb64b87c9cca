//! Input and output schemas (LangGraph's `StateGraph(State, input_schema=In,
//! output_schema=Out)`): `#[derive(Schema)]` structs of some of the state's
//! fields. The input writes only its fields, `with_output` returns only the
//! output's, and nodes and streams see the whole state (docs/semantics.md §3.1).
//!
//! The expected values are what LangGraph 1.2.22 prints for the same graphs, in
//! the comments.

use futures::StreamExt;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::BatchOptions;
use std::sync::{Arc, Mutex};

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Overall {
    question: String,
    answer: String,
    notes: String,
}

#[derive(Schema)]
#[schema(state = Overall)]
struct In {
    question: String,
}

#[derive(Schema, Debug, PartialEq)]
#[schema(state = Overall)]
struct Out {
    answer: String,
}

fn think_graph(seen: Arc<Mutex<Vec<Overall>>>) -> CompiledGraph<Overall> {
    StateGraph::<Overall>::new()
        .add_node(node_fn("think", move |s: &Overall| {
            seen.lock().unwrap().push(s.clone());
            Overall::update()
                .notes(format!("thought about {}", s.question))
                .answer("42".into())
        }))
        .add_edge(START, "think")
        .compile()
        .unwrap()
}

// def think(s):
//     print("node sees", s)
//     return {"notes": "thought about " + s["question"], "answer": "42"}
// g = StateGraph(Overall, input_schema=In, output_schema=Out)
// app.invoke({"question": "q"})
//   node sees {'question': 'q'}
//   {'answer': '42'}
#[tokio::test]
async fn invoke_takes_the_input_schema_and_returns_the_output_schema() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = think_graph(Arc::clone(&seen)).with_output::<Out>();
    let out = app
        .invoke(
            In {
                question: "q".into(),
            },
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.state,
        Out {
            answer: "42".into()
        }
    );
    assert!(!out.is_interrupted());
    // The node reads the whole state; the input wrote only `question`.
    assert_eq!(
        *seen.lock().unwrap(),
        [Overall {
            question: "q".into(),
            ..Overall::default()
        }]
    );
}

// The input schema also works without an output schema: `invoke` then returns
// the whole state (LangGraph's `StateGraph(Overall, input_schema=In)`).
#[tokio::test]
async fn the_input_schema_is_graph_input_of_the_plain_graph() {
    let app = think_graph(Arc::default());
    let out = app
        .invoke(
            In {
                question: "q".into(),
            },
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.state,
        Overall {
            question: "q".into(),
            answer: "42".into(),
            notes: "thought about q".into(),
        }
    );
}

// for c in app.stream({"question": "q"}, stream_mode="values"): print(c)
//   {'question': 'q'}
//   {'question': 'q', 'answer': '42', 'notes': 'thought about q'}
// for c in app.stream({"question": "q"}, stream_mode="updates"): print(c)
//   {'think': {'notes': 'thought about q', 'answer': '42'}}
#[tokio::test]
async fn streams_show_the_whole_state() {
    let app = think_graph(Arc::default()).with_output::<Out>();
    let values: Vec<Overall> = app
        .stream(
            In {
                question: "q".into(),
            },
            &RunConfig::new(),
            StreamMode::Values,
        )
        .map(|event| match event.unwrap() {
            StreamEvent::Values(state) => (*state).clone(),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
        .await;
    assert_eq!(
        values,
        [
            Overall {
                question: "q".into(),
                ..Overall::default()
            },
            Overall {
                question: "q".into(),
                answer: "42".into(),
                notes: "thought about q".into(),
            },
        ]
    );

    let updates: Vec<(String, OverallUpdate)> = app
        .stream(
            In {
                question: "q".into(),
            },
            &RunConfig::new(),
            StreamMode::Updates,
        )
        .map(|event| match event.unwrap() {
            StreamEvent::Updates { node, mut updates } => (node.to_string(), updates.remove(0)),
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
        .await;
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].0, "think");
    assert_eq!(updates[0].1.notes.as_deref(), Some("thought about q"));
    assert_eq!(updates[0].1.answer.as_deref(), Some("42"));
}

// def ask(s):
//     return {"answer": interrupt("ok?")}
// app2.invoke({"question": "q"}, cfg)
//   {'__interrupt__': [Interrupt(value='ok?', id='...')]}
// app2.get_state(cfg).values
//   {'question': 'q'}
// app2.invoke(Command(resume="yes"), cfg)
//   {'answer': 'yes'}
#[tokio::test]
async fn an_interrupted_run_returns_the_output_schema_with_the_interrupts() {
    #[node]
    fn ask(_: &Overall, ctx: &Context) -> Result<OverallUpdate, NodeError> {
        let answer: String = ctx.interrupt("ok?")?;
        Ok(Overall::update().answer(answer))
    }
    let app = StateGraph::<Overall>::new()
        .add_node(ask)
        .add_edge(START, ask)
        .compile_with(InMemorySaver::new())
        .unwrap()
        .with_output::<Out>();
    let thread = RunConfig::thread("t");

    let out = app
        .invoke(
            In {
                question: "q".into(),
            },
            &thread,
        )
        .await
        .unwrap();
    assert!(out.is_interrupted());
    assert_eq!(out.interrupts[0].value, serde_json::json!("ok?"));
    // LangGraph leaves the unwritten `answer` out; here it has its default.
    assert_eq!(
        out.state,
        Out {
            answer: String::new()
        }
    );
    // The wrapper dereferences to the graph: `get_state` reads the whole state.
    let snapshot = app.get_state(&thread).await.unwrap();
    assert_eq!(snapshot.values.question, "q");

    let out = app.invoke(Command::resume("yes"), &thread).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        out.state,
        Out {
            answer: "yes".into()
        }
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Logged {
    question: String,
    #[reducer(concat)]
    log: Vec<String>,
    answer: String,
}

#[derive(Schema)]
#[schema(state = Logged)]
struct LoggedIn {
    question: String,
    log: Vec<String>,
}

#[derive(Schema, Debug, PartialEq)]
#[schema(state = Logged)]
struct LoggedOut {
    answer: String,
    log: Vec<String>,
}

// class Overall(TypedDict):
//     question: str
//     log: Annotated[list, operator.add]
//     answer: str
// def think(s):
//     return {"log": ["think " + s["question"]], "answer": "a:" + s["question"]}
// app.invoke({"question": "q1", "log": ["in1"]}, cfg)
//   {'answer': 'a:q1', 'log': ['in1', 'think q1']}
// app.invoke({"question": "q2", "log": ["in2"]}, cfg)
//   {'answer': 'a:q2', 'log': ['in1', 'think q1', 'in2', 'think q2']}
#[tokio::test]
async fn an_input_field_with_a_reducer_is_folded_in() {
    let app = StateGraph::<Logged>::new()
        .add_node(node_fn("think", |s: &Logged| {
            Logged::update()
                .log(vec![format!("think {}", s.question)])
                .answer(format!("a:{}", s.question))
        }))
        .add_edge(START, "think")
        .compile_with(InMemorySaver::new())
        .unwrap()
        .with_output::<LoggedOut>();
    let thread = RunConfig::thread("t");

    let input = |q: &str, l: &str| LoggedIn {
        question: q.into(),
        log: vec![l.into()],
    };
    let out = app.invoke(input("q1", "in1"), &thread).await.unwrap();
    assert_eq!(
        out.state,
        LoggedOut {
            answer: "a:q1".into(),
            log: vec!["in1".into(), "think q1".into()],
        }
    );
    let out = app.invoke(input("q2", "in2"), &thread).await.unwrap();
    assert_eq!(
        out.state,
        LoggedOut {
            answer: "a:q2".into(),
            log: ["in1", "think q1", "in2", "think q2"]
                .map(String::from)
                .to_vec(),
        }
    );
}

// app.batch([{"question": "q1"}, {"question": "q2"}])
//   [{'answer': 'a:q1'}, {'answer': 'a:q2'}]
// sorted(app.batch_as_completed([{"question": "q1"}, {"question": "q2"}]))
//   [(0, {'answer': 'a:q1'}), (1, {'answer': 'a:q2'})]
#[tokio::test]
async fn batch_returns_the_output_schema() {
    let app = StateGraph::<Overall>::new()
        .add_node(node_fn("think", |s: &Overall| {
            Overall::update().answer(format!("a:{}", s.question))
        }))
        .add_edge(START, "think")
        .compile()
        .unwrap()
        .with_output::<Out>();
    let runs = || ["q1", "q2"].map(|q| (In { question: q.into() }, RunConfig::new()));
    let answers: Vec<Out> = app
        .batch(runs(), BatchOptions::new())
        .await
        .into_iter()
        .map(|result| result.unwrap().state)
        .collect();
    assert_eq!(
        answers,
        [
            Out {
                answer: "a:q1".into()
            },
            Out {
                answer: "a:q2".into()
            }
        ]
    );

    let mut done: Vec<(usize, Out)> = app
        .batch_stream(runs(), BatchOptions::new())
        .map(|(i, result)| (i, result.unwrap().state))
        .collect()
        .await;
    done.sort_by_key(|(i, _)| *i);
    assert_eq!(
        done,
        [
            (
                0,
                Out {
                    answer: "a:q1".into()
                }
            ),
            (
                1,
                Out {
                    answer: "a:q2".into()
                }
            ),
        ]
    );
}
