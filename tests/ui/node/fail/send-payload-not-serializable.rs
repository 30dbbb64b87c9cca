// Pending Sends are checkpointed, so a Send-only node's payload must be
// serialisable: the missing derive is reported where the Send is built.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Jobs {
    done: u32,
}

#[derive(Clone)]
struct Job {
    id: u32,
}

#[node]
fn run_job(job: &Job) -> JobsUpdate {
    Jobs::update().done(job.id)
}

fn main() {
    let _ = send(run_job, Job { id: 1 });
}
