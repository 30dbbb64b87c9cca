//! [`RetryPolicy`]: re-running a node that failed (docs/semantics.md §11.1).

use crate::error::NodeError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// When and how often a failed node runs again.
///
/// After failure `n` (1-based) the task waits
/// `min(max_interval, initial_interval * backoff_factor^(n-1))` (plus up to one
/// second of random jitter) and runs again, until `max_attempts` attempts were made
/// or `retry_on` declines the error. Panics and interrupts are never retried.
///
/// By default only transient errors are retried ([`NodeError::is_transient`]):
/// those marked with [`NodeError::transient`], node timeouts, and I/O errors of a
/// failed connection. An error of your own type is not retried until you mark it
/// or give the policy a [`retry_on`](RetryPolicy::retry_on) predicate. This is
/// LangGraph's rule turned around: its `default_retry_on` retries every exception
/// but the programming errors it lists (`ValueError`, `TypeError`, `KeyError`,
/// `OSError`, …) and HTTP 4xx, whereas Rust errors have no class hierarchy that
/// tells a bug from an outage, so here a retry is what an error asks for.
///
/// ```
/// use stategraph::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy::new()
///     .max_attempts(5)
///     .initial_interval(Duration::from_millis(200))
///     .retry_on(|e| e.to_string().contains("timeout"));
/// # let _ = policy;
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) initial_interval: Duration,
    pub(crate) backoff_factor: f64,
    pub(crate) max_interval: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) jitter: bool,
    pub(crate) retry_on: Arc<dyn Fn(&NodeError) -> bool + Send + Sync>,
}

impl Default for RetryPolicy {
    /// LangGraph's defaults: 0.5 s, ×2, at most 128 s, 3 attempts, jitter; only
    /// transient errors are retried ([`NodeError::is_transient`]).
    fn default() -> Self {
        RetryPolicy {
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            max_attempts: 3,
            jitter: true,
            retry_on: Arc::new(NodeError::is_transient),
        }
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("max_attempts", &self.max_attempts)
            .field("jitter", &self.jitter)
            .finish_non_exhaustive()
    }
}

impl RetryPolicy {
    /// The default policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// The wait after the first failure.
    pub fn initial_interval(mut self, interval: Duration) -> Self {
        self.initial_interval = interval;
        self
    }

    /// How much the wait grows after each failure.
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = factor;
        self
    }

    /// The longest wait.
    pub fn max_interval(mut self, interval: Duration) -> Self {
        self.max_interval = interval;
        self
    }

    /// How many attempts in all (1 = no retry).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Whether up to one second of random jitter is added to each wait.
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Which errors are retried, replacing the default rule
    /// ([`NodeError::is_transient`]); `retry_on(|_| true)` retries every error.
    pub fn retry_on(
        mut self,
        predicate: impl Fn(&NodeError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Arc::new(predicate);
        self
    }

    /// The wait after failure `attempt` (1-based), or `None` when not to retry.
    pub(crate) fn next_wait(&self, attempt: u32, error: &NodeError) -> Option<Duration> {
        if attempt >= self.max_attempts
            || error.is_interrupt()
            || error.is::<crate::interrupt::ResumeTypeError>()
            || !(self.retry_on)(error)
        {
            return None;
        }
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = self.initial_interval.as_secs_f64() * self.backoff_factor.powi(exponent);
        // The cap is compared as a Duration: `max_interval` near `Duration::MAX`
        // rounds up as an f64 past what a Duration holds. A base past the cap, or
        // NaN (a NaN factor), is the cap; a negative one is no wait.
        let wait = match Duration::try_from_secs_f64(base.max(0.0)) {
            Ok(wait) if !base.is_nan() => wait.min(self.max_interval),
            _ => self.max_interval,
        };
        let jitter = if self.jitter {
            Duration::from_secs_f64(fastrand::f64())
        } else {
            Duration::ZERO
        };
        Some(wait.saturating_add(jitter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_by_the_factor_up_to_the_cap_and_stop_at_max_attempts() {
        let p = RetryPolicy::new()
            .initial_interval(Duration::from_secs(1))
            .backoff_factor(3.0)
            .max_interval(Duration::from_secs(5))
            .max_attempts(4)
            .jitter(false);
        let e = NodeError::transient(NodeError::msg("x"));
        assert_eq!(p.next_wait(1, &e), Some(Duration::from_secs(1)));
        assert_eq!(p.next_wait(2, &e), Some(Duration::from_secs(3)));
        assert_eq!(p.next_wait(3, &e), Some(Duration::from_secs(5)));
        assert_eq!(p.next_wait(4, &e), None);
    }

    #[test]
    fn the_predicate_decides_which_errors_retry() {
        let p = RetryPolicy::new().retry_on(|e| e.to_string() == "retry me");
        assert!(p.next_wait(1, &NodeError::msg("retry me")).is_some());
        assert!(p.next_wait(1, &NodeError::msg("fatal")).is_none());
    }

    #[test]
    fn by_default_only_transient_errors_retry() {
        use std::io::{Error, ErrorKind};
        let p = RetryPolicy::new();
        assert!(p.next_wait(1, &NodeError::msg("fatal")).is_none());
        assert!(p
            .next_wait(1, &NodeError::transient(NodeError::msg("busy")))
            .is_some());
        let refused = NodeError::from(Error::from(ErrorKind::ConnectionRefused));
        assert!(p.next_wait(1, &refused).is_some());
        let denied = NodeError::from(Error::from(ErrorKind::PermissionDenied));
        assert!(p.next_wait(1, &denied).is_none());
        let timeout = NodeError::from(crate::error::NodeTimeout {
            node: "n".to_owned(),
            limit: Duration::from_secs(1),
            abandoned: false,
        });
        assert!(p.next_wait(1, &timeout).is_some());
        assert!(RetryPolicy::new()
            .retry_on(|_| true)
            .next_wait(1, &NodeError::msg("fatal"))
            .is_some());
    }

    #[test]
    fn waits_past_what_a_duration_holds_saturate_at_the_cap() {
        let e = NodeError::transient(NodeError::msg("x"));
        let huge = RetryPolicy::new()
            .initial_interval(Duration::MAX)
            .max_interval(Duration::MAX)
            .jitter(false);
        assert_eq!(huge.next_wait(1, &e), Some(Duration::MAX));
        assert_eq!(
            huge.clone().jitter(true).next_wait(1, &e),
            Some(Duration::MAX)
        );
        let growing = RetryPolicy::new()
            .initial_interval(Duration::from_secs(1))
            .backoff_factor(1e300)
            .max_interval(Duration::MAX)
            .max_attempts(10)
            .jitter(false);
        assert_eq!(growing.next_wait(9, &e), Some(Duration::MAX));
        let capped = growing.clone().max_interval(Duration::from_secs(60));
        assert_eq!(capped.next_wait(9, &e), Some(Duration::from_secs(60)));
        let nan = capped.clone().backoff_factor(f64::NAN);
        assert_eq!(nan.next_wait(2, &e), Some(Duration::from_secs(60)));
        let negative = capped.backoff_factor(-2.0);
        assert_eq!(negative.next_wait(2, &e), Some(Duration::ZERO));
    }

    #[test]
    fn jitter_adds_at_most_a_second() {
        let p = RetryPolicy::new().initial_interval(Duration::ZERO);
        let wait = p
            .next_wait(1, &NodeError::transient(NodeError::msg("x")))
            .unwrap();
        assert!(wait <= Duration::from_secs(1));
    }
}
