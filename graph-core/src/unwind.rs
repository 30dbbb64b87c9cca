//! Containing panics of user code the engine calls outside a node's body
//! (reducers, routers, `Serialize` / `Deserialize` impls, retry predicates): each
//! call is wrapped where the engine makes it, and a panic becomes a
//! [`GraphError::Panicked`](crate::GraphError::Panicked) naming the site, so the
//! run ends like any failed run (its lease released, its thread consistent).
//! Panics inside node bodies are caught by the executor as `NodePanicked`.

use crate::error::PanicSite;
use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// A panic's message: its payload when that is a string.
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(tagged) = payload.downcast_ref::<InField>() {
        tagged.message.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// A caught panic.
pub(crate) struct Caught {
    pub(crate) message: String,
    /// The field whose writes were being applied, when the panic came from
    /// [`raise_in_field`].
    field: Option<String>,
}

impl Caught {
    fn new(payload: Box<dyn Any + Send>) -> Self {
        match payload.downcast::<InField>() {
            Ok(tagged) => Caught {
                message: tagged.message,
                field: Some(tagged.field),
            },
            Err(payload) => Caught {
                message: message(&*payload),
                field: None,
            },
        }
    }

    /// The error of a panic while a step's writes were applied: a field's
    /// reducer when [`raise_in_field`] tagged it, otherwise code elsewhere.
    pub(crate) fn applying(self, step: i64) -> crate::GraphError {
        let site = match self.field {
            Some(field) => PanicSite::Reducer { field, step },
            None => PanicSite::Run,
        };
        crate::GraphError::Panicked {
            site,
            message: self.message,
        }
    }

    /// The error of this panic at `site`.
    pub(crate) fn at(self, site: PanicSite) -> crate::GraphError {
        crate::GraphError::Panicked {
            site,
            message: self.message,
        }
    }
}

/// Runs `f`, returning a panic as [`Caught`].
///
/// The engine drops whatever `f` was mutating when it panics (the run ends with
/// the error), so nothing half-updated is observed: hence `AssertUnwindSafe`.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Caught> {
    catch_unwind(AssertUnwindSafe(f)).map_err(Caught::new)
}

/// Runs a run's future, a panic that escapes it (one not caught where the
/// engine calls user code) becoming [`PanicSite::Run`]: whatever panics, the
/// caller gets an error and the run's lease and guard are released.
///
/// A combinator rather than an `async fn`: an `async fn` would keep `run` as its
/// argument and again inside `catch_unwind`, doubling the size of every run's
/// future (measured: a nested run's future 8.5 KB, copied as it is boxed).
pub(crate) fn contain<T>(
    run: impl Future<Output = Result<T, crate::GraphError>>,
) -> impl Future<Output = Result<T, crate::GraphError>> {
    use futures::FutureExt;
    AssertUnwindSafe(run)
        .catch_unwind()
        .map(|caught| match caught {
            Ok(result) => result,
            Err(payload) => Err(Caught::new(payload).at(PanicSite::Run)),
        })
}

/// The payload a panic is raised again with by [`raise_in_field`].
struct InField {
    field: String,
    message: String,
}

/// Raises the panic `payload` of the update of field `field` (its reducer)
/// again, tagged with the field's name: `State::apply_updates` updates every
/// field in one call, and [`catch`] around it then knows which one panicked.
pub(crate) fn raise_in_field(field: &str, payload: Box<dyn Any + Send>) -> ! {
    resume_unwind(Box::new(InField {
        field: field.to_owned(),
        message: message(&*payload),
    }))
}
