//! The testing kit (`stategraph::testing`): the Stepper drives a graph step by
//! step with faked nodes; reducer laws catch broken reducers with a shrunk
//! counterexample; the recording fakes record; snapshots normalise ids.

use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
use stategraph::prelude::*;
use stategraph::testing::fakes::{RecordingSaver, RecordingStore, SaverCall, Script};
use stategraph::testing::{laws, reducer_laws, StepError, Stepper, TaskStatus};
use stategraph::{json, RetryPolicy};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Trip {
    #[reducer(concat)]
    log: Vec<String>,
    booked: bool,
}

static FLIGHT_RUNS: AtomicUsize = AtomicUsize::new(0);

#[node]
fn plan(_: &Trip) -> Vec<stategraph::Send> {
    vec![
        send(flight, "LIS".to_owned()),
        send(hotel, "LIS".to_owned()),
    ]
}

#[node(state = Trip)]
fn flight(city: &String) -> TripUpdate {
    FLIGHT_RUNS.fetch_add(1, Ordering::SeqCst);
    Trip::update().log(vec![format!("flight to {city}")])
}

#[node(state = Trip)]
fn hotel(city: &String) -> TripUpdate {
    Trip::update().log(vec![format!("hotel in {city}")])
}

#[node]
fn book(trip: &Trip) -> TripUpdate {
    Trip::update().booked(trip.log.len() == 2)
}

fn trip() -> StateGraph<Trip> {
    StateGraph::<Trip>::new()
        .add_node(plan)
        .add_node(flight)
        .add_node(hotel)
        .add_node(book)
        .add_edge(START, plan)
        .add_edge(flight, book)
        .add_edge(hotel, book)
}

#[tokio::test]
async fn each_step_shows_its_tasks_their_writes_and_the_state_after() {
    let app = trip().compile().unwrap();
    let mut stepper = Stepper::new(&app, Trip::update(), &RunConfig::new());

    let upcoming = stepper.upcoming().await.unwrap();
    // Step 0 ran the input (`__start__`), as in LangGraph, where the first
    // node's `langgraph_step` is 1 (with a checkpointer or without).
    assert_eq!((upcoming.step, upcoming.nodes()), (1, vec!["plan"]));
    let step = stepper.step().await.unwrap();
    assert_eq!(step.nodes(), ["plan"]);
    assert!(step.state.log.is_empty() && !step.finished);

    let upcoming = stepper.upcoming().await.unwrap();
    assert_eq!(upcoming.nodes(), ["flight", "hotel"]);
    assert!(upcoming.tasks.iter().all(|t| t.send && !t.restored));
    let step = stepper.step().await.unwrap();
    assert_eq!(step.step, 2);
    // Each task's own writes, and the state with both folded in task order.
    let flight_writes = step.writes("flight");
    assert_eq!(flight_writes.len(), 1);
    assert_eq!(
        flight_writes[0].log,
        Some(ReducerWrite::Value(vec!["flight to LIS".to_owned()]))
    );
    assert_eq!(step.state.log, ["flight to LIS", "hotel in LIS"]);

    let step = stepper.step().await.unwrap();
    assert_eq!(step.nodes(), ["book"]);
    assert!(step.state.booked && step.finished && step.error.is_none());
    assert!(stepper.is_done());
    assert!(matches!(stepper.step().await, Err(StepError::Ended)));

    // The same run, invoked whole, ends in the same state.
    let whole = app.invoke(Trip::update(), &RunConfig::new()).await.unwrap();
    assert_eq!(whole.state, *step.state);
}

#[tokio::test]
async fn a_faked_output_replaces_the_node_which_does_not_run() {
    let app = trip().compile().unwrap();
    let mut stepper = Stepper::new(&app, Trip::update(), &RunConfig::new());
    stepper.step().await.unwrap();
    let before = FLIGHT_RUNS.load(Ordering::SeqCst);
    stepper.fake_output("flight", Trip::update().log(vec!["train to LIS".into()]));
    let step = stepper.step().await.unwrap();
    assert_eq!(FLIGHT_RUNS.load(Ordering::SeqCst), before);
    assert!(step.task("flight").is_some_and(|t| t.faked));
    assert!(step.task("hotel").is_some_and(|t| !t.faked));
    assert_eq!(step.state.log, ["train to LIS", "hotel in LIS"]);
}

#[derive(Debug, thiserror::Error)]
#[error("the flight API timed out")]
struct FlightApiDown;

#[tokio::test]
async fn a_faked_failure_fails_the_step_and_applies_nothing() {
    let app = trip().compile().unwrap();
    let mut stepper = Stepper::new(&app, Trip::update(), &RunConfig::new());
    stepper.step().await.unwrap();
    stepper.fake_error("flight", || FlightApiDown);
    let step = stepper.step().await.unwrap();
    assert!(step.finished);
    assert!(matches!(
        &step.error,
        Some(GraphError::NodeFailed { node, source, .. })
            if node == "flight" && source.to_string() == "the flight API timed out"
    ));
    assert!(matches!(
        step.task("flight").map(|t| &t.status),
        Some(TaskStatus::Failed(message)) if message.ends_with("): the flight API timed out")
    ));
    // Nothing of the failed step is applied.
    assert!(step.state.log.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_faked_transient_failure_is_retried_under_the_nodes_policy() {
    let policy = RetryPolicy::new()
        .max_attempts(3)
        .initial_interval(Duration::from_secs(30));
    let app = StateGraph::<Trip>::new()
        .add_node_with(book, NodeOptions::new().retry(policy))
        .add_edge(START, book)
        .compile()
        .unwrap();
    let mut stepper = Stepper::new(&app, Trip::update(), &RunConfig::new());
    // The first two attempts fail; the paused clock skips the 30 s and 60 s waits.
    stepper.fake_with("book", |ctx: Context| async move {
        if ctx.attempt() < 3 {
            return Err(NodeError::transient(FlightApiDown));
        }
        Ok(Trip::update().booked(true))
    });
    let step = stepper.step().await.unwrap();
    assert!(step.error.is_none() && step.state.booked);
}

#[tokio::test(start_paused = true)]
async fn a_slow_fake_trips_the_nodes_timeout() {
    let app = StateGraph::<Trip>::new()
        .add_node_with(book, NodeOptions::new().timeout(Duration::from_secs(5)))
        .add_edge(START, book)
        .compile()
        .unwrap();
    let mut stepper = Stepper::new(&app, Trip::update(), &RunConfig::new());
    stepper.fake_with("book", |_ctx: Context| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Trip::update().booked(true)
    });
    let step = stepper.step().await.unwrap();
    assert!(matches!(
        &step.error,
        Some(GraphError::NodeFailed { node, source, .. })
            if node == "book" && source.is::<stategraph::error::NodeTimeout>()
    ));
}

#[tokio::test]
async fn faking_a_node_that_does_not_run_in_the_step_is_an_error() {
    let app = trip().compile().unwrap();
    let mut stepper = Stepper::new(&app, Trip::update(), &RunConfig::new());
    stepper.fake_error("book", || FlightApiDown);
    match stepper.step().await {
        Err(StepError::NotInStep {
            node,
            step,
            upcoming,
        }) => {
            assert_eq!(
                (node.as_str(), step, upcoming),
                ("book", 1, vec!["plan".to_owned()])
            );
        }
        other => panic!("expected NotInStep, got {other:?}"),
    }
    // The step is still there to run.
    assert_eq!(stepper.step().await.unwrap().nodes(), ["plan"]);
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Approval {
    amount: u32,
    approved: bool,
}

#[node]
fn ask(a: &Approval, ctx: &Context) -> Result<ApprovalUpdate, NodeError> {
    let yes: bool = ctx.interrupt(json!({"amount": a.amount}))?;
    Ok(Approval::update().approved(yes))
}

#[tokio::test]
async fn an_interrupt_ends_the_stepper_and_a_new_one_resumes_the_thread() {
    let app = StateGraph::<Approval>::new()
        .add_node(ask)
        .add_edge(START, ask)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    let config = RunConfig::thread("t");
    let mut stepper = Stepper::new(&app, Approval::update().amount(500), &config);
    let step = stepper.step().await.unwrap();
    assert!(step.finished && step.error.is_none());
    assert_eq!(step.interrupts.len(), 1);
    assert_eq!(step.interrupts[0].value, json!({"amount": 500}));
    assert!(
        matches!(step.task("ask").map(|t| &t.status), Some(TaskStatus::Interrupted(i)) if i.len() == 1)
    );

    let mut stepper = Stepper::new(&app, Command::resume(true), &config);
    let step = stepper.step().await.unwrap();
    assert!(step.state.approved && step.interrupts.is_empty() && step.finished);
}

#[tokio::test]
async fn a_run_that_fails_before_its_first_step_says_so() {
    let app = trip().compile().unwrap();
    // No input on a fresh thread.
    let mut stepper = Stepper::new(&app, None, &RunConfig::new());
    assert!(matches!(
        stepper.upcoming().await,
        Err(StepError::Run(GraphError::EmptyInput(_)))
    ));
    assert!(matches!(stepper.step().await, Err(StepError::Ended)));
}

#[test]
fn list_append_passes_its_laws() {
    laws::list_append(concat).check();
}

#[test]
fn add_messages_passes_its_laws() {
    laws::add_messages().check();
}

#[test]
fn map_union_passes_its_laws_and_a_left_biased_one_does_not() {
    use std::collections::BTreeMap;
    fn union(mut a: BTreeMap<u8, u8>, b: BTreeMap<u8, u8>) -> BTreeMap<u8, u8> {
        a.extend(b);
        a
    }
    fn keep_first(mut a: BTreeMap<u8, u8>, b: BTreeMap<u8, u8>) -> BTreeMap<u8, u8> {
        for (k, v) in b {
            a.entry(k).or_insert(v);
        }
        a
    }
    laws::map_union(union).check();
    let broken = laws::map_union(keep_first).try_check().unwrap_err();
    assert_eq!(broken.law, "union, b wins");
}

#[test]
fn a_broken_law_names_itself_with_the_smallest_counterexample() {
    fn minus(a: i32, b: i32) -> i32 {
        a.wrapping_sub(b)
    }
    let broken = reducer_laws(minus).try_check().unwrap_err();
    assert_eq!(broken.law, "associativity");
    // Shrunk: (a - b) - c != a - (b - c) needs only c != 0, and proptest
    // shrinks each value towards 0 (c to 1 or -1).
    let shrunk = ["a = 0", "b = 0", "o = 0", "r(r(a, b), c) = Ok("];
    assert!(
        shrunk.iter().all(|s| broken.detail.contains(s)),
        "{}",
        broken.detail
    );
    assert!(broken.detail.contains("c = 1\n") || broken.detail.contains("c = -1\n"));

    // `max` keeps 0 as its identity on u32, not on i32.
    fn max(a: i32, b: i32) -> i32 {
        a.max(b)
    }
    let broken = reducer_laws(max)
        .default_is_identity()
        .try_check()
        .unwrap_err();
    assert_eq!(broken.law, "default is identity");
    reducer_laws(|a: u32, b: u32| a.max(b))
        .default_is_identity()
        .commutative()
        .check();
}

#[tokio::test]
async fn the_recording_saver_and_store_record_every_call() {
    let saver = RecordingSaver::new(InMemorySaver::new());
    let store = RecordingStore::new(stategraph::store::InMemoryStore::new());
    let app = StateGraph::<Approval>::new()
        .add_node(ask)
        .add_edge(START, ask)
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver.clone())
                .store(store.clone()),
        )
        .unwrap();
    let config = RunConfig::thread("t");
    app.invoke(Approval::update().amount(1), &config)
        .await
        .unwrap();
    let puts: Vec<_> = saver
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            SaverCall::Put { step, source, .. } => Some((step, source)),
            _ => None,
        })
        .collect();
    // The input checkpoint; the step that paused stores its interrupt as a write.
    assert_eq!(
        puts,
        [(-1, CheckpointSource::Input), (0, CheckpointSource::Loop)]
    );
    assert!(saver.calls().iter().any(|c| matches!(
        c,
        SaverCall::PutWrites { channels, .. } if channels == &["__interrupt__"]
    )));
    saver.clear();
    assert!(saver.calls().is_empty());

    use stategraph::store::{Namespace, Store};
    let prefs = Namespace::new(["prefs"]).unwrap();
    store
        .put(&prefs, "lang", json!({"lang": "pt"}))
        .await
        .unwrap();
    store.get(&prefs, "lang").await.unwrap();
    assert_eq!(store.ops().len(), 2);
}

#[test]
fn a_script_numbers_its_tool_calls() {
    let script = Script::new()
        .tool_call("add", json!({"a": 3, "b": 4}))
        .tool_calls([("multiply", json!({"a": 7})), ("log", json!({}))])
        .answer("84");
    let ids: Vec<Vec<&str>> = script
        .replies()
        .iter()
        .map(|r| r.tool_calls.iter().map(|c| c.id.as_str()).collect())
        .collect();
    assert_eq!(ids, [vec!["call_1"], vec!["call_2", "call_3"], vec![]]);
    assert_eq!(script.replies()[2].content, "84");
}

#[tokio::test]
async fn a_history_snapshot_has_no_ids_or_timestamps() {
    let app = StateGraph::<Approval>::new()
        .add_node(ask)
        .add_edge(START, ask)
        .compile_with(CompileOptions::new().checkpointer(InMemorySaver::new()))
        .unwrap();
    stategraph::assert_graph_snapshot!("approval_graph", app);
    let config = RunConfig::thread("t");
    app.invoke(Approval::update().amount(500), &config)
        .await
        .unwrap();
    app.invoke(Command::resume(false), &config).await.unwrap();
    let history = app
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    stategraph::assert_history_snapshot!("approval_history", history);
}
