//! The thread that owns the SQLite connection.
//!
//! rusqlite is blocking, so no database call may run on an async executor's
//! thread. Each [`SqliteSaver`](crate::SqliteSaver) owns one OS thread that owns
//! one connection; async methods send it a job and await a oneshot reply. This
//! needs no particular runtime (it works under tokio, `futures::executor` or any
//! other), never holds a lock across an `.await`, and serialises database work,
//! which SQLite does for writers anyway. The cost is that reads queue behind
//! writes of the same saver; a pool of read connections would lift that for
//! file databases if it ever matters.
//!
//! Between jobs, the thread renews the leases of the runs it holds (see
//! `lease.rs`) every third of the lease time: renewals need no async runtime
//! either, and a run whose lease could not be renewed because another run took
//! the thread is marked lost at once.

use crate::lease::{self, Held};
use graph_core::checkpoint::CheckpointError;
use rusqlite::Connection;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

enum Message {
    Job(Job),
    Close(oneshot::Sender<Result<(), CheckpointError>>),
    /// Renew this lease until told otherwise.
    Hold(Held),
    /// Stop renewing the lease of this generation.
    Unhold(i64),
}

/// A handle on the connection's thread. Dropping every clone lets the thread
/// finish its queued jobs, close the connection and exit, without waiting for
/// it.
#[derive(Clone)]
pub(crate) struct Worker {
    tx: mpsc::Sender<Message>,
}

/// The leases the thread renews, and when next.
struct Renewals {
    ttl: Duration,
    held: Vec<Held>,
    next: Option<Instant>,
}

impl Renewals {
    fn interval(&self) -> Duration {
        self.ttl / 3
    }

    fn hold(&mut self, held: Held) {
        self.held.push(held);
        self.next
            .get_or_insert_with(|| Instant::now() + self.ttl / 3);
    }

    fn unhold(&mut self, generation: i64) {
        self.held.retain(|h| h.generation != generation);
        if self.held.is_empty() {
            self.next = None;
        }
    }

    /// How long the thread may wait for a message before renewing.
    fn wait(&self) -> Option<Duration> {
        self.next
            .map(|next| next.saturating_duration_since(Instant::now()))
    }

    /// Renews every held lease; one that is no longer its run's is marked lost
    /// and dropped. One that cannot be written now (the file is locked) is
    /// tried again at the next round, well before it expires.
    fn renew(&mut self, conn: &Connection) {
        let ttl = self.ttl;
        self.held.retain(
            |held| match lease::renew(conn, &held.thread_id, held.generation, ttl) {
                Ok(true) | Err(_) => true,
                Ok(false) => {
                    held.lost.set(
                        "its lease could not be renewed: it expired and another run took the \
                         thread over, or the thread was deleted"
                            .to_owned(),
                    );
                    false
                }
            },
        );
        self.next = (!self.held.is_empty()).then(|| Instant::now() + self.interval());
    }
}

/// How long the thread keeps looking for the next job after finishing one,
/// before it sleeps: `None` on a machine with one CPU, where looking would
/// only keep the caller from running.
///
/// A run calls its saver several times in a row (lease, load, one put per
/// step, release), with a few tens of microseconds of graph work between
/// calls. A thread that sleeps at once after each job must be woken for the
/// next one, and on a virtual machine that wake-up cost more than the job: a
/// 1 000-turn chat (`chat_1000_turns_sync_sqlite_append` in bench/) took
/// 0.79–0.83 ms per turn sleeping at once and 0.56–0.58 ms looking for 50 µs
/// first (20 µs: 0.67–0.71 ms; 100 µs and 200 µs: no better than 50 µs). A
/// saver left idle costs 50 µs of one CPU after its last job.
fn spin_after_job() -> Option<Duration> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (cpus > 1).then_some(Duration::from_micros(50))
}

/// The next message if one arrives within `spin`, looking without sleeping
/// (`None`: none came, or every sender is gone; the caller's blocking receive
/// tells which).
fn poll_for(rx: &mpsc::Receiver<Message>, spin: Duration) -> Option<Message> {
    let until = Instant::now() + spin;
    loop {
        // The clock is read once per 64 looks: reading it costs more than a look.
        for _ in 0..64 {
            match rx.try_recv() {
                Ok(message) => return Some(message),
                Err(mpsc::TryRecvError::Disconnected) => return None,
                Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if Instant::now() >= until {
            return None;
        }
    }
}

/// How long a caller looks for its job's answer before it sleeps: `None`
/// on a machine with one CPU, where looking would only keep the saver's
/// thread from running.
///
/// Most jobs (a read, a put's commit) take tens to a few hundred
/// microseconds. A caller that sleeps at once must be woken when the answer
/// comes, which on a virtual machine costs about as much as a small job: a
/// 1 000-turn chat (`chat_1000_turns_sync_sqlite_append` in bench/) took
/// 0.56–0.61 ms per turn sleeping at once and 0.49–0.51 ms looking for up to
/// 300 µs first (3 alternating 5-run medians each). The caller yields to its executor between looks, so other
/// tasks of its thread run meanwhile.
fn answer_spin() -> Option<Duration> {
    static SPIN: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| spin_after_job().map(|_| Duration::from_micros(300)))
}

/// A job's answer: looked for without sleeping for up to [`answer_spin`],
/// yielding to the executor between looks, then awaited as usual.
struct Reply<T> {
    answer: oneshot::Receiver<T>,
    /// Until when to look without sleeping; `None`: not started, or over.
    until: Option<Instant>,
    spinning: bool,
}

impl<T> Reply<T> {
    fn new(answer: oneshot::Receiver<T>) -> Self {
        Reply {
            answer,
            until: None,
            spinning: answer_spin().is_some(),
        }
    }
}

impl<T> std::future::Future for Reply<T> {
    type Output = Result<T, oneshot::error::RecvError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = &mut *self;
        if let std::task::Poll::Ready(answer) = std::pin::Pin::new(&mut this.answer).poll(cx) {
            return std::task::Poll::Ready(answer);
        }
        if this.spinning {
            let now = Instant::now();
            let until = *this
                .until
                .get_or_insert_with(|| now + answer_spin().unwrap_or_default());
            if now < until {
                // Polled again as soon as the executor has run what else is ready.
                cx.waker().wake_by_ref();
            } else {
                // The answer will wake this task (the receiver holds its waker).
                this.spinning = false;
            }
        }
        std::task::Poll::Pending
    }
}

impl Worker {
    /// Starts the thread, which runs `open` to make its connection and reports the
    /// outcome before taking jobs.
    pub(crate) async fn start(
        name: String,
        lease_ttl: Duration,
        open: impl FnOnce() -> Result<Connection, CheckpointError> + Send + 'static,
    ) -> Result<Self, CheckpointError> {
        let (tx, rx) = mpsc::channel::<Message>();
        let (ready_tx, ready_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("graph-sqlite".to_owned())
            .spawn(move || {
                let opened = catch_unwind(AssertUnwindSafe(open)).unwrap_or_else(|_| {
                    Err(crate::storage_msg(format!("opening `{name}` panicked")))
                });
                let mut conn = match opened {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let mut renewals = Renewals {
                    ttl: lease_ttl,
                    held: Vec::new(),
                    next: None,
                };
                let spin = spin_after_job();
                let mut after_job = false;
                loop {
                    // Due renewals first: a thread kept busy by jobs renews too.
                    if renewals.wait().is_some_and(|wait| wait.is_zero()) {
                        renewals.renew(&conn);
                    }
                    let quick = match spin {
                        Some(spin) if after_job => poll_for(&rx, spin),
                        _ => None,
                    };
                    let message = match (quick, renewals.wait()) {
                        (Some(message), _) => Ok(message),
                        (None, None) => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                        (None, Some(wait)) => rx.recv_timeout(wait),
                    };
                    after_job = matches!(message, Ok(Message::Job(_)));
                    let message = match message {
                        Ok(message) => message,
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    match message {
                        Message::Hold(held) => renewals.hold(held),
                        Message::Unhold(generation) => renewals.unhold(generation),
                        // A panicking job drops its reply sender, which the caller
                        // sees as an error; an open transaction rolls back on unwind.
                        Message::Job(job) => {
                            let _ = catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
                        }
                        Message::Close(reply) => {
                            let closed = conn.close().map_err(|(_, e)| {
                                crate::storage(format!("cannot close `{name}`"), e)
                            });
                            let _ = reply.send(closed);
                            return;
                        }
                    }
                }
            })
            .map_err(|e| crate::storage_msg(format!("cannot start the SQLite thread: {e}")))?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(Worker { tx }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(crate::storage_msg(
                "the SQLite thread stopped while opening",
            )),
        }
    }

    /// Queues `f` on the connection's thread now, and returns a future of its
    /// result. Operations therefore run in the order the saver's methods are
    /// *called*, not the order their futures are first polled; dropping the future
    /// does not cancel the operation.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, CheckpointError> + Send + 'static,
    ) -> impl std::future::Future<Output = Result<T, CheckpointError>> + Send + 'static {
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        let queued = self
            .tx
            .send(Message::Job(job))
            .map_err(|_| crate::storage_msg("the SQLite thread has stopped"));
        async move {
            queued?;
            Reply::new(result).await.map_err(|_| {
                crate::storage_msg("a SQLite operation panicked; nothing was committed")
            })?
        }
    }

    /// As [`run`](Self::run), for `f` that takes something (a lease): when the
    /// caller has gone by the time `f` answers (its future was dropped, as a
    /// cancelled run's is), `undo` gives it back at once, on this thread, before
    /// any job queued since runs.
    pub(crate) fn run_or_undo<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, CheckpointError> + Send + 'static,
        undo: impl FnOnce(&mut Connection, T) + Send + 'static,
    ) -> impl std::future::Future<Output = Result<T, CheckpointError>> + Send + 'static {
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            if let Err(Ok(taken)) = reply.send(f(conn)) {
                undo(conn, taken);
            }
        });
        let queued = self
            .tx
            .send(Message::Job(job))
            .map_err(|_| crate::storage_msg("the SQLite thread has stopped"));
        async move {
            queued?;
            Reply::new(result).await.map_err(|_| {
                crate::storage_msg("a SQLite operation panicked; nothing was committed")
            })?
        }
    }

    /// Has the thread renew `held` until [`unhold`](Self::unhold).
    pub(crate) fn hold(&self, held: Held) {
        // A stopped thread renews nothing; the lease then expires.
        drop(self.tx.send(Message::Hold(held)));
    }

    /// Stops renewing the lease of `generation`.
    pub(crate) fn unhold(&self, generation: i64) {
        drop(self.tx.send(Message::Unhold(generation)));
    }

    /// Waits for queued jobs, then closes the connection.
    pub(crate) async fn close(self) -> Result<(), CheckpointError> {
        let (reply, result) = oneshot::channel();
        self.tx
            .send(Message::Close(reply))
            .map_err(|_| crate::storage_msg("the SQLite thread has stopped"))?;
        result
            .await
            .map_err(|_| crate::storage_msg("the SQLite thread stopped while closing"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queued_message_is_taken_without_sleeping_and_none_ends_the_wait() {
        let (tx, rx) = mpsc::channel();
        tx.send(Message::Unhold(7)).unwrap();
        let spin = Duration::from_micros(50);
        assert!(matches!(poll_for(&rx, spin), Some(Message::Unhold(7))));
        // Nothing came: the caller goes on to its blocking receive.
        assert!(poll_for(&rx, spin).is_none());
        drop(tx);
        assert!(poll_for(&rx, Duration::from_secs(3600)).is_none());
        assert!(matches!(rx.recv(), Err(mpsc::RecvError)));
    }
}
