//! Time travel: list a thread's checkpoints, fork from an earlier step, replay.
//!
//! A three-step pipeline (draft → review → publish) runs on a SQLite file. We then
//! go back to the checkpoint before `review`, change the draft with
//! `update_state`, and run again from there: a new branch, while the original
//! stays in the history.
//!
//! Run it with `cargo run --example time_travel`.

use stategraph::checkpoint::ListOptions;
use stategraph::prelude::*;
use stategraph::sqlite::SqliteSaver;

fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Article {
    draft: String,
    #[reducer(append)]
    log: Vec<String>,
}

#[node]
fn write(_: &Article) -> ArticleUpdate {
    Article::update()
        .draft("Rust graphs are fast".into())
        .log(vec!["written".into()])
}

#[node]
fn review(article: &Article) -> ArticleUpdate {
    Article::update()
        .draft(format!("{}!", article.draft))
        .log(vec![format!("reviewed: {}", article.draft)])
}

#[node]
fn publish(article: &Article) -> ArticleUpdate {
    Article::update().log(vec![format!("published: {}", article.draft)])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("stategraph-time-travel-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let saver = SqliteSaver::open(dir.join("articles.db")).await?;
    let app = StateGraph::<Article>::new()
        .add_sequence((write, review, publish))
        .add_edge(START, write)
        .compile_with(saver)?;
    let thread = RunConfig::thread("article-1");

    let done = app.invoke(Article::update(), &thread).await?;
    println!("first run: {:?}\n", done.log);

    println!("history (newest first):");
    let history = app
        .get_state_history(&thread, &ListOptions::default())
        .await?;
    for snapshot in &history {
        let meta = snapshot
            .metadata
            .as_ref()
            .expect("stored checkpoints have metadata");
        println!(
            "  step {:>2} {:<6?} next={:<12?} draft={:?}",
            meta.step, meta.source, snapshot.next, snapshot.values.draft
        );
    }

    // Back to just before `review`, with a different draft.
    let before_review = history
        .iter()
        .find(|s| s.next == ["review"])
        .expect("the run went through review");
    let fork = app
        .update_state(
            &RunConfig::at_checkpoint(&before_review.config),
            Article::update().draft("Typed graphs are safer".into()),
            Some("write"),
        )
        .await?;
    let replayed = app.invoke(None, &RunConfig::at_checkpoint(&fork)).await?;
    println!("\nforked run: {:?}", replayed.log);

    let total = app
        .get_state_history(&thread, &ListOptions::default())
        .await?
        .len();
    println!("the thread now has {total} checkpoints; both branches are kept");
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
