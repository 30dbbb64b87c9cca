//! Human in the loop: the [`Interrupt`]s a node raises with
//! [`Context::interrupt`](crate::Context::interrupt), the resume values that answer
//! them, and the static breakpoints (`interrupt_before` / `interrupt_after`).
//!
//! A node that interrupts stops where it asked; its thread keeps the question as a
//! pending write of the current checkpoint. Resuming (`Command::resume`) re-runs the
//! node *from its beginning*: each `interrupt` call it already passed returns its
//! stored answer (matched by position), the first unanswered one takes the new
//! resume value, the next one pauses again (docs/semantics.md §5).

use crate::checkpoint::Blob;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// A pause requested by a node: the value it asked with, and the id to resume it by.
///
/// The id is the same for every interrupt one task raises, and differs between
/// tasks (it hashes the task's namespace, as LangGraph does; each call of a
/// Functional API `#[task]` has its own), so a resume map
/// (`Command::resume_map`) can answer several paused tasks at once.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Interrupt {
    /// What the node asked with (the value passed to `interrupt`), as JSON.
    pub value: serde_json::Value,
    /// The id to resume this interrupt by (32 lowercase hex digits).
    pub id: String,
}

/// The value as JSON text, not as `serde_json::Value`'s enum:
/// `Interrupt { value: {"amount":500}, id: ".." }`, not `Object {"amount":
/// Number(500)}`.
impl fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Json<'a>(&'a serde_json::Value);
        impl fmt::Debug for Json<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self.0, f)
            }
        }
        f.debug_struct("Interrupt")
            .field("value", &Json(&self.value))
            .field("id", &self.id)
            .finish()
    }
}

impl Interrupt {
    /// The value, deserialised as `T`.
    pub fn value_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.value)
    }
}

/// A resume value (or map of them by interrupt id) given as graph input.
#[derive(Debug, Clone)]
pub(crate) enum Resume {
    /// Answers the one pending interrupt (the first `interrupt` call that asks).
    Value(Blob),
    /// Answers interrupts by id.
    Map(Vec<(String, Blob)>),
    /// A value that could not be serialised: reported when the run starts.
    Invalid(ResumeError),
}

impl Resume {
    pub(crate) fn value<T: Serialize>(value: &T) -> Self {
        match Blob::encode(value) {
            Ok(blob) => Resume::Value(blob),
            Err(e) => Resume::Invalid(ResumeError::NotSerializable {
                interrupt_id: None,
                reason: e.to_string(),
            }),
        }
    }

    pub(crate) fn map<K: Into<String>, V: Serialize>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut map = Vec::new();
        for (id, value) in entries {
            let id = id.into();
            match Blob::encode(&value) {
                Ok(blob) => map.push((id, blob)),
                Err(e) => {
                    return Resume::Invalid(ResumeError::NotSerializable {
                        interrupt_id: Some(id),
                        reason: e.to_string(),
                    })
                }
            }
        }
        Resume::Map(map)
    }
}

/// A `Command::resume` / `resume_map` that cannot be applied
/// ([`GraphError::InvalidResume`](crate::GraphError::InvalidResume)); the thread
/// is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// A resume value's `Serialize` impl failed.
    #[error("the resume value{} cannot be serialised: {reason}", match interrupt_id {
        Some(id) => format!(" for interrupt {id}"),
        None => String::new(),
    })]
    NotSerializable {
        /// The interrupt it answers (`resume_map`), if named.
        interrupt_id: Option<String>,
        /// Why.
        reason: String,
    },
    /// The thread has no checkpoint, so nothing to resume.
    #[error(
        "thread `{thread_id}` has no checkpoint, so there is no interrupt to resume; start it \
         with input first"
    )]
    NoCheckpoint {
        /// The thread.
        thread_id: String,
    },
    /// The thread's last run finished: no interrupt is pending.
    #[error("thread `{thread_id}` has no pending interrupt to resume: its last run finished")]
    NothingToResume {
        /// The thread.
        thread_id: String,
    },
    /// One value for several paused tasks: which one it answers is not clear.
    #[error(
        "When there are multiple pending interrupts, you must specify the interrupt id when \
         resuming: use Command::resume_map with the ids of the pending interrupts: {}",
        PendingList(pending)
    )]
    Ambiguous {
        /// The pending interrupts.
        pending: Vec<Interrupt>,
    },
    /// `resume_map` names an interrupt that is not pending.
    #[error(
        "no pending interrupt has id {id}; the pending interrupts are: {}",
        PendingList(pending)
    )]
    UnknownInterrupt {
        /// The id given.
        id: String,
        /// The pending interrupts.
        pending: Vec<Interrupt>,
    },
}

/// Pending interrupts as a message lists them: `<id> (asked <value>)`, ...
struct PendingList<'a>(&'a [Interrupt]);

impl fmt::Display for PendingList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, interrupt) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} (asked {})", interrupt.id, interrupt.value)?;
        }
        Ok(())
    }
}

/// A resume value that does not deserialise into the type the node asked for.
///
/// The node's `interrupt` call returns it (and the run fails with it as the
/// source of [`GraphError::NodeFailed`](crate::GraphError::NodeFailed)); the
/// thread is unchanged, so resuming again with a value of the right type works.
#[derive(Debug, thiserror::Error)]
#[error(
    "node `{node}` cannot read the resume value {value} as a `{expected}`: {source}; \
     resume again with a value of that type"
)]
#[non_exhaustive]
pub struct ResumeTypeError {
    /// The node that asked.
    pub node: String,
    /// The resume value, as JSON (shortened when long).
    pub value: String,
    /// The type the node asked for.
    pub expected: &'static str,
    /// Why it did not fit.
    #[source]
    pub source: serde_json::Error,
}

/// Where a run stopped at a static breakpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Breakpoint {
    /// Before these nodes ran (`interrupt_before`): they run on resume.
    Before(Vec<String>),
    /// After these nodes ran (`interrupt_after`): their writes are applied.
    After(Vec<String>),
    /// Inside the subgraphs these nodes run (a breakpoint of the subgraph).
    Nested(Vec<String>),
}

/// The nodes a static breakpoint stops at: every node, or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Breakpoints {
    /// No breakpoint.
    #[default]
    None,
    /// Every node (LangGraph's `"*"`); the hidden `__start__` task never matches.
    All,
    /// The named nodes.
    Nodes(Vec<String>),
}

impl Breakpoints {
    /// Breakpoints at the named nodes.
    pub fn nodes<I: IntoIterator<Item = N>, N: Into<String>>(names: I) -> Self {
        Breakpoints::Nodes(names.into_iter().map(Into::into).collect())
    }

    /// Whether no node is a breakpoint.
    pub fn is_none(&self) -> bool {
        match self {
            Breakpoints::None => true,
            Breakpoints::All => false,
            Breakpoints::Nodes(names) => names.is_empty(),
        }
    }

    /// Whether a task of node `name` stops here.
    pub(crate) fn matches(&self, name: &str) -> bool {
        match self {
            Breakpoints::None => false,
            Breakpoints::All => name != crate::START,
            Breakpoints::Nodes(names) => names.iter().any(|n| n == name),
        }
    }
}

/// The control-flow error an interrupting node returns (through `?`): its own
/// interrupt, or those of a subgraph it ran.
pub(crate) struct InterruptSignal(pub(crate) Vec<Interrupt>);

impl fmt::Debug for InterruptSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("InterruptSignal").field(&self.0).finish()
    }
}

impl fmt::Display for InterruptSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.0.iter().map(|i| i.id.as_str()).collect();
        write!(
            f,
            "the node is waiting for a resume value (interrupt {}); return this error with `?` \
             so the run can pause",
            ids.join(", ")
        )
    }
}

impl std::error::Error for InterruptSignal {}

/// The answers stored in a `__resume__` write (a list; a bare value is one answer).
pub(crate) fn decode_answers(value: &Blob) -> Vec<Blob> {
    value
        .decode::<Vec<Blob>>()
        .unwrap_or_else(|_| vec![value.clone()])
}

/// The run-wide resume value (`Command::resume(v)`): the first task whose
/// `interrupt` call finds no answer of its own takes it.
#[derive(Default)]
pub(crate) struct NullResume(Mutex<Option<Blob>>);

impl NullResume {
    pub(crate) fn new(value: Blob) -> Self {
        NullResume(Mutex::new(Some(value)))
    }

    fn take(&self) -> Option<Blob> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// One task's interrupt bookkeeping (LangGraph's scratchpad): the answers it has,
/// how many `interrupt` calls this attempt made, and whether it consumed answers
/// (then its `__resume__` write must be stored with the interrupt).
pub(crate) struct Scratchpad {
    id: String,
    null_resume: Option<Arc<NullResume>>,
    inner: Mutex<ScratchState>,
}

#[derive(Default)]
struct ScratchState {
    calls: usize,
    answers: Vec<Blob>,
    used_answers: bool,
}

impl Scratchpad {
    /// The scratchpad of a task whose interrupts have id `id`, knowing the
    /// `answers` stored or mapped for it.
    pub(crate) fn new(
        id: String,
        answers: Vec<Blob>,
        null_resume: Option<Arc<NullResume>>,
    ) -> Self {
        Scratchpad {
            id,
            null_resume,
            inner: Mutex::new(ScratchState {
                answers,
                ..ScratchState::default()
            }),
        }
    }

    /// A retry starts the node over: its `interrupt` calls count from zero again.
    pub(crate) fn restart(&self) {
        self.lock().calls = 0;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ScratchState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The answers to store as the task's `__resume__` write, if it consumed any.
    pub(crate) fn resume_write(&self) -> Option<Vec<Blob>> {
        let state = self.lock();
        state.used_answers.then(|| state.answers.clone())
    }

    /// The id of this task's interrupts.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// One `interrupt` call: its answer, or `None` when the node must pause.
    pub(crate) fn ask(&self) -> Option<Blob> {
        let mut state = self.lock();
        let idx = state.calls;
        state.calls += 1;
        if let Some(answer) = state.answers.get(idx).cloned() {
            state.used_answers = true;
            return Some(answer);
        }
        let answer = self.null_resume.as_ref().and_then(|r| r.take())?;
        state.answers.push(answer.clone());
        state.used_answers = true;
        Some(answer)
    }

    /// Whether an `interrupt` call took an answer.
    pub(crate) fn used_answers(&self) -> bool {
        self.lock().used_answers
    }

    /// Forgets the answer just taken (it did not fit the node's type): the task
    /// stores no answer it could not read.
    pub(crate) fn reject_last(&self) {
        let mut state = self.lock();
        if state.answers.len() == state.calls {
            state.answers.pop();
        }
        state.used_answers = !state.answers.is_empty();
    }
}

/// The id of the interrupts raised by the task whose checkpoint namespace is `ns`
/// (`"node:task_id"` at the root): xxh3-128 as 32 lowercase hex digits.
pub(crate) fn interrupt_id(ns: &str) -> String {
    crate::ids::format_hex(xxhash_rust::xxh3::xxh3_128(ns.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(v: &str) -> Blob {
        Blob::encode(v).unwrap()
    }

    #[test]
    fn answers_are_matched_by_position_then_the_null_resume_then_it_asks() {
        let null = Arc::new(NullResume::new(blob("r2")));
        let pad = Scratchpad::new("id".into(), vec![blob("r1")], Some(Arc::clone(&null)));
        assert_eq!(pad.ask(), Some(blob("r1")));
        assert_eq!(pad.ask(), Some(blob("r2")));
        assert_eq!(pad.ask(), None);
        assert_eq!(pad.resume_write(), Some(vec![blob("r1"), blob("r2")]));
        // The null resume is taken once for the whole run.
        let other = Scratchpad::new("id2".into(), Vec::new(), Some(null));
        assert_eq!(other.ask(), None);
        assert_eq!(other.resume_write(), None);
    }

    #[test]
    fn a_retry_replays_the_answers_from_the_first_call() {
        let pad = Scratchpad::new("id".into(), vec![blob("a")], None);
        assert_eq!(pad.ask(), Some(blob("a")));
        pad.restart();
        assert_eq!(pad.ask(), Some(blob("a")));
    }

    #[test]
    fn a_rejected_answer_is_not_stored() {
        let null = Arc::new(NullResume::new(blob("bad")));
        let pad = Scratchpad::new("id".into(), Vec::new(), Some(null));
        assert!(pad.ask().is_some());
        pad.reject_last();
        assert_eq!(pad.resume_write(), None);
    }

    #[test]
    fn interrupt_ids_hash_the_task_namespace_like_langgraph() {
        // xxh3_128_hexdigest(b"") in Python's xxhash.
        assert_eq!(interrupt_id(""), "99aa06d3014798d86001c324468d497f");
        assert_eq!(interrupt_id("a:b").len(), 32);
        assert_ne!(interrupt_id("a:b"), interrupt_id("a:c"));
    }

    #[test]
    fn breakpoints_match_names_or_every_visible_node() {
        assert!(Breakpoints::All.matches("agent"));
        assert!(!Breakpoints::All.matches(crate::START));
        assert!(Breakpoints::nodes(["a"]).matches("a"));
        assert!(!Breakpoints::nodes(["a"]).matches("b"));
        assert!(Breakpoints::nodes(Vec::<String>::new()).is_none());
    }
}
