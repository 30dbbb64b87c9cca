//! Streaming: progress of a long graph shown with `indicatif` progress bars,
//! driven by the run's typed stream events.
//!
//! A pipeline fans out 40 `Send`s to a `render` worker (each takes a little
//! while), then a `publish` step. One bar counts supersteps (from `values`
//! events); another counts rendered pages as the workers report them, live,
//! through the `custom` mode (`ctx.write_custom`). The `tasks` mode reports each
//! task's result too, but only once its whole superstep is over, in task order
//! (docs/semantics.md §9.2): too late for a progress bar, so they are counted
//! and checked at the end. Every event is a typed `StreamEvent<Pipeline>`: no
//! string keys to match.
//!
//! When stdout is not a terminal (piped to a file or another program), the bars
//! could not redraw in place, so the same events are printed as plain lines,
//! one per event, labelled by their stream mode: the order they arrive in shows
//! when each mode reports.
//!
//! Run it with `cargo run --example streaming` (and `... | cat` for the lines).

use futures::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use stategraph::prelude::*;
use std::io::IsTerminal;
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

/// What the run's progress is shown with: bars on a terminal, lines otherwise.
enum Progress {
    Bars {
        steps: ProgressBar,
        tasks: ProgressBar,
    },
    Lines {
        steps: u64,
        rendered: u64,
        pages: u32,
    },
}

impl Progress {
    fn new(pages: u32) -> Self {
        if !std::io::stdout().is_terminal() {
            return Progress::Lines {
                steps: 0,
                rendered: 0,
                pages,
            };
        }
        let bars = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
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
        Progress::Bars { steps, tasks }
    }

    /// A `values` event: a superstep changed the state.
    fn step(&mut self, state: &Pipeline) {
        match self {
            Progress::Bars { steps, .. } => steps.inc(1),
            Progress::Lines { steps, pages, .. } => {
                *steps += 1;
                println!(
                    "[values] step {steps}/3: {}/{pages} pages rendered, published: {}",
                    state.rendered.len(),
                    state.published
                );
            }
        }
    }

    /// A `custom` event: a worker reports a rendered page.
    fn rendered(&mut self, message: &str) {
        match self {
            Progress::Bars { tasks, .. } => {
                tasks.inc(1);
                tasks.set_message(message.to_owned());
            }
            Progress::Lines {
                rendered, pages, ..
            } => {
                *rendered += 1;
                println!("[custom] {message} ({rendered}/{pages})");
            }
        }
    }

    /// A `tasks` event: a render task's result, after its superstep.
    fn task_result(&self, finished: u32) {
        if let Progress::Lines { pages, .. } = self {
            println!("[tasks]  render task {finished}/{pages} finished");
        }
    }

    fn finish(&self) {
        if let Progress::Bars { steps, tasks } = self {
            steps.finish();
            tasks.finish_with_message("done");
            // The cursor stays at the end of the last bar.
            println!();
        }
    }
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
    let mut progress = Progress::new(pages);
    let modes = [StreamMode::Values, StreamMode::Tasks, StreamMode::Custom];
    let mut events = app.stream(Pipeline::update().pages(pages), &RunConfig::new(), modes);
    let mut last = None;
    let mut finished = 0;
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::Values(state) => {
                progress.step(&state);
                last = Some(state);
            }
            StreamEvent::Custom { value, .. } => match value.as_str() {
                Some(text) => progress.rendered(text),
                None => progress.rendered(&value.to_string()),
            },
            StreamEvent::TaskResult { name, error, .. } if &*name == "render" => {
                if let Some(error) = error {
                    return Err(format!("a render task failed: {error}").into());
                }
                finished += 1;
                progress.task_result(finished);
            }
            _ => {}
        }
    }
    progress.finish();

    let state = last.ok_or("the stream ended without a values event")?;
    println!(
        "rendered {} pages ({finished} render tasks reported by the tasks mode), published: {}",
        state.rendered.len(),
        state.published
    );
    Ok(())
}
