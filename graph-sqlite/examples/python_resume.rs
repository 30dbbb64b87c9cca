//! The Rust side of `tests/python_reads_rust.sh`'s human-in-the-loop check: a run
//! paused by `ctx.interrupt(..)` in one language is resumed by the other, on one
//! SQLite file. `tests/python_resume.py` builds the same graph in Python.
//!
//! ```text
//! python_resume pause DB THREAD          # run until `review` asks; print the interrupt
//! python_resume resume DB THREAD ANSWER  # resume with true/false; print the log
//! python_resume show DB THREAD           # print the thread's state as JSON
//! ```
//!
//! The graph: `draft` writes a draft and logs "drafted"; `review` asks
//! `{"question": "publish?", "draft": ..}` and logs "approved" or "rejected".

use graph_sqlite::SqliteSaver;
use serde::{Deserialize, Serialize};
use serde_json::json;
use stategraph::prelude::*;
use std::process::ExitCode;

type Error = Box<dyn std::error::Error>;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// The Python graph's `TypedDict` state, field for field.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Post {
    topic: String,
    draft: String,
    #[reducer(concat)]
    log: Vec<String>,
}

#[derive(Serialize)]
struct Question<'a> {
    question: &'a str,
    draft: &'a str,
}

async fn graph(db: &str) -> Result<CompiledGraph<Post>, Error> {
    let saver = SqliteSaver::open(db).await?;
    Ok(StateGraph::<Post>::new()
        .add_node(node_fn("draft", |p: &Post| {
            Post::update()
                .draft(format!("a post about {}", p.topic))
                .log(vec!["drafted".into()])
        }))
        .add_node(node_fn("review", |p: &Post, ctx: &Context| {
            let approved: bool = ctx.interrupt(Question {
                question: "publish?",
                draft: &p.draft,
            })?;
            let verdict = if approved { "approved" } else { "rejected" };
            Ok::<_, NodeError>(Post::update().log(vec![verdict.into()]))
        }))
        .add_edge(START, "draft")
        .add_edge("draft", "review")
        .add_edge("review", END)
        .compile_with(saver)?)
}

async fn run(args: &[&str]) -> Result<(), Error> {
    match args {
        ["pause", db, thread] => {
            let out = graph(db)
                .await?
                .invoke(
                    Post::update().topic("rust".into()),
                    &RunConfig::thread(*thread),
                )
                .await?;
            let [interrupt] = out.interrupts.as_slice() else {
                return Err(format!("expected one interrupt, got {:?}", out.interrupts).into());
            };
            println!("{}", json!({"id": interrupt.id, "value": interrupt.value}));
        }
        ["resume", db, thread, answer] => {
            let answer: bool = answer.parse()?;
            let out = graph(db)
                .await?
                .invoke(Command::resume(answer), &RunConfig::thread(*thread))
                .await?;
            if out.is_interrupted() {
                return Err(format!("still paused: {:?}", out.interrupts).into());
            }
            println!("{}", serde_json::to_string(&out.log)?);
        }
        ["show", db, thread] => {
            let snapshot = graph(db)
                .await?
                .get_state(&RunConfig::thread(*thread))
                .await?;
            let interrupts: Vec<_> = snapshot
                .interrupts
                .iter()
                .map(|i| json!({"id": i.id, "value": i.value}))
                .collect();
            println!(
                "{}",
                json!({
                    "values": snapshot.values,
                    "next": snapshot.next,
                    "interrupts": interrupts,
                })
            );
        }
        _ => return Err(
            "usage: python_resume pause DB THREAD | resume DB THREAD true|false | show DB THREAD"
                .into(),
        ),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("python_resume: {e}");
            ExitCode::FAILURE
        }
    }
}
