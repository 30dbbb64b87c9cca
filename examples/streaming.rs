//! Streaming: progress of a long graph shown with `indicatif` progress bars,
//! driven by the run's typed stream events.
//!
//! A pipeline fans out 40 `Send`s to a `render` worker (each takes a little
//! while), then a `publish` step. One bar counts supersteps (from `values`
//! events), another counts finished render tasks (from `tasks` events), and the
//! workers' own progress messages arrive through the `custom` mode
//! (`ctx.write_custom`). Every event is a typed `StreamEvent<Pipeline>`: no
//! string keys to match.
//!
//! Run it with `cargo run --example streaming`.

use futures::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use stategraph::prelude::*;
use std::time::Duration;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Pipeline {
    pages: u32,
    #[reducer(concat)]
    rendered: Vec<u32>,
    published: bool,
}

/// Renders one page (a stand-in for real work).
#[node(state = Pipeline)]
async fn render(page: &u32, ctx: &Context) -> PipelineUpdate {
    tokio::time::sleep(Duration::from_millis(15 + u64::from(page % 5) * 5)).await;
    ctx.write_custom(format!("page {page} rendered"));
    Pipeline::update().rendered(vec![*page])
}

#[node]
fn publish(p: &Pipeline) -> PipelineUpdate {
    Pipeline::update().published(p.rendered.len() as u32 == p.pages)
}

fn fan_out(p: &Pipeline) -> Vec<stategraph::Send> {
    (0..p.pages).map(|page| send(render, page)).collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = StateGraph::<Pipeline>::new()
        .add_node(render)
        .add_node(publish)
        .add_conditional_edges(START, fan_out)
        .add_edge(render, publish)
        .compile()?;

    let pages = 40;
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>8} [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    let steps = bars.add(
        ProgressBar::new(3)
            .with_style(style.clone())
            .with_prefix("steps"),
    );
    let tasks = bars.add(
        ProgressBar::new(u64::from(pages))
            .with_style(style)
            .with_prefix("render"),
    );

    let modes = [StreamMode::Values, StreamMode::Tasks, StreamMode::Custom];
    let mut events = app.stream(Pipeline::update().pages(pages), &RunConfig::new(), modes);
    let mut last = None;
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::Values(state) => {
                steps.inc(1);
                last = Some(state);
            }
            StreamEvent::TaskResult { name, .. } if &*name == "render" => tasks.inc(1),
            StreamEvent::Custom { value, .. } => tasks.set_message(value.to_string()),
            _ => {}
        }
    }
    steps.finish();
    tasks.finish_with_message("done");

    let state = last.ok_or("the stream ended without a values event")?;
    println!(
        "rendered {} pages, published: {}",
        state.rendered.len(),
        state.published
    );
    Ok(())
}
