//! Write-ahead logging for a connection: `PRAGMA journal_mode=WAL`, waiting out
//! the other connections that hold the database meanwhile.
//!
//! Switching a database to WAL takes it exclusively, and SQLite answers
//! `SQLITE_BUSY` at once, without its busy handler, while another connection
//! holds a lock: two savers (or stores) opened at the same moment on a new file
//! would fail one of them ("database is locked"). So the switch is retried for
//! as long as the connection's busy timeout would have waited.

use rusqlite::{Connection, ErrorCode};
use std::time::{Duration, Instant};

/// Puts `conn`'s database in WAL mode (a database already in it stays), trying
/// again while it is locked, for up to `patience`. An in-memory database answers
/// "memory", which is fine.
pub(crate) fn use_wal(conn: &Connection, patience: Duration) -> rusqlite::Result<()> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get::<_, String>(0)) {
            Ok(_mode) => return Ok(()),
            Err(e) if is_locked(&e) && started.elapsed() < patience => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

fn is_locked(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
