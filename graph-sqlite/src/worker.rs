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

use graph_core::checkpoint::CheckpointError;
use rusqlite::Connection;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

enum Message {
    Job(Job),
    Close(oneshot::Sender<Result<(), CheckpointError>>),
}

/// A handle on the connection's thread. Dropping it lets the thread finish its
/// queued jobs, close the connection and exit, without waiting for it.
pub(crate) struct Worker {
    tx: mpsc::Sender<Message>,
}

impl Worker {
    /// Starts the thread, which runs `open` to make its connection and reports the
    /// outcome before taking jobs.
    pub(crate) async fn start(
        name: String,
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
                while let Ok(message) = rx.recv() {
                    match message {
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
            result.await.map_err(|_| {
                crate::storage_msg("a SQLite operation panicked; nothing was committed")
            })?
        }
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
