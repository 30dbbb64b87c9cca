//! [`extend`]: the reducer of a list field that grows by appends (LangGraph's
//! `Annotated[list, operator.add]`), which reports what it kept so that a
//! checkpoint stores only the appended items.

use super::report_kept_prefix;
use std::sync::Arc;

/// A list value [`extend`] appends to: a `Vec<T>`, or a `Vec<T>` shared by
/// reference (`Arc<Vec<T>>`, copied on write when still shared, like a Python
/// list that `operator.add` replaces with a new one).
#[diagnostic::on_unimplemented(
    message = "`extend` appends to a list field: `{Self}` is not a `Vec<T>` or `Arc<Vec<T>>`",
    label = "the field is a `{Self}`",
    note = "for another type write a reducer of your own, `fn(old, new) -> new_value`"
)]
pub trait AppendList {
    /// The number of items.
    fn len(&self) -> usize;

    /// Whether it has no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The items of `self`, then those of `more`.
    fn append_list(self, more: Self) -> Self;
}

impl<T> AppendList for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn append_list(mut self, mut more: Self) -> Self {
        if self.is_empty() {
            return more;
        }
        self.append(&mut more);
        self
    }
}

impl<T: Clone> AppendList for Arc<Vec<T>> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn append_list(mut self, more: Self) -> Self {
        if self.as_slice().is_empty() {
            return more;
        }
        let list = Arc::make_mut(&mut self);
        match Arc::try_unwrap(more) {
            Ok(mut more) => list.append(&mut more),
            Err(shared) => list.extend(shared.iter().cloned()),
        }
        self
    }
}

/// The reducer of a list that grows by appends: `current` followed by the
/// items of `update` (Python's `operator.add` on lists).
///
/// It reports that it kept every item of `current`
/// ([`report_kept_prefix`]), so with a saver that stores appended items (the
/// in-memory saver, SQLite's append layout) a checkpoint of the field stores
/// only what the steps since the last one appended, not the whole list.
/// Reads (`get_state`, history, resuming) see the whole list as always.
///
/// A field of type `Arc<Vec<T>>` (shared by reference, so that a snapshot of
/// the state does not copy it) takes it the same way; serde's `rc` feature
/// serialises it as the list.
///
/// ```
/// use stategraph::channels::extend;
/// use stategraph::prelude::*;
/// use std::sync::Arc;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Log {
///     #[reducer(extend)]
///     lines: Vec<String>,
/// }
///
/// assert_eq!(extend(vec![1, 2], vec![3]), [1, 2, 3]);
/// let shared = extend(Arc::new(vec!["a"]), Arc::new(vec!["b"]));
/// assert_eq!(*shared, ["a", "b"]);
/// # let _ = Log::update().lines(vec!["hi".into()]);
/// ```
pub fn extend<L: AppendList>(current: L, update: L) -> L {
    report_kept_prefix(current.len());
    current.append_list(update)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_list_is_copied_on_write_and_an_unshared_one_is_not() {
        let first = Arc::new(vec![1, 2]);
        let held = Arc::clone(&first);
        let grown = extend(first, Arc::new(vec![3]));
        assert_eq!(*grown, [1, 2, 3]);
        assert_eq!(*held, [1, 2], "the holder's list is not changed");
        let before = Arc::as_ptr(&grown);
        let more = Arc::new(vec![4]);
        let kept = Arc::clone(&more);
        let grown = extend(grown, more);
        assert_eq!(Arc::as_ptr(&grown), before, "extended in place");
        assert_eq!(*grown, [1, 2, 3, 4]);
        assert_eq!(*kept, [4]);
        assert_eq!(*extend(Arc::new(Vec::new()), kept), [4]);
    }

    #[test]
    fn it_reports_the_current_lists_length() {
        let call = crate::channels::kept_prefix::start();
        let out = extend(vec!["a", "b", "c"], vec!["d"]);
        assert_eq!(call.finish(), 3);
        assert_eq!(out, ["a", "b", "c", "d"]);
        let call = crate::channels::kept_prefix::start();
        assert_eq!(extend(Vec::new(), vec![1]), [1]);
        assert_eq!(call.finish(), 0);
    }
}
