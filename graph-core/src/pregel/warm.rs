//! The states that runs of a compiled graph left in memory, so that the next
//! run of the same thread starts from them instead of decoding its checkpoint
//! again: a long chat thread then costs each turn what the turn adds, not what
//! the whole thread holds.
//!
//! An entry is the state of one stored checkpoint (its id, which is unique),
//! kept when a run that continued the thread (it loaded a checkpoint: a
//! thread's first run keeps nothing, as many threads run once) ends with that
//! checkpoint stored and nothing changed since;
//! the next run of the thread takes it (it is removed either way) and uses it
//! only when the checkpoint it loads has that id. A checkpoint written by
//! anything else (another process, `update_state`, a fork) has another id, and
//! is decoded as before. A few threads are kept, the most recently run.

use crate::state::State;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// How many threads keep their state in memory between runs.
const THREADS: usize = 16;

/// The last state of each recently run thread (owned by a compiled graph,
/// shared by its clones).
pub(crate) struct WarmStates<S: State> {
    /// Oldest first.
    slots: Mutex<VecDeque<Warm<S>>>,
}

/// One thread's state as stored under a checkpoint.
pub(super) struct Warm<S: State> {
    thread_id: crate::checkpoint::SharedStr,
    checkpoint_ns: Arc<str>,
    checkpoint_id: String,
    pub(super) state: Arc<S>,
    pub(super) fields: S::Channels,
}

impl<S: State> Default for WarmStates<S> {
    fn default() -> Self {
        WarmStates {
            slots: Mutex::new(VecDeque::new()),
        }
    }
}

impl<S: State> WarmStates<S> {
    /// Removes the entry of a thread and namespace; returns it when it holds
    /// the state of checkpoint `checkpoint_id`.
    pub(super) fn take(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
    ) -> Option<Warm<S>> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let i = slots
            .iter()
            .position(|w| w.thread_id == thread_id && &*w.checkpoint_ns == checkpoint_ns)?;
        slots.remove(i).filter(|w| w.checkpoint_id == checkpoint_id)
    }

    /// Keeps `state` (with its channels) as the state of checkpoint
    /// `checkpoint_id`, the newest of its thread and namespace.
    pub(super) fn keep(
        &self,
        thread_id: &crate::checkpoint::SharedStr,
        checkpoint_ns: &Arc<str>,
        checkpoint_id: &str,
        state: Arc<S>,
        fields: S::Channels,
    ) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|w| !(w.thread_id == *thread_id && w.checkpoint_ns == *checkpoint_ns));
        if slots.len() >= THREADS {
            slots.pop_front();
        }
        slots.push_back(Warm {
            thread_id: thread_id.clone(),
            checkpoint_ns: Arc::clone(checkpoint_ns),
            checkpoint_id: checkpoint_id.to_owned(),
            state,
            fields,
        });
    }
}
