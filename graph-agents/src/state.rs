//! The `add_messages` reducer (docs/semantics.md §11.5) and the ready [`MessagesState`].

use crate::error::AgentError;
use crate::message::{new_id, Message, REMOVE_ALL_MESSAGES};
use hashbrown::{HashMap, HashSet};
use serde::{Deserialize, Serialize};

/// Merges `right` into `left` by message id, as LangGraph's `add_messages`:
///
/// - every message without an id (on either side) gets a fresh UUID;
/// - a message of `right` whose id is already in the list replaces it in place;
///   other messages are appended in order;
/// - a [`RemoveMessage`](crate::RemoveMessage) deletes the message with its id (a
///   later message with that id in the same `right` brings it back);
/// - [`Message::remove_all`] in `right` drops everything: the result is what
///   follows the last such marker.
///
/// A `RemoveMessage` naming an id that is not in the list is an error, as in
/// LangGraph (its `ValueError`): as `#[reducer(add_messages)]` on a
/// `Vec<Message>` field, it fails the superstep with an `InvalidUpdate` error
/// and nothing of that step is applied.
///
/// ```
/// use graph_agents::{add_messages, AgentError, Message};
///
/// let history = vec![Message::human("hi").with_id("1"), Message::ai("hello").with_id("2")];
/// let merged = add_messages(history, vec![Message::ai("hello!").with_id("2"), Message::human("bye")])?;
/// assert_eq!(merged.len(), 3);
/// assert_eq!(merged[1].text(), "hello!");   // replaced in place
/// assert!(merged[2].id().is_some());         // new messages get an id
///
/// let emptied = add_messages(merged, vec![Message::remove_all(), Message::human("fresh start")])?;
/// assert_eq!(emptied.len(), 1);
///
/// let err = add_messages(emptied, vec![Message::remove("9")]);
/// assert!(matches!(err, Err(AgentError::RemoveUnknownMessage { id }) if id == "9"));
/// # Ok::<(), AgentError>(())
/// ```
pub fn add_messages(left: Vec<Message>, right: Vec<Message>) -> Result<Vec<Message>, AgentError> {
    merge(left, right)
}

/// [`add_messages`], by its earlier name.
#[doc(hidden)]
#[deprecated(note = "`add_messages` itself now fails on an unknown id")]
pub fn try_add_messages(
    left: Vec<Message>,
    right: Vec<Message>,
) -> Result<Vec<Message>, AgentError> {
    merge(left, right)
}

/// Above this many incoming messages with their own ids, lookups go through a
/// hash map instead of a scan of the (usually short) list.
const SCAN_LIMIT: usize = 8;

fn merge(mut left: Vec<Message>, mut right: Vec<Message>) -> Result<Vec<Message>, AgentError> {
    // How many leading messages of `left` this merge leaves as they are: up to
    // the first one that gets an id, is replaced or is removed. Reported to the
    // engine, so that a checkpoint stores only what follows them.
    let mut kept = left.len();
    // Messages that arrive without an id get a fresh one, which cannot match an
    // existing message: only those that came with an id need a lookup. Up to
    // `SCAN_LIMIT` of them are looked for in `left` by the same pass that gives
    // `left`'s messages their ids (one walk over the list: it is walked at every
    // turn of an agent loop).
    let lookups = right.iter().filter(|m| m.id().is_some()).count();
    let mut in_left = [None::<usize>; SCAN_LIMIT];
    {
        let mut wanted = [""; SCAN_LIMIT];
        let scanned = if lookups <= SCAN_LIMIT { lookups } else { 0 };
        for (slot, id) in wanted[..scanned]
            .iter_mut()
            .zip(right.iter().filter_map(Message::id))
        {
            *slot = id;
        }
        let wanted = &wanted[..scanned];
        for (i, m) in left.iter_mut().enumerate() {
            match m.id() {
                None => {
                    kept = kept.min(i);
                    m.set_id(new_id());
                }
                Some(id) => {
                    for (found, w) in in_left.iter_mut().zip(wanted) {
                        if same_id(id, w) {
                            *found = Some(i);
                        }
                    }
                }
            }
        }
    }
    if let Some(i) = right
        .iter()
        .rposition(|m| matches!(m, Message::Remove(r) if r.id == REMOVE_ALL_MESSAGES))
    {
        graph_core::channels::report_kept_prefix(0);
        let mut rest = right.split_off(i + 1);
        for m in &mut rest {
            if m.id().is_none() {
                m.set_id(new_id());
            }
        }
        return Ok(rest);
    }

    let mut index: Option<HashMap<String, usize>> = (lookups > SCAN_LIMIT).then(|| {
        left.iter()
            .enumerate()
            .filter_map(|(i, m)| m.id().map(|id| (id.to_owned(), i)))
            .collect()
    });
    let left_len = left.len();
    let mut merged = left;
    merged.reserve(right.len());
    let mut to_remove: HashSet<String> = HashSet::new();
    let mut explicit = in_left.into_iter();
    for mut m in right {
        let existing = match m.id() {
            None => {
                m.set_id(new_id());
                None
            }
            Some(id) => match &index {
                Some(index) => index.get(id).copied(),
                // The last message with the id: one appended by this merge, or
                // the one found in `left` (whose ids this loop does not change:
                // a replacement has the id it replaces, removals come after).
                None => {
                    let in_left = explicit.next().flatten();
                    merged[left_len..]
                        .iter()
                        .rposition(|e| e.id().is_some_and(|e| same_id(e, id)))
                        .map(|k| left_len + k)
                        .or(in_left)
                }
            },
        };
        match (existing, &m) {
            (Some(i), Message::Remove(r)) => {
                kept = kept.min(i);
                to_remove.insert(r.id.clone());
            }
            (Some(i), _) => {
                kept = kept.min(i);
                if let Some(id) = m.id().filter(|_| !to_remove.is_empty()) {
                    to_remove.remove(id);
                }
                merged[i] = m;
            }
            (None, Message::Remove(r)) => {
                return Err(AgentError::RemoveUnknownMessage { id: r.id.clone() });
            }
            (None, _) => {
                if let (Some(index), Some(id)) = (&mut index, m.id()) {
                    index.insert(id.to_owned(), merged.len());
                }
                merged.push(m);
            }
        }
    }
    if !to_remove.is_empty() {
        merged.retain(|m| m.id().is_none_or(|id| !to_remove.contains(id)));
    }
    graph_core::channels::report_kept_prefix(kept);
    Ok(merged)
}

/// `a == b` for message ids, which are mostly UUIDs: their last bytes differ
/// first, before a comparison of the whole text.
#[inline]
fn same_id(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().last() == b.as_bytes().last() && a == b
}

/// A state with a message list; what [`ToolNode`](crate::ToolNode),
/// [`tools_condition`](crate::tools_condition) and
/// [`create_react_agent`](crate::create_react_agent) work on.
///
/// [`MessagesState`] implements it; implement it for your own state to add fields.
pub trait HasMessages: graph_core::State + Serialize + serde::de::DeserializeOwned {
    /// The message history.
    fn messages(&self) -> &[Message];

    /// An update that merges `messages` into the history.
    fn messages_update(messages: Vec<Message>) -> Self::Update;
}

/// A graph state with only a message list merged by [`add_messages`]
/// (LangGraph's `MessagesState`).
///
/// ```
/// use graph_agents::{HasMessages, Message, MessagesState};
///
/// let update = MessagesState::messages_update(vec![Message::human("hi")]);
/// assert!(update.messages.is_some());
/// ```
#[derive(graph_macros::State, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessagesState {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Vec<Message>,
}

impl Clone for MessagesState {
    fn clone(&self) -> Self {
        MessagesState {
            messages: with_room(&self.messages),
        }
    }
}

/// A copy of `messages` with room for a turn's new ones. The engine copies a
/// state before it applies a step's writes when a consumer of its stream still
/// holds the last one; the copy of an exactly sized list would be grown (a
/// second allocation, every message moved again) by the merge that follows.
fn with_room(messages: &[Message]) -> Vec<Message> {
    /// The messages a turn usually adds (an AI message, a tool result or two).
    const TURN: usize = 4;
    let mut copy = Vec::with_capacity(messages.len() + TURN);
    copy.extend_from_slice(messages);
    copy
}

impl HasMessages for MessagesState {
    fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn messages_update(messages: Vec<Message>) -> MessagesStateUpdate {
        MessagesState::update().messages(messages)
    }
}

/// A state with a typed `structured_response`: what
/// [`ReactAgent::response_format`](crate::ReactAgent::response_format) fills.
///
/// [`AgentStateWithStructuredResponse`] implements it; implement it for your own
/// state (a field `Option<T>` without a reducer) to add fields.
pub trait HasStructuredResponse<T>: HasMessages {
    /// An update that sets the structured response.
    fn structured_response_update(value: T) -> Self::Update;
}

/// The messages and the typed answer of an agent asked for a `T`
/// (LangGraph's `AgentStateWithStructuredResponse`).
#[derive(graph_macros::State, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentStateWithStructuredResponse<T: Clone + Send + Sync + 'static> {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Vec<Message>,
    /// The answer as a `T`, once the agent is done (`None` before).
    pub structured_response: Option<T>,
}

impl<T: Clone + Send + Sync + 'static> Clone for AgentStateWithStructuredResponse<T> {
    fn clone(&self) -> Self {
        AgentStateWithStructuredResponse {
            messages: with_room(&self.messages),
            structured_response: self.structured_response.clone(),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Default for AgentStateWithStructuredResponse<T> {
    fn default() -> Self {
        AgentStateWithStructuredResponse {
            messages: Vec::new(),
            structured_response: None,
        }
    }
}

impl<T> HasMessages for AgentStateWithStructuredResponse<T>
where
    T: Clone + Send + Sync + Serialize + serde::de::DeserializeOwned + 'static,
{
    fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn messages_update(messages: Vec<Message>) -> Self::Update {
        AgentStateWithStructuredResponse::update().messages(messages)
    }
}

impl<T> HasStructuredResponse<T> for AgentStateWithStructuredResponse<T>
where
    T: Clone + Send + Sync + Serialize + serde::de::DeserializeOwned + 'static,
{
    fn structured_response_update(value: T) -> Self::Update {
        AgentStateWithStructuredResponse::update().structured_response(Some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids(ms: &[Message]) -> Vec<&str> {
        ms.iter().map(|m| m.id().unwrap_or("?")).collect()
    }

    #[test]
    fn appends_new_and_assigns_missing_ids_on_both_sides() {
        let out = add_messages(
            vec![Message::human("a")],
            vec![Message::ai("b"), Message::ai("c").with_id("c")],
        )
        .unwrap();
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|m| m.id().is_some()));
        assert_eq!(out[2].id(), Some("c"));
        assert_ne!(out[0].id(), out[1].id());
    }

    #[test]
    fn replaces_existing_ids_in_place() {
        let out = add_messages(
            vec![
                Message::human("a").with_id("1"),
                Message::ai("b").with_id("2"),
                Message::human("c").with_id("3"),
            ],
            vec![
                Message::ai("B").with_id("2"),
                Message::human("d").with_id("4"),
            ],
        )
        .unwrap();
        assert_eq!(ids(&out), ["1", "2", "3", "4"]);
        assert_eq!(out[1].text(), "B");
    }

    #[test]
    fn duplicate_new_ids_in_one_update_keep_the_last_at_the_first_place() {
        let out = add_messages(
            vec![Message::human("a").with_id("1")],
            vec![Message::ai("x").with_id("2"), Message::ai("y").with_id("2")],
        )
        .unwrap();
        assert_eq!(ids(&out), ["1", "2"]);
        assert_eq!(out[1].text(), "y");
    }

    #[test]
    fn remove_deletes_and_a_later_re_add_cancels_the_deletion() {
        let left = vec![
            Message::human("a").with_id("1"),
            Message::ai("b").with_id("2"),
        ];
        let out = add_messages(left.clone(), vec![Message::remove("1")]).unwrap();
        assert_eq!(ids(&out), ["2"]);
        let out = add_messages(
            left,
            vec![Message::remove("1"), Message::human("A").with_id("1")],
        )
        .unwrap();
        assert_eq!(ids(&out), ["1", "2"]);
        assert_eq!(out[0].text(), "A");
    }

    #[test]
    fn remove_of_a_message_added_in_the_same_update() {
        let out = add_messages(
            vec![],
            vec![Message::human("a").with_id("1"), Message::remove("1")],
        )
        .unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn remove_all_keeps_what_follows_the_last_marker() {
        let out = add_messages(
            vec![Message::human("a").with_id("1")],
            vec![
                Message::human("b").with_id("2"),
                Message::remove_all(),
                Message::human("c").with_id("3"),
                Message::remove_all(),
                Message::human("d").with_id("4"),
            ],
        )
        .unwrap();
        assert_eq!(ids(&out), ["4"]);
        assert!(
            add_messages(vec![Message::human("x")], vec![Message::remove_all()])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn removing_an_unknown_id_is_an_error() {
        // LangGraph 1.2.22: ValueError("Attempting to delete a message with an ID
        // that doesn't exist ('nope')").
        let left = vec![Message::human("a").with_id("1")];
        let err = add_messages(left, vec![Message::remove("nope")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Attempting to delete a message with an ID that doesn't exist ('nope')"
        );
    }

    #[test]
    fn many_explicit_ids_use_the_index_with_the_same_result() {
        let left: Vec<Message> = (0..20)
            .map(|i| Message::human(format!("{i}")).with_id(format!("{i}")))
            .collect();
        let right: Vec<Message> = (10..30)
            .map(|i| Message::ai(format!("new {i}")).with_id(format!("{i}")))
            .chain([Message::remove("3"), Message::remove("25")])
            .collect();
        let out = add_messages(left, right).unwrap();
        let expected: Vec<String> = (0..30)
            .filter(|i| *i != 3 && *i != 25)
            .map(|i| i.to_string())
            .collect();
        assert_eq!(ids(&out), expected);
        assert_eq!(out[9].text(), "new 10");
    }

    /// A message from a small id space, so that updates hit existing ids often.
    fn message() -> impl Strategy<Value = Message> {
        (0u8..6, 0u8..4, any::<bool>()).prop_map(|(id, kind, with_id)| {
            let m = match kind {
                0 => Message::human(format!("h{id}")),
                1 => Message::ai(format!("a{id}")),
                2 => Message::system(format!("s{id}")),
                _ => Message::tool(format!("t{id}"), "c"),
            };
            if with_id {
                m.with_id(id.to_string())
            } else {
                m
            }
        })
    }

    /// A history as add_messages leaves it: every id present and distinct.
    fn history() -> impl Strategy<Value = Vec<Message>> {
        proptest::collection::vec(message(), 0..8)
            .prop_map(|ms| add_messages(Vec::new(), ms).unwrap())
    }

    /// The obvious (quadratic) model of the merge, without removals.
    fn model(left: &[Message], right: &[Message]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = left
            .iter()
            .map(|m| (m.id().unwrap_or("").to_owned(), m.text().to_owned()))
            .collect();
        for m in right {
            let text = m.text().to_owned();
            match m.id().and_then(|id| out.iter().position(|(i, _)| i == id)) {
                Some(i) => out[i].1 = text,
                None => out.push((m.id().unwrap_or("fresh").to_owned(), text)),
            }
        }
        out
    }

    proptest! {
        #[test]
        // Up to 13 incoming messages: both the scan (at most `SCAN_LIMIT` ids to
        // look up) and the hashed lookup.
        fn merge_matches_the_model(left in history(), right in proptest::collection::vec(message(), 0..14)) {
            let out = add_messages(left.clone(), right.clone()).unwrap();
            let expected = model(&left, &right);
            prop_assert_eq!(out.len(), expected.len());
            for (m, (id, text)) in out.iter().zip(&expected) {
                prop_assert_eq!(m.text(), text.as_str());
                if id != "fresh" {
                    prop_assert_eq!(m.id(), Some(id.as_str()));
                }
            }
        }

        #[test]
        fn ids_stay_unique_and_present(left in history(), right in proptest::collection::vec(message(), 0..8)) {
            let out = add_messages(left, right).unwrap();
            let ids: HashSet<&str> = out.iter().filter_map(Message::id).collect();
            prop_assert_eq!(ids.len(), out.len());
        }

        #[test]
        fn merging_twice_is_merging_the_concatenation(
            left in history(),
            a in proptest::collection::vec(message(), 0..6),
            b in proptest::collection::vec(message(), 0..6),
        ) {
            // Give every incoming message an id first, so both sides see the same ids.
            let a = add_messages(Vec::new(), a).unwrap();
            let b = add_messages(Vec::new(), b).unwrap();
            let stepwise = add_messages(add_messages(left.clone(), a.clone()).unwrap(), b.clone()).unwrap();
            let at_once = add_messages(left, a.into_iter().chain(b).collect()).unwrap();
            prop_assert_eq!(stepwise, at_once);
        }

        #[test]
        fn removing_every_id_empties_and_remove_all_resets(left in history()) {
            let removals: Vec<Message> = left.iter().filter_map(Message::id).map(Message::remove).collect();
            prop_assert!(add_messages(left.clone(), removals).unwrap().is_empty());
            let reset = add_messages(left, vec![Message::remove_all(), Message::human("x").with_id("x")]).unwrap();
            prop_assert_eq!(ids(&reset), vec!["x"]);
        }

        #[test]
        fn identical_ids_are_an_idempotent_update(left in history()) {
            prop_assert_eq!(add_messages(left.clone(), left.clone()).unwrap(), left);
        }
    }
}
