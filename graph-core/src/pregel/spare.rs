//! The buffers of finished runs, kept by their compiled graph for its next
//! run: a run of a small graph is otherwise a dozen allocations of vectors
//! sized by the graph (channel versions, triggers seen, control channels...)
//! made and freed again for every `invoke`. Only containers are kept, emptied
//! when the run ends: nothing of a run's data reaches the next one.

use super::control::ControlChannel;
use crate::checkpoint::{Blob, SharedStr};
use crate::compiled::RunSpares;

/// At most this many spares are kept per compiled graph; runs beyond that
/// (many at once) allocate their own.
const KEEP: usize = 4;

/// One run's buffers, every one empty ([`keep`] clears them, and a new
/// spare starts empty), except `seen_rows`, whose rows are cleared as they
/// are used: a run fills them without clearing them first.
#[derive(Default)]
pub(crate) struct Spare {
    /// `Versions::values`.
    pub(super) versions: Vec<u64>,
    /// `Schedule::seen`.
    pub(super) seen: Vec<Option<Vec<u64>>>,
    /// The entries of `Schedule::seen`, for a later run's.
    pub(super) seen_rows: Vec<Vec<u64>>,
    /// `Schedule::candidates`.
    pub(super) candidates: Vec<usize>,
    /// `Schedule::live_branches`.
    pub(super) live_branches: Vec<usize>,
    /// `Persist::restored_versions`.
    pub(super) restored_versions: Vec<Option<(u64, SharedStr)>>,
    /// `Interrupts::seen`.
    pub(super) interrupts_seen: Vec<u64>,
    /// `Run::control`.
    pub(super) control: Vec<ControlChannel>,
    /// `Saver::step_writes`.
    pub(super) step_writes: Vec<(String, Vec<(String, Blob)>)>,
    /// The vector of `Saver::appends`.
    pub(super) appends: Option<super::append::Appends>,
}

/// A spare for a new run of the graph whose spares are `spares` (empty
/// buffers; new ones when none is kept).
pub(super) fn take(spares: &RunSpares) -> Spare {
    let kept = spares.0.lock().unwrap_or_else(|p| p.into_inner()).pop();
    kept.and_then(|spare| spare.downcast::<Spare>().ok())
        .map_or_else(Spare::default, |spare| *spare)
}

/// Keeps `spare` for a later run (emptied and boxed first, outside the
/// lock).
pub(super) fn keep(spares: &RunSpares, mut spare: Spare) {
    spare.clear();
    let spare: Box<dyn std::any::Any + Send> = Box::new(spare);
    let mut kept = spares.0.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() < KEEP {
        kept.push(spare);
    }
}

impl Spare {
    /// Drops what the buffers hold, keeping their capacity.
    fn clear(&mut self) {
        self.versions.clear();
        self.seen.clear();
        self.candidates.clear();
        self.live_branches.clear();
        self.restored_versions.clear();
        self.interrupts_seen.clear();
        self.control.clear();
        self.step_writes.clear();
        if let Some(appends) = &mut self.appends {
            appends.clear();
        }
    }
}
