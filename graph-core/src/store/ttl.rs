//! Expiry of items: the store's [`TtlConfig`] and the background
//! [`TtlSweeper`].

use super::op::Ttl;
use super::Store;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How a store expires items (LangGraph's `TTLConfig`; durations instead of
/// minutes).
///
/// An item with a TTL expires that long after it was last written, or, with
/// refresh on read, last returned by a `get` or a `search`. An expired item is
/// never returned, listed or found again; [`Store::sweep_ttl`] (or a
/// [`TtlSweeper`] calling it on an interval) deletes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtlConfig {
    /// The TTL of items put with [`Ttl::StoreDefault`] (`None`: they never expire).
    pub default_ttl: Option<Duration>,
    /// Whether reads restart the TTL of what they return, unless an operation
    /// says otherwise (LangGraph's default: yes).
    pub refresh_on_read: bool,
    /// How often the sweeper `InMemoryStore::start_ttl_sweeper` starts sweeps
    /// (`None`: every 5 minutes), LangGraph's `sweep_interval_minutes`.
    /// Setting it starts nothing, as in LangGraph (whose stores sweep only
    /// once `start_ttl_sweeper()` is called): start a sweeper
    /// ([`TtlSweeper::start`] for any store) or call [`Store::sweep_ttl`]
    /// yourself. Until a sweep deletes them, expired items are kept but never
    /// returned, listed or found.
    pub sweep_interval: Option<Duration>,
}

impl Default for TtlConfig {
    fn default() -> Self {
        TtlConfig {
            default_ttl: None,
            refresh_on_read: true,
            sweep_interval: None,
        }
    }
}

impl TtlConfig {
    /// The TTL a put with `ttl` gives its item.
    pub fn resolve(&self, ttl: Ttl) -> Option<Duration> {
        match ttl {
            Ttl::StoreDefault => self.default_ttl,
            Ttl::Never => None,
            Ttl::After(d) => Some(d),
        }
    }

    /// Whether a read asked to refresh with `refresh` (`None`: the default)
    /// restarts TTLs.
    pub fn refresh(&self, refresh: Option<bool>) -> bool {
        refresh.unwrap_or(self.refresh_on_read)
    }

    /// When an item with `ttl`, written or refreshed at `now`, expires.
    pub fn expires_at(ttl: Option<Duration>, now: SystemTime) -> Option<SystemTime> {
        ttl.and_then(|ttl| now.checked_add(ttl))
    }
}

/// A background task deleting expired items of a store on an interval
/// (LangGraph's `start_ttl_sweeper`). It stops when [`stop`](Self::stop)ped or
/// dropped; a failed sweep is logged (`tracing`) and retried at the next tick.
#[derive(Debug)]
pub struct TtlSweeper {
    task: tokio::task::JoinHandle<()>,
}

impl TtlSweeper {
    /// Starts sweeping `store` every `interval`, on the current tokio runtime.
    /// Panics outside a tokio runtime (as `tokio::spawn` does).
    pub fn start(store: Arc<dyn Store>, interval: Duration) -> Self {
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match store.sweep_ttl().await {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(deleted = n, "store TTL sweep"),
                    Err(error) => tracing::warn!(%error, "store TTL sweep failed"),
                }
            }
        });
        TtlSweeper { task }
    }

    /// Stops sweeping.
    pub fn stop(self) {}
}

impl Drop for TtlSweeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}
