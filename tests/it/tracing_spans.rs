//! The engine reports tracing spans for the run, each superstep and each task.

use stategraph::prelude::*;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every span as "name field=value ...".
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = Fields(span.metadata().name().to_owned());
        span.record(&mut fields);
        let mut spans = self.0.lock().unwrap();
        spans.push(fields.0);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Count {
    n: u32,
}

/// Runs [`spans_of_a_run`] in a process of its own. tracing caches each span
/// callsite's interest globally: in this binary, other tests run on other
/// threads without a subscriber and can reach the engine's callsites first, so
/// a thread-local subscriber here would miss spans now and then.
#[test]
fn runs_supersteps_and_tasks_have_spans_with_their_ids() {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            format!("{module}::spans_of_a_run").as_str(),
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child ran no test: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
#[ignore = "run in a process of its own by `runs_supersteps_and_tasks_have_spans_with_their_ids`"]
fn spans_of_a_run() {
    let app = StateGraph::<Count>::new()
        .add_node(node_fn("bump", |c: &Count| Count::update().n(c.n + 1)))
        .add_edge(START, "bump")
        .compile()
        .unwrap();
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        futures::executor::block_on(app.invoke(Count::update(), &RunConfig::thread("t-7")))
            .unwrap();
    });
    let spans = capture.0.lock().unwrap().clone();
    assert!(
        spans.iter().any(|s| s == "graph_run thread_id=\"t-7\""),
        "{spans:#?}"
    );
    assert!(
        spans.iter().any(|s| s == "superstep step=0 tasks=1"),
        "{spans:#?}"
    );
    assert!(
        spans.iter().any(|s| s == "superstep step=1 tasks=1"),
        "{spans:#?}"
    );
    let task = spans
        .iter()
        .find(|s| s.starts_with("task node=bump"))
        .expect("a span for the bump task");
    assert!(
        task.contains("step=1") && task.contains("thread_id=\"t-7\""),
        "{task}"
    );
    assert!(task.contains("task_id="), "{task}");
}
