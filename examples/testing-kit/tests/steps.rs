//! The graph, one superstep at a time, with the quoting tool faked.

use stategraph::prelude::*;
use stategraph::testing::{assert_state_eq, Stepper, TaskStatus};
use std::collections::BTreeMap;
use testing_kit::{graph, QuoteUnavailable, Trip, TripUpdate};

fn lisbon() -> TripUpdate {
    Trip::update().city("Lisbon".into())
}

#[tokio::test]
async fn every_airline_is_asked_in_one_step_then_the_cheapest_is_chosen() {
    let app = graph().unwrap();
    let mut stepper = Stepper::new(&app, lisbon(), &RunConfig::new());
    assert_eq!(stepper.step().await.unwrap().nodes(), ["ask_all"]);

    let quotes = stepper.step().await.unwrap();
    assert_eq!(quotes.nodes(), ["quote", "quote", "quote"]);
    assert_eq!(quotes.state.quotes.len(), 3);

    let last = stepper.step().await.unwrap();
    assert!(last.finished);
    assert_state_eq(
        &*last.state,
        &Trip {
            city: "Lisbon".into(),
            quotes: BTreeMap::from([
                ("easyjet".into(), 95),
                ("ryanair".into(), 120),
                ("tap".into(), 180),
            ]),
            log: vec![
                "tap quoted 180".into(),
                "easyjet quoted 95".into(),
                "ryanair quoted 120".into(),
            ],
            choice: Some("easyjet".into()),
        },
    );
}

#[tokio::test]
async fn a_failing_quote_tool_fails_the_step_and_nothing_is_chosen() {
    let app = graph().unwrap();
    let mut stepper = Stepper::new(&app, lisbon(), &RunConfig::new());
    stepper.step().await.unwrap();

    // The quoting tool is down for this step.
    stepper.fake_error("quote", || QuoteUnavailable {
        airline: "tap".into(),
    });
    let step = stepper.step().await.unwrap();
    assert!(step.finished, "the run stops at the failed step");
    assert!(matches!(
        &step.error,
        Some(GraphError::NodeFailed { node, .. }) if node == "quote"
    ));
    assert!(step.tasks.iter().any(|t| matches!(
        &t.status,
        TaskStatus::Failed(message) if message.ends_with("the quote service of tap did not answer")
    )));
    // Nothing of the failed step is applied: no quote, no choice.
    assert!(step.state.quotes.is_empty() && step.state.choice.is_none());
}
