//! Drawing a graph: Mermaid and Graphviz files of a graph with a subgraph,
//! typed conditional edges and a fan-out with `send`.
//!
//! A `review` graph sends each draft to a `critique` subgraph (its own state,
//! reached only by `send`, declared with `destinations` so the drawing shows the
//! Send); `gather` runs once all critiques are in, and its router, typed by
//! `#[derive(Goto)] enum Verdict`, goes back to `write` or on to `publish`. The drawings show every declared route; with
//! `DrawOptions::xray(1)` the subgraph is a box with its own nodes.
//!
//! It writes `graph.mmd` (paste it into any Mermaid viewer, e.g. a Markdown
//! ```mermaid block on GitHub) and `graph.dot`, plus the expanded
//! `graph-xray.mmd` and `graph-xray.dot`, into `target/draw/` (under
//! `$CARGO_TARGET_DIR` when that is set), or into the directory given with
//! `--out DIR`. When Graphviz's `dot` is on the PATH it also renders
//! `graph.png` and `graph-xray.png`; otherwise it prints the command that would.
//!
//! Run it with `cargo run --example draw` (or `cargo run --example draw -- --out DIR`).

use stategraph::prelude::*;
use stategraph::{DrawOptions, Subgraph};
use std::path::{Path, PathBuf};
use std::process::Command as Process;

fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Review {
    drafts: Vec<String>,
    #[reducer(append)]
    notes: Vec<String>,
}

/// The state of one critique, inside the subgraph.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Critique {
    draft: String,
    note: String,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Verdict {
    Write,
    Publish,
}

#[node]
fn write(review: &Review) -> ReviewUpdate {
    let round = review.notes.len() / 2 + 1;
    Review::update().drafts(vec![format!("draft {round}a"), format!("draft {round}b")])
}

#[node]
fn gather(_: &Review) {}

#[node]
fn publish(_: &Review) {}

fn critique_graph() -> Result<CompiledGraph<Critique>, GraphError> {
    StateGraph::<Critique>::new()
        .add_node(node_fn("read", |_: &Critique| ()))
        .add_node(node_fn("comment", |c: &Critique| {
            Critique::update().note(format!("{}: fine", c.draft))
        }))
        .add_edge(START, "read")
        .add_edge("read", "comment")
        .compile()
}

fn review_graph() -> Result<CompiledGraph<Review>, GraphError> {
    let critique = Subgraph::mapped(
        "critique",
        critique_graph()?,
        |draft: &String| Critique::update().draft(draft.clone()),
        |done: Critique| Review::update().notes(vec![done.note]),
    );
    let fan_out = {
        let critique = critique.clone();
        move |r: &Review| {
            r.drafts
                .iter()
                .map(|d| send(&critique, d.clone()))
                .collect::<Vec<_>>()
        }
    };
    StateGraph::<Review>::new()
        .add_node(write)
        .add_node(critique.clone())
        .add_node(gather)
        .add_node(publish)
        .add_edge(START, write)
        .add_conditional_edges(write, fan_out)
        .destinations(write, &critique)
        .add_edge(&critique, gather)
        .add_conditional_edges(gather, |r: &Review| {
            if r.notes.len() < 4 {
                Verdict::Write
            } else {
                Verdict::Publish
            }
        })
        .add_edge(publish, END)
        .compile()
}

fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Renders `dot` to `png` with Graphviz, if it is installed.
fn render(dot: &Path, png: &Path) -> std::io::Result<()> {
    match Process::new("dot")
        .arg("-Tpng")
        .arg(dot)
        .arg("-o")
        .arg(png)
        .status()
    {
        Ok(status) if status.success() => {
            println!("wrote {}", png.display());
            Ok(())
        }
        Ok(status) => Err(std::io::Error::other(format!(
            "`dot -Tpng {}` failed ({status})",
            dot.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "Graphviz is not installed: render with `dot -Tpng {} -o {}` \
                 (apt-get install graphviz), or view the .mmd at https://mermaid.live",
                dot.display(),
                png.display()
            );
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Where the drawings go: `--out DIR`, or `draw/` in the build's target
/// directory (never the current directory, which is usually the repository).
fn out_dir() -> Result<PathBuf, String> {
    let mut args = std::env::args_os().skip(1);
    let mut out = None;
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--out") => match args.next() {
                Some(dir) => out = Some(PathBuf::from(dir)),
                None => return Err("--out needs a directory".into()),
            },
            _ => {
                return Err(format!(
                    "unexpected argument {arg:?}; usage: cargo run --example draw [-- --out DIR]"
                ))
            }
        }
    }
    Ok(out.unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
            .join("draw")
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = out_dir()?;
    std::fs::create_dir_all(&dir)?;
    let app = review_graph()?;

    // The graph runs as drawn: two drafts a round, one critique each, two rounds.
    let done = app.invoke(Review::update(), &RunConfig::new()).await?;
    println!("notes: {}", done.notes.join(", "));

    let chart = app.draw_mermaid();
    // The typed router's two targets, and the Send the declaration makes visible.
    assert!(chart.contains("gather -.-> write;") && chart.contains("gather -.-> publish;"));
    assert!(chart.contains("write -. Send .-> critique;"));

    let xray = DrawOptions::new().xray(1);
    for (name, mermaid, dot) in [
        ("graph", chart, app.draw_dot()),
        (
            "graph-xray",
            app.draw_mermaid_with(&xray),
            app.draw_dot_with(&xray),
        ),
    ] {
        write_file(&dir.join(format!("{name}.mmd")), &mermaid)?;
        let dot_path = dir.join(format!("{name}.dot"));
        write_file(&dot_path, &dot)?;
        render(&dot_path, &dir.join(format!("{name}.png")))?;
    }
    Ok(())
}
