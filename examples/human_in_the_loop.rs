//! Human in the loop: an approval step that pauses the run until a person answers,
//! across two separate runs of this program.
//!
//! A writer drafts a post; `review` asks a human with `ctx.interrupt(..)` and the
//! run stops there. The paused thread is stored in `human_in_the_loop.db`
//! (SQLite), so the process can exit. Running the program again with the answer
//! resumes the thread with `Command::resume(..)`: `review` runs again from its
//! start, this time receiving the answer, and routes to `publish` or back to
//! `write` with the reviewer's note.
//!
//! ```text
//! cargo run --example human_in_the_loop -- --thread t1 --topic "typed graphs"
//! cargo run --example human_in_the_loop -- --thread t1 --approve no --note "shorter"
//! cargo run --example human_in_the_loop -- --thread t1 --approve yes
//! ```
//!
//! Options: `--db PATH` (default `human_in_the_loop.db`), `--thread ID`
//! (default `demo`), `--topic TEXT` to start a thread, `--approve yes|no` and
//! `--note TEXT` to answer the pending question. Without `--approve` or
//! `--topic`, it shows where the thread stands.

use stategraph::prelude::*;
use stategraph::sqlite::SqliteSaver;

/// The graph state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Post {
    topic: String,
    draft: String,
    /// How many drafts were written (summed).
    #[reducer(std::ops::Add::add)]
    revisions: u32,
    /// Notes from rejected drafts, for the next draft.
    note: Option<String>,
    published: Option<String>,
}

/// What the reviewer is shown: serialised into the interrupt.
#[derive(Debug, Serialize, Deserialize)]
struct Question {
    draft: String,
    revision: u32,
}

/// What the reviewer answers: the resume value. A value of another shape is a
/// clear error, and the thread stays paused.
#[derive(Debug, Serialize, Deserialize)]
struct Decision {
    approve: bool,
    note: Option<String>,
}

/// Where `review` goes next.
#[derive(Goto, Clone, Copy, Debug)]
enum AfterReview {
    Publish,
    Write,
}

/// Writes a draft (a stand-in for a model call).
#[node]
fn write(post: &Post) -> PostUpdate {
    let mut draft = format!(
        "{}: why the compiler should check your agent graph.",
        post.topic
    );
    if let Some(note) = &post.note {
        draft = format!("{draft} (revised: {note})");
    }
    Post::update().draft(draft).revisions(1).note(None)
}

/// Asks a human to approve the draft. The first time, `interrupt` pauses the
/// run; on resume this node runs again and `interrupt` returns the answer.
#[node]
fn review(post: &Post, ctx: &Context) -> Result<Command<AfterReview>, NodeError> {
    let decision: Decision = ctx.interrupt(Question {
        draft: post.draft.clone(),
        revision: post.revisions,
    })?;
    Ok(if decision.approve {
        Command::goto(AfterReview::Publish)
    } else {
        Command::goto(AfterReview::Write).update(Post::update().note(decision.note))
    })
}

/// Publishes the approved draft.
#[node]
fn publish(post: &Post) -> PostUpdate {
    Post::update().published(Some(format!("[published] {}", post.draft)))
}

struct Args {
    db: String,
    thread: String,
    topic: Option<String>,
    approve: Option<bool>,
    note: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        db: "human_in_the_loop.db".into(),
        thread: "demo".into(),
        topic: None,
        approve: None,
        note: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--db" => args.db = value()?,
            "--thread" => args.thread = value()?,
            "--topic" => args.topic = Some(value()?),
            "--note" => args.note = Some(value()?),
            "--approve" => {
                args.approve = Some(match value()?.as_str() {
                    "yes" | "y" | "true" => true,
                    "no" | "n" | "false" => false,
                    other => return Err(format!("--approve takes yes or no, not `{other}`")),
                })
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(args)
}

fn show(post: &Post, interrupts: &[Interrupt], thread: &str) {
    if let Some(published) = &post.published {
        println!("{published}");
        println!("(after {} draft(s))", post.revisions);
        return;
    }
    for interrupt in interrupts {
        match interrupt.value_as::<Question>() {
            Ok(q) => println!("Draft {} waiting for review:\n  {}", q.revision, q.draft),
            Err(_) => println!("Waiting: {}", interrupt.value),
        }
        println!(
            "Answer with: cargo run --example human_in_the_loop -- --thread {thread} \
             --approve yes|no [--note TEXT]"
        );
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let saver = SqliteSaver::open(&args.db).await?;
    let app = StateGraph::<Post>::new()
        .add_node(write)
        .add_node(review)
        .add_node(publish)
        .add_edge(START, write)
        .add_edge(write, review)
        .add_edge(publish, END)
        .compile_with(saver)?;
    let config = RunConfig::thread(&args.thread);

    let (post, interrupts) = match (&args.topic, args.approve) {
        (Some(topic), _) => {
            println!("Starting thread `{}` on {topic:?}.", args.thread);
            let out = app
                .invoke(Post::update().topic(topic.clone()), &config)
                .await?;
            (out.state, out.interrupts)
        }
        (None, Some(approve)) => {
            let decision = Decision {
                approve,
                note: args.note.clone(),
            };
            println!("Resuming thread `{}` with {decision:?}.", args.thread);
            let out = app.invoke(Command::resume(decision), &config).await?;
            (out.state, out.interrupts)
        }
        (None, None) => {
            let snapshot = app.get_state(&config).await?;
            if snapshot.metadata.is_none() {
                println!(
                    "Thread `{}` is new. Start it with --topic TEXT, for example:\n  \
                     cargo run --example human_in_the_loop -- --thread {} --topic \"typed graphs\"",
                    args.thread, args.thread
                );
                return Ok(());
            }
            (snapshot.values, snapshot.interrupts)
        }
    };
    show(&post, &interrupts, &args.thread);
    Ok(())
}
