//! What an entrypoint streams: its task calls in the `tasks` and `debug`
//! modes, its output in `values` mode, each checked against Python LangGraph
//! 1.2.22 streaming the same workflow (recorded in each test's comment).

use futures::StreamExt;
use stategraph::checkpoint::InMemorySaver;
use stategraph::func::{entrypoint, interrupt, task, Entrypoint};
use stategraph::prelude::*;

/// The graph event an entrypoint streamed in a mode other than `values`.
fn graph_event<F: stategraph::func::EntrypointFn>(
    event: stategraph::func::EntryEvent<F>,
) -> StreamEvent<stategraph::func::StateOf<F>> {
    match event {
        stategraph::func::EntryEvent::Graph(event) => event,
        other => panic!("a values event: {:?}", other.mode()),
    }
}

#[task]
fn double(n: u32) -> u32 {
    n * 2
}

#[entrypoint]
async fn wf(n: u32) -> Result<u32, NodeError> {
    let a = double(n).await?;
    let b = double(a).await?;
    Ok(a + b)
}

#[task]
fn bad(_n: u32) -> Result<u32, NodeError> {
    Err(NodeError::msg("nope"))
}

#[entrypoint]
async fn tolerant(n: u32) -> Result<u32, NodeError> {
    let _ = bad(n).await;
    Ok(1)
}

#[entrypoint]
async fn asks(n: u32) -> Result<u32, NodeError> {
    let a = double(n).await?;
    let ok: bool = interrupt("ok?")?;
    Ok(a + u32::from(ok))
}

/// An event as one line: its kind, name and payload, without ids.
fn line<S: stategraph::State>(event: &StreamEvent<S>) -> String
where
    S::Update: std::fmt::Debug,
{
    match event {
        StreamEvent::TaskStart { name, triggers, .. } => format!("start {name} {triggers:?}"),
        StreamEvent::TaskResult { name, error, .. } => format!("result {name} error={error:?}"),
        StreamEvent::CallResult {
            task, error, value, ..
        } => format!("call result {task} {value:?} error={error:?}"),
        StreamEvent::Checkpoint(c) => format!("checkpoint {} {:?}", c.metadata.step, c.next),
        StreamEvent::Debug { step, event } => format!("debug {step} {}", line(event)),
        other => format!("{:?}", other.mode()),
    }
}

/// Python: `wf.stream(3, stream_mode="tasks")` (ids left out):
/// ```text
/// {'name': 'wf', 'input': 3, 'triggers': ('__start__',)}
/// {'name': 'double', 'input': ((3,), {}), 'triggers': ('__pregel_push',)}
/// {'name': 'double', 'error': None, 'result': {'__return__': 6}, 'interrupts': []}
/// {'name': 'double', 'input': ((6,), {}), 'triggers': ('__pregel_push',)}
/// {'name': 'double', 'error': None, 'result': {'__return__': 12}, 'interrupts': []}
/// {'name': 'wf', 'error': None, 'result': {'__end__': 18}, 'interrupts': []}
/// ```
/// A call's start and result share its id, as in Python.
#[tokio::test]
async fn tasks_mode_reports_each_task_call_between_the_entrypoints_start_and_result() {
    let app = Entrypoint::new(wf).compile().unwrap();
    let events: Vec<_> = app
        .stream(3, &RunConfig::new(), StreamMode::Tasks)
        .map(|e| graph_event(e.unwrap()))
        .collect()
        .await;
    let lines: Vec<String> = events.iter().map(line).collect();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(lines[0].starts_with("start wf "), "{lines:#?}");
    assert_eq!(
        lines[1..],
        [
            "start double [\"__pregel_push\"]",
            "call result double Some(Number(6)) error=None",
            "start double [\"__pregel_push\"]",
            "call result double Some(Number(12)) error=None",
            "result wf error=None",
        ]
    );
    let id = |e: &StreamEvent<_>| match e {
        StreamEvent::TaskStart { id, .. } | StreamEvent::CallResult { id, .. } => id.clone(),
        _ => String::new(),
    };
    assert_eq!(id(&events[1]), id(&events[2]));
    assert_eq!(id(&events[3]), id(&events[4]));
    assert_ne!(id(&events[1]), id(&events[3]));
    let StreamEvent::TaskResult { updates, .. } = &events[5] else {
        panic!("{events:?}")
    };
    assert_eq!(updates[0].output, Some(Some(18)));
}

/// Python: a task call that fails, its error caught by the entrypoint:
/// ```text
/// {'name': 'wf2', 'input': 3, 'triggers': ('__start__',)}
/// {'name': 'bad', 'input': ((3,), {}), 'triggers': ('__pregel_push',)}
/// {'name': 'bad', 'error': ValueError('nope'), 'result': {}, 'interrupts': []}
/// {'name': 'wf2', 'error': None, 'result': {'__end__': 1}, 'interrupts': []}
/// ```
#[tokio::test]
async fn a_failed_task_call_reports_its_error_in_tasks_mode() {
    let app = Entrypoint::new(tolerant).compile().unwrap();
    let lines: Vec<String> = app
        .stream(3, &RunConfig::new(), StreamMode::Tasks)
        .map(|e| line(&graph_event(e.unwrap())))
        .collect()
        .await;
    assert_eq!(
        lines[1..],
        [
            "start bad [\"__pregel_push\"]",
            "call result bad None error=Some(\"nope\")",
            "result tolerant error=None",
        ]
    );
}

/// Python, `stream_mode="debug"` with a checkpointer (`type` and `step`):
/// ```text
/// -1 checkpoint (next ['wf'])
/// 0 task wf
/// 0 task double
/// 0 task_result double
/// 0 task double
/// 0 task_result double
/// 0 task_result wf
/// 0 checkpoint (next [])
/// ```
#[tokio::test]
async fn debug_mode_wraps_the_task_calls_with_the_entrypoints_step() {
    let app = Entrypoint::new(wf)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let lines: Vec<String> = app
        .stream(3, &RunConfig::thread("debug"), StreamMode::Debug)
        .map(|e| line(&graph_event(e.unwrap())))
        .collect()
        .await;
    assert_eq!(lines.len(), 8, "{lines:#?}");
    assert_eq!(lines[0], "debug -1 checkpoint -1 [\"wf\"]");
    assert!(lines[1].starts_with("debug 0 start wf "), "{lines:#?}");
    assert_eq!(
        lines[2..],
        [
            "debug 0 start double [\"__pregel_push\"]",
            "debug 0 call result double Some(Number(6)) error=None",
            "debug 0 start double [\"__pregel_push\"]",
            "debug 0 call result double Some(Number(12)) error=None",
            "debug 0 result wf error=None",
            "debug 0 checkpoint 0 []",
        ]
    );
}

/// Python: `stream_mode="values"` reports the entrypoint's output alone, once
/// at the end of a run (the input is no `values` event, nor the output of the
/// thread's run before); a resume first reports the output the thread holds
/// (`None` while its first run is paused):
/// ```text
/// wf.stream(3, stream_mode="values")                  -> [18]
/// wf.stream(1, stream_mode="values") (same thread)    -> [6]
/// asks: stream(3) -> [{'__interrupt__': (Interrupt(value='ok?', ..),)}]
///       stream(Command(resume=True)) -> [None, 7]
/// ```
#[tokio::test]
async fn values_mode_reports_the_output_alone_once_per_run() {
    use stategraph::func::EntryEvent;
    fn outputs<F: stategraph::func::EntrypointFn>(
        events: Vec<EntryEvent<F>>,
    ) -> Vec<Option<F::Output>> {
        events
            .into_iter()
            .map(|e| match e {
                EntryEvent::Values(output) => output,
                other => panic!("not a values event: {:?}", other.mode()),
            })
            .collect()
    }
    let app = Entrypoint::new(wf)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("v");
    let events = app.stream(3, &config, StreamMode::Values);
    let events: Vec<_> = events.map(Result::unwrap).collect().await;
    assert_eq!(outputs(events), [Some(18)]);
    let events = app.stream(1, &config, StreamMode::Values);
    let events: Vec<_> = events.map(Result::unwrap).collect().await;
    assert_eq!(outputs(events), [Some(6)]);

    let app = Entrypoint::new(asks)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("v");
    let first: Vec<_> = app
        .stream(3, &config, StreamMode::Values)
        .map(Result::unwrap)
        .collect()
        .await;
    let [EntryEvent::ValuesAtInterrupt(interrupts)] = &first[..] else {
        panic!(
            "{:?}",
            first.iter().map(EntryEvent::mode).collect::<Vec<_>>()
        )
    };
    assert_eq!(interrupts[0].value, "ok?");
    let events: Vec<_> = app
        .stream_command(Command::resume(true), &config, StreamMode::Values)
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(outputs(events), [None, Some(7)]);
}
