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

#[test]
fn runs_supersteps_and_tasks_have_spans_with_their_ids() {
    let app = StateGraph::<Count>::new()
        .add_node(node_fn("bump", |c: &Count| Count::update().n(c.n + 1)))
        .add_edge(START, "bump")
        .compile()
        .unwrap();
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        // Other tests of this binary run on other threads without a
        // subscriber; a span callsite they hit first, while this subscriber
        // was not yet registered, can keep tracing's cached "never" (the
        // interest cache is global). Computed again now, with this subscriber.
        tracing::callsite::rebuild_interest_cache();
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
