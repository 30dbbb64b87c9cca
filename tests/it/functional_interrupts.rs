//! Several interrupts in one entrypoint run: parallel task calls that each
//! ask, and the entrypoint's body asking after them. Each call's interrupt is
//! its own (its id, its answers), so answers reach the call they name, in any
//! order, whatever order the calls ask in. Checked against Python LangGraph
//! 1.2.22 (each test's comment records Python's output).

use stategraph::checkpoint::InMemorySaver;
use stategraph::func::{entrypoint, interrupt, task, Entrypoint};
use stategraph::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The tasks that ran, per thread (the tests run in parallel).
static RAN: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn ran(thread: &str) -> Vec<String> {
    let mut ran = RAN.lock().unwrap();
    let (mine, others) = ran.drain(..).partition(|(t, _)| t == thread);
    *ran = others;
    mine.into_iter().map(|(_, name)| name).collect()
}

#[task]
async fn ask_for(thread: String, name: String) -> Result<String, NodeError> {
    RAN.lock().unwrap().push((thread, name.clone()));
    let answer: String = interrupt(format!("q-{name}"))?;
    Ok(format!("{name}={answer}"))
}

#[entrypoint]
async fn three_asks(input: (String, Vec<String>)) -> Result<Vec<String>, NodeError> {
    let (thread, names) = input;
    let asked =
        futures::future::join_all(names.into_iter().map(|n| ask_for(thread.clone(), n))).await;
    let mut out = asked.into_iter().collect::<Result<Vec<_>, _>>()?;
    let body: String = interrupt("body")?;
    out.push(format!("body={body}"));
    Ok(out)
}

fn input(thread: &str) -> (String, Vec<String>) {
    (
        thread.to_owned(),
        ["a", "b", "c"].map(String::from).to_vec(),
    )
}

/// The pending interrupts' ids by question.
fn ids(interrupts: &[Interrupt]) -> BTreeMap<String, String> {
    interrupts
        .iter()
        .map(|i| (i.value_as::<String>().unwrap(), i.id.clone()))
        .collect()
}

fn questions(interrupts: &[Interrupt]) -> Vec<String> {
    interrupts
        .iter()
        .map(|i| i.value_as::<String>().unwrap())
        .collect()
}

/// Python (`@task async ask_for`, the entrypoint `asyncio.gather`s three
/// calls, then asks in its body):
/// ```text
/// invoke([a, b, c])        -> ['q-a']  ran ['a', 'b', 'c']
/// resume('x')              -> RuntimeError: When there are multiple pending interrupts, you must specify the inter..
/// resume_map(c: C)         -> ['q-a']  ran ['a', 'b', 'c']
/// resume_map(a: A)         -> ['q-b']  ran ['a', 'b']
/// resume_map(b: B)         -> ['body']  ran ['b']
/// resume('BODY')           -> ['a=A', 'b=B', 'c=C', 'body=BODY']  ran []
/// ```
/// (Python's output lists the first call's interrupt only, while its
/// checkpoint holds all three, which is why it refuses one value; here the
/// output lists every pending interrupt: `[q-a, q-b, q-c]`, then `[q-a, q-b]`.)
#[tokio::test]
async fn parallel_task_interrupts_are_answered_by_id_one_at_a_time_in_any_order() {
    let app = Entrypoint::new(three_asks)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("one");
    let run1 = app.invoke(input("one"), &config).await.unwrap();
    assert_eq!(questions(&run1.interrupts), ["q-a", "q-b", "q-c"]);
    assert_eq!(ran("one"), ["a", "b", "c"]);
    let id = ids(&run1.interrupts);
    assert_eq!(
        id.values().collect::<std::collections::BTreeSet<_>>().len(),
        3
    );

    let err = app
        .invoke_command(Command::resume("x"), &config)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "When there are multiple pending interrupts, you must specify the interrupt id"
        ),
        "{err}"
    );
    assert_eq!(ran("one"), Vec::<String>::new());

    let out = app
        .invoke_command(Command::resume_map([(&id["q-c"], "C")]), &config)
        .await
        .unwrap();
    assert_eq!(questions(&out.interrupts), ["q-a", "q-b"]);
    assert_eq!(ids(&out.interrupts)["q-a"], id["q-a"]);
    assert_eq!(ran("one"), ["a", "b", "c"]);

    let out = app
        .invoke_command(Command::resume_map([(&id["q-a"], "A")]), &config)
        .await
        .unwrap();
    assert_eq!(questions(&out.interrupts), ["q-b"]);
    assert_eq!(ran("one"), ["a", "b"]);

    let out = app
        .invoke_command(Command::resume_map([(&id["q-b"], "B")]), &config)
        .await
        .unwrap();
    assert_eq!(questions(&out.interrupts), ["body"]);
    assert_eq!(ran("one"), ["b"]);

    let out = app
        .invoke_command(Command::resume("BODY"), &config)
        .await
        .unwrap();
    assert_eq!(out.value.unwrap(), ["a=A", "b=B", "c=C", "body=BODY"]);
    assert_eq!(ran("one"), Vec::<String>::new());
}

/// Python (the same workflow, on another thread):
/// ```text
/// invoke([a, b, c])        -> ['q-a']  ran ['a', 'b', 'c']
/// resume_map(all three)    -> ['body']  ran ['a', 'b', 'c']
/// resume('BODY')           -> ['a=A', 'b=B', 'c=C', 'body=BODY']  ran []
/// ```
#[tokio::test]
async fn parallel_task_interrupts_are_answered_all_at_once_with_a_resume_map() {
    let app = Entrypoint::new(three_asks)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("all");
    let run1 = app.invoke(input("all"), &config).await.unwrap();
    let id = ids(&run1.interrupts);
    ran("all");
    let out = app
        .invoke_command(
            Command::resume_map([(&id["q-b"], "B"), (&id["q-c"], "C"), (&id["q-a"], "A")]),
            &config,
        )
        .await
        .unwrap();
    assert_eq!(questions(&out.interrupts), ["body"]);
    assert_eq!(ran("all"), ["a", "b", "c"]);

    let unknown = "0".repeat(32);
    let err = app
        .invoke_command(Command::resume_map([(&unknown, "x")]), &config)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            GraphError::InvalidResume(stategraph::error::ResumeError::UnknownInterrupt { id, .. })
                if *id == unknown
        ),
        "{err}"
    );

    let out = app
        .invoke_command(Command::resume("BODY"), &config)
        .await
        .unwrap();
    assert_eq!(out.value.unwrap(), ["a=A", "b=B", "c=C", "body=BODY"]);
}

// ---- the order calls ask in changes between runs ----

/// How many times `late` ran: it waits before asking on its first two runs
/// only, so on the third it asks before `early` returns its saved result.
static LATE_RUNS: AtomicUsize = AtomicUsize::new(0);

#[task]
async fn late() -> Result<String, NodeError> {
    if LATE_RUNS.fetch_add(1, Ordering::SeqCst) < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let answer: String = interrupt("late?")?;
    Ok(format!("late={answer}"))
}

#[task]
async fn early() -> Result<String, NodeError> {
    let answer: String = interrupt("early?")?;
    Ok(format!("early={answer}"))
}

#[entrypoint]
async fn racing(_n: u32) -> Result<(String, String), NodeError> {
    let (l, e) = futures::join!(late(), early());
    Ok((l?, e?))
}

/// Each answer reaches the call its id names, though the calls ask in
/// another order on each run: `early` asks first in the first two runs,
/// `late` in the third (a positional matching of answers to `interrupt`
/// calls would hand `late` the answer meant for `early`).
/// Python gives each `@task` call its own interrupt id and answers the same
/// way: `{'late': 'late=L', 'early': 'early=E'}`.
#[tokio::test]
async fn an_answer_reaches_the_call_it_names_whatever_order_calls_ask_in() {
    let app = Entrypoint::new(racing)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("race");
    let run1 = app.invoke(1, &config).await.unwrap();
    let id = ids(&run1.interrupts);
    assert_eq!(id.len(), 2, "{:?}", run1.interrupts);

    let run2 = app
        .invoke_command(Command::resume_map([(&id["early?"], "E")]), &config)
        .await
        .unwrap();
    assert_eq!(questions(&run2.interrupts), ["late?"]);

    let run3 = app
        .invoke_command(Command::resume_map([(&id["late?"], "L")]), &config)
        .await
        .unwrap();
    assert_eq!(LATE_RUNS.load(Ordering::SeqCst), 3);
    assert_eq!(
        run3.value,
        Some(("late=L".to_owned(), "early=E".to_owned()))
    );
}

// ---- a resume value of the wrong type, inside a task ----

#[task]
fn ask_count() -> Result<u32, NodeError> {
    interrupt("how many?")
}

#[entrypoint]
async fn counts(n: u32) -> Result<u32, NodeError> {
    Ok(n + ask_count().await?)
}

/// The task's `interrupt` call fails with a typed error naming the task; the
/// thread keeps its interrupt, and a value of the right type resumes it.
#[tokio::test]
async fn a_wrong_typed_answer_to_a_task_leaves_the_thread_resumable() {
    let app = Entrypoint::new(counts)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("typed");
    let run1 = app.invoke(1, &config).await.unwrap();
    assert_eq!(questions(&run1.interrupts), ["how many?"]);
    let err = app
        .invoke_command(Command::resume("three"), &config)
        .await
        .unwrap_err();
    let mut source: Option<&dyn std::error::Error> = Some(&err);
    let mut typed = None;
    while let Some(e) = source {
        if let Some(t) = e.downcast_ref::<stategraph::ResumeTypeError>() {
            typed = Some(t);
        }
        source = e.source();
    }
    let typed = typed.unwrap_or_else(|| panic!("no ResumeTypeError in {err}"));
    assert_eq!(typed.node, "ask_count");
    assert_eq!(typed.value, "\"three\"");
    let state = app.get_state(&config).await.unwrap();
    assert_eq!(questions(&state.interrupts), ["how many?"]);
    let out = app
        .invoke_command(Command::resume(2), &config)
        .await
        .unwrap();
    assert_eq!(out.value, Some(3));
}
