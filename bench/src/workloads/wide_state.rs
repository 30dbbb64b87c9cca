//! `wide_state_25x300`: a 15-field state, six nodes in a loop, fast-growing lists
//! that hold the same large message many times (shared, as Python shares references).
//!
//! The lists are `Arc<Vec<_>>`, modelling what a Python list in the state is: an
//! object held by reference. A values chunk shares the lists with the state (as
//! Python's chunk, a shallow dict copy, does), a node returns the list it read
//! itself (Python's `as_list = val`), and the concat reducer (the library's
//! list reducer, `channels::extend`) copies the list it writes when a chunk still
//! holds it (Python's `operator.add` builds a new list).
//! With plain `Vec` fields the engine had to copy every list of the state at every
//! step the consumer held the previous chunk, work Python never does: 0.26 ms per
//! run against 0.13 ms (docs/performance.md).

use super::{runtime, stream_values};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use stategraph::channels::extend;
use stategraph::{node_fn, State, StateGraph, END, START};
use std::sync::Arc;

/// A JSON value shared by reference, like a Python object in several lists.
type Item = Arc<Value>;

/// A list shared by reference, like a Python list held by a dict: a snapshot of
/// the state shares it, a write copies it (as `operator.add` builds a new list).
type List = Arc<Vec<Item>>;

fn non_empty_string(a: String, b: String) -> String {
    if b.is_empty() {
        a
    } else {
        b
    }
}

fn always_new(_: Option<Item>, b: Option<Item>) -> Option<Item> {
    b
}

fn non_empty_item(a: Option<Item>, b: Option<Item>) -> Option<Item> {
    match &b {
        Some(v) if !is_empty_value(v) => b,
        _ => a,
    }
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

fn new_if_some<T>(a: Option<T>, b: Option<T>) -> Option<T> {
    b.or(a)
}

/// Map union, new keys win. Values are shared like Python's `{**a, **b}`: when the
/// new map already has every old key, the union *is* the new map (O(keys), no copy).
fn union(a: Item, b: Item) -> Item {
    match (&*a, &*b) {
        (Value::Object(old), Value::Object(new)) => {
            if old.keys().all(|k| new.contains_key(k)) {
                b
            } else {
                let mut merged = old.clone();
                merged.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
                Arc::new(Value::Object(merged))
            }
        }
        (_, Value::Object(_)) => b,
        _ => a,
    }
}

#[derive(State, Clone, Debug, Serialize, Deserialize)]
struct Wide {
    #[reducer(extend)]
    messages: List,
    #[reducer(extend)]
    trigger_events: List,
    #[reducer(non_empty_string)]
    primary_issue_medium: String,
    #[reducer(always_new)]
    autoresponse: Option<Item>,
    #[reducer(non_empty_item)]
    issue: Option<Item>,
    relevant_rules: Option<List>,
    memory_docs: Option<List>,
    #[reducer(extend)]
    categorizations: List,
    #[reducer(extend)]
    responses: List,
    #[reducer(new_if_some)]
    user_info: Option<Item>,
    #[reducer(new_if_some)]
    crm_info: Option<Item>,
    #[reducer(new_if_some)]
    email_thread_id: Option<String>,
    #[reducer(union)]
    slack_participants: Item,
    bot_id: Option<String>,
    #[reducer(union)]
    notified_assignees: Item,
}

impl Default for Wide {
    fn default() -> Self {
        Wide {
            messages: List::default(),
            trigger_events: List::default(),
            primary_issue_medium: "email".to_owned(),
            autoresponse: None,
            issue: None,
            relevant_rules: None,
            memory_docs: None,
            categorizations: List::default(),
            responses: List::default(),
            user_info: None,
            crm_info: None,
            email_thread_id: None,
            slack_participants: Arc::new(Value::Object(Map::new())),
            bot_id: None,
            notified_assignees: Arc::new(Value::Object(Map::new())),
        }
    }
}

/// What `read_write` read: a list, or a single value (maybe null), by reference.
enum Read<'a> {
    List(&'a List),
    Single(Item),
}

impl Read<'_> {
    fn single(&self) -> Item {
        match self {
            Read::List(l) => l.last().cloned().unwrap_or_else(|| Arc::new(Value::Null)),
            Read::Single(v) => Arc::clone(v),
        }
    }

    fn as_list(&self) -> List {
        match self {
            Read::List(l) => Arc::clone(l),
            Read::Single(v) => Arc::new(vec![Arc::clone(v)]),
        }
    }
}

fn read<'a>(state: &'a Wide, field: &str) -> Read<'a> {
    match field {
        "messages" => Read::List(&state.messages),
        "trigger_events" => Read::List(&state.trigger_events),
        "categorizations" => Read::List(&state.categorizations),
        "responses" => Read::List(&state.responses),
        "autoresponse" => Read::Single(
            state
                .autoresponse
                .clone()
                .unwrap_or_else(|| Arc::new(Value::Null)),
        ),
        other => unreachable!("no node reads {other}"),
    }
}

/// Equality with CPython's identity shortcut: the same object is equal to itself.
fn same(a: &Item, b: &Item) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// `n` lowercase letters, one pseudo-random draw each (from a generator seeded
/// once per string, rather than the thread-local one looked up per letter).
/// Each letter is a 32-bit draw scaled to 26 by a multiply and a shift
/// (Lemire's reduction without its rejection step: no letter's probability
/// differs from 1/26 by more than 2^-32): a run's strings took 131 K
/// instructions with `fastrand`'s range sampling (a fifth of the run), 81 K
/// with this.
fn random_string(n: usize) -> String {
    let mut rng = fastrand::Rng::new();
    let letters: Vec<u8> = (0..n)
        .map(|_| b'a' + ((u64::from(rng.u32(..)) * 26) >> 32) as u8)
        .collect();
    String::from_utf8(letters).expect("ASCII letters are UTF-8")
}

/// The generic node body of WORKLOADS.md: read one field, write several.
fn read_write(state: &Wide, from: &str, writes: &[&str], n: usize) -> WideUpdate {
    let val = read(state, from);
    let mut u = Wide::update();
    for field in writes {
        u = match *field {
            "messages" => u.messages(val.as_list()),
            "trigger_events" => u.trigger_events(val.as_list()),
            "categorizations" => u.categorizations(val.as_list()),
            "responses" => u.responses(val.as_list()),
            "memory_docs" => u.memory_docs(Some(val.as_list())),
            "relevant_rules" => u.relevant_rules(Some(val.as_list())),
            "user_info" => u.user_info(Some(val.single())),
            "crm_info" => u.crm_info(Some(val.single())),
            "slack_participants" => u.slack_participants(val.single()),
            "notified_assignees" => u.notified_assignees(val.single()),
            "autoresponse" => u.autoresponse(Some(val.single())),
            "issue" => u.issue(Some(val.single())),
            "primary_issue_medium" => u.primary_issue_medium(random_string(n)),
            "email_thread_id" => u.email_thread_id(Some(random_string(n))),
            "bot_id" => u.bot_id(Some(random_string(n))),
            other => unreachable!("unknown field {other}"),
        };
    }
    u
}

fn message() -> Value {
    let key = |i: usize| i.to_string().repeat(10);
    let inner: Vec<Value> = (0..5)
        .flat_map(|_| {
            vec![
                json!("hi?".repeat(10)),
                json!(true),
                json!(1),
                json!(6327816386138u64),
                Value::Null,
            ]
        })
        .collect();
    let outer: Map<String, Value> = (0..5)
        .map(|i| {
            let m: Map<String, Value> = (0..5)
                .map(|j| (key(j), Value::Array(inner.clone())))
                .collect();
            (key(i), Value::Object(m))
        })
        .collect();
    Value::Object(outer)
}

/// The workload; with `saver`, `wide_state_25x300_ckpt` (or its variant).
pub fn build(n: usize, saver: Option<stategraph::checkpoint::InMemorySaver>) -> Workload {
    let checkpointed = saver.is_some();
    let node = |from: &'static str, writes: &'static [&'static str]| {
        move |s: &Wide| read_write(s, from, writes, n)
    };
    let graph = StateGraph::<Wide>::new()
        .add_node(node_fn(
            "one",
            node("messages", &["trigger_events", "primary_issue_medium"]),
        ))
        .add_node(node_fn(
            "two",
            node("trigger_events", &["autoresponse", "issue"]),
        ))
        .add_node(node_fn("three", node("autoresponse", &["relevant_rules"])))
        .add_node(node_fn(
            "four",
            node(
                "trigger_events",
                &["categorizations", "responses", "memory_docs"],
            ),
        ))
        .add_node(node_fn(
            "five",
            node(
                "categorizations",
                &[
                    "user_info",
                    "crm_info",
                    "email_thread_id",
                    "slack_participants",
                    "bot_id",
                    "notified_assignees",
                ],
            ),
        ))
        .add_node(node_fn("six", node("responses", &["messages"])))
        .add_edge(START, "one")
        .add_edge("one", "two")
        .add_edge("two", "three")
        .add_edge("two", "four")
        .add_edge(("three", "four"), "five")
        .add_edge("five", "six")
        .add_conditional_edges(
            "six",
            move |s: &Wide| if s.messages.len() > n { END } else { "one" },
        );
    // One saver per workload, shared by every run (WORKLOADS.md rule 5).
    let memory = std::sync::Arc::new(saver.unwrap_or_default());
    let graph = if checkpointed {
        graph.compile_with(std::sync::Arc::clone(&memory)
            as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>)
    } else {
        graph.compile()
    }
    .unwrap_or_else(|e| panic!("wide_state graph: {e}"));

    let msg = Arc::new(message());
    let (mut m, mut t, mut c, mut r, mut rounds) = (1usize, 0usize, 0usize, 0usize, 0usize);
    loop {
        rounds += 1;
        t += m;
        c += t;
        r += t;
        m += r;
        if m > n {
            break;
        }
    }
    let expected_chunks = 1 + 5 * rounds;
    let rt = runtime();
    let input_msg = Arc::clone(&msg);
    let workload = Workload::new(
        move || {
            let input = Wide::update().messages(Arc::new(vec![Arc::clone(&input_msg)]));
            rt.block_on(stream_values(&graph, input))
        },
        move |(last, chunks)| {
            for (name, len, want) in [
                ("messages", last.messages.len(), m),
                ("trigger_events", last.trigger_events.len(), t),
                ("categorizations", last.categorizations.len(), c),
                ("responses", last.responses.len(), r),
            ] {
                expect(len == want, || format!("len({name})={len} expected {want}"))?;
            }
            let docs = last.memory_docs.as_ref().map_or(0, |l| l.len());
            expect(docs == t, || format!("len(memory_docs)={docs}"))?;
            expect(last.messages.iter().all(|x| same(x, &msg)), || {
                "messages content differs".into()
            })?;
            expect(
                last.relevant_rules
                    .as_ref()
                    .is_some_and(|r| r.len() == 1 && same(&r[0], &msg)),
                || "relevant_rules".into(),
            )?;
            for (name, v) in [
                ("autoresponse", &last.autoresponse),
                ("issue", &last.issue),
                ("user_info", &last.user_info),
                ("crm_info", &last.crm_info),
            ] {
                expect(v.as_ref().is_some_and(|v| same(v, &msg)), || {
                    format!("{name} != input message")
                })?;
            }
            expect(same(&last.slack_participants, &msg), || {
                "slack_participants".into()
            })?;
            expect(same(&last.notified_assignees, &msg), || {
                "notified_assignees".into()
            })?;
            for (name, v) in [
                ("primary_issue_medium", Some(&last.primary_issue_medium)),
                ("email_thread_id", last.email_thread_id.as_ref()),
                ("bot_id", last.bot_id.as_ref()),
            ] {
                expect(v.is_some_and(|s| s.len() == n), || format!("{name} length"))?;
            }
            expect(chunks == expected_chunks, || {
                format!("{chunks} values chunks, expected {expected_chunks}")
            })
        },
    );
    if checkpointed {
        workload.with_stored(crate::harness::memory_stored(memory))
    } else {
        workload
    }
}
