//! The Functional API: an essay workflow written as one async fn, made durable.
//!
//! `write_essay` (a task) drafts the essay; the `fact_check` tasks run in
//! parallel, one per claim; then the workflow asks a human to approve with
//! `interrupt(..)` and the run stops. The thread is stored in `functional.db`
//! (SQLite), so the process can exit. Running the program again with the
//! answer resumes the thread: the entrypoint runs again from its start, and
//! every task that finished returns its saved result instead of running again
//! (the output shows which tasks ran in each process).
//!
//! ```text
//! cargo run --example functional -- --thread t1 --topic "typed graphs"
//! cargo run --example functional -- --thread t1 --approve yes
//! ```
//!
//! Options: `--db PATH` (default `functional.db`), `--thread ID` (default
//! `demo`), `--topic TEXT` to start a thread, `--approve yes|no` to answer.
//! Without `--topic` or `--approve`, it runs both steps in one go on a fresh
//! thread.

use stategraph::func::{entrypoint, interrupt, task, Entrypoint};
use stategraph::prelude::*;
use stategraph::sqlite::SqliteSaver;

/// Drafts the essay (a stand-in for a model call).
#[task]
async fn write_essay(topic: String) -> String {
    println!("  [task] write_essay({topic:?}) runs");
    format!(
        "{topic}: types catch mistakes early. Graphs make control flow visible. \
         Checkpoints make runs durable."
    )
}

/// Checks one claim (a stand-in for a search and a model call).
#[task]
async fn fact_check(claim: String) -> (String, bool) {
    println!("  [task] fact_check({claim:?}) runs");
    let verdict = !claim.contains("never");
    (claim, verdict)
}

/// What the reviewer is shown.
#[derive(Debug, Serialize, Deserialize)]
struct Review {
    essay: String,
    checks: Vec<(String, bool)>,
}

/// The workflow's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Outcome {
    essay: String,
    checked_claims: usize,
    published: bool,
}

/// The workflow: ordinary control flow; each task's result is saved as it
/// finishes.
#[entrypoint]
async fn essay_workflow(topic: String) -> Result<Outcome, NodeError> {
    let essay = write_essay(topic).await?;
    let claims: Vec<String> = essay
        .split(". ")
        .skip(1)
        .map(|c| c.trim_end_matches('.').to_owned())
        .collect();
    // The fact checks run in parallel; each is saved when it finishes.
    let checks = futures::future::try_join_all(claims.into_iter().map(fact_check)).await?;
    let approved: bool = interrupt(Review {
        essay: essay.clone(),
        checks: checks.clone(),
    })?;
    Ok(Outcome {
        essay,
        checked_claims: checks.len(),
        published: approved,
    })
}

struct Options {
    db: String,
    thread: String,
    topic: Option<String>,
    approve: Option<bool>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        db: "functional.db".into(),
        thread: "demo".into(),
        topic: None,
        approve: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--db" => o.db = value,
            "--thread" => o.thread = value,
            "--topic" => o.topic = Some(value),
            "--approve" => o.approve = Some(matches!(value.as_str(), "yes" | "y" | "true")),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// One run of the program's: start a thread, or answer its question.
enum Step {
    Start(String),
    Resume(bool),
}

async fn run(o: Options) -> Result<(), Box<dyn std::error::Error>> {
    let app = Entrypoint::new(essay_workflow).compile_with(SqliteSaver::open(&o.db).await?)?;
    let config = RunConfig::thread(o.thread.clone());
    let steps = match (o.topic, o.approve) {
        (Some(topic), _) => vec![Step::Start(topic)],
        (None, Some(answer)) => vec![Step::Resume(answer)],
        (None, None) => vec![Step::Start("Typed workflows".into()), Step::Resume(true)],
    };
    for step in steps {
        let out = match step {
            Step::Start(topic) => {
                println!("starting thread {:?} on {topic:?}", o.thread);
                app.invoke(topic, &config).await?
            }
            Step::Resume(answer) => {
                println!("resuming thread {:?} with approve = {answer}", o.thread);
                app.invoke_command(Command::resume(answer), &config).await?
            }
        };
        match (&out.value, out.interrupts.first()) {
            (_, Some(question)) => {
                let review: Review = question.value_as()?;
                println!("paused for review of: {}", review.essay);
                for (claim, ok) in &review.checks {
                    println!("  check {claim:?}: {}", if *ok { "ok" } else { "doubtful" });
                }
                println!("answer with: --thread {} --approve yes|no", o.thread);
            }
            (Some(outcome), None) => println!("done: {outcome:?}"),
            (None, None) => println!("the run ended without an output"),
        }
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(o).await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
