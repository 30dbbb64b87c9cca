//! Namespaces: the path of labels an item lives under, and the patterns
//! `list_namespaces` matches them with.

use super::error::StoreError;
use std::fmt;
use std::sync::Arc;

/// The path of string labels an item lives under, e.g. `("memories", "alice")`.
///
/// Labels are checked as LangGraph checks them: none may be empty or contain a
/// period (`.`, the separator in the stored form `memories.alice`) or a NUL
/// byte. The empty namespace ([`Namespace::root`]) is a valid search or listing
/// prefix (the whole store) but addresses no item; an item's namespace may not
/// start with the reserved label `langgraph` either.
///
/// Cloning is cheap (the labels are shared), and comparing a namespace with
/// a clone of itself does not look at the labels: a store keeping the
/// namespace it was given finds it again at once when called with the same
/// value.
///
/// ```
/// use graph_core::store::Namespace;
///
/// let ns = Namespace::new(["memories", "alice"])?;
/// assert_eq!(ns.to_string(), r#"("memories", "alice")"#);
/// assert_eq!(ns.to_dotted(), "memories.alice");
/// assert!(Namespace::new(["a.b"]).is_err());
/// # Ok::<(), graph_core::store::StoreError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Namespace(Arc<[String]>);

/// Label by label; a clone of the same namespace is equal without a look at
/// its labels. (`==` has that shortcut from `Arc` already.)
impl Ord for Namespace {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.0, &other.0) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
        }
    }
}

impl PartialOrd for Namespace {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Namespace {
    /// A namespace of `labels`, each checked (see the type's docs).
    pub fn new<I>(labels: I) -> Result<Self, StoreError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let labels: Vec<String> = labels.into_iter().map(Into::into).collect();
        check_labels(&labels)?;
        Ok(Namespace(labels.into()))
    }

    /// The empty namespace: as a prefix, the whole store.
    pub fn root() -> Self {
        Namespace(Arc::from(Vec::new()))
    }

    /// Parses the stored form, labels joined by periods (`"memories.alice"`);
    /// `""` is the root.
    pub fn from_dotted(text: &str) -> Result<Self, StoreError> {
        if text.is_empty() {
            return Ok(Self::root());
        }
        Self::new(text.split('.'))
    }

    /// The stored form: labels joined by periods, as LangGraph's `prefix`
    /// column holds them.
    pub fn to_dotted(&self) -> String {
        self.0.join(".")
    }

    /// The labels.
    pub fn labels(&self) -> &[String] {
        &self.0
    }

    /// How many labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether this is the root (no labels).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `prefix`'s labels are the first labels of this namespace.
    pub fn starts_with(&self, prefix: &Namespace) -> bool {
        self.0.starts_with(&prefix.0)
    }

    /// The first `depth` labels (all of them when there are fewer).
    pub fn truncated(&self, depth: usize) -> Namespace {
        if depth >= self.0.len() {
            self.clone()
        } else {
            Namespace(self.0[..depth].to_vec().into())
        }
    }

    /// Checks that this namespace may hold items: not the root, and not under
    /// the reserved label `langgraph` (LangGraph rejects both in `put`).
    pub fn check_addressable(&self) -> Result<(), StoreError> {
        if self.0.is_empty() {
            return Err(StoreError::InvalidNamespace {
                namespace: Vec::new(),
                reason: "an item's namespace cannot be empty; give at least one label, \
                         e.g. (\"memories\", user_id)"
                    .into(),
            });
        }
        if self.0[0] == "langgraph" {
            return Err(StoreError::InvalidNamespace {
                namespace: self.0.to_vec(),
                reason: "the root label `langgraph` is reserved; choose another first label".into(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, label) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{label:?}")?;
        }
        if self.0.len() == 1 {
            f.write_str(",")?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Namespace{self}")
    }
}

impl serde::Serialize for Namespace {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Namespace {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let labels = Vec::<String>::deserialize(deserializer)?;
        Namespace::new(labels).map_err(serde::de::Error::custom)
    }
}

/// A namespace pattern of [`ListNamespacesOp`](super::ListNamespacesOp): labels
/// where `"*"` matches any one label, matched against the start (prefix) or the
/// end (suffix) of each namespace.
///
/// ```
/// use graph_core::store::{Namespace, NamespacePattern};
///
/// let ns = Namespace::new(["cache", "docs", "v1"])?;
/// assert!(NamespacePattern::new(["cache", "*"])?.matches_prefix(&ns));
/// assert!(NamespacePattern::new(["*", "v1"])?.matches_suffix(&ns));
/// assert!(!NamespacePattern::new(["docs"])?.matches_prefix(&ns));
/// # Ok::<(), graph_core::store::StoreError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NamespacePattern(Vec<String>);

impl NamespacePattern {
    /// The wildcard label.
    pub const WILDCARD: &'static str = "*";

    /// A pattern of `labels` (checked as a namespace's are; `"*"` is a wildcard).
    pub fn new<I>(labels: I) -> Result<Self, StoreError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let labels: Vec<String> = labels.into_iter().map(Into::into).collect();
        check_labels(&labels)?;
        Ok(NamespacePattern(labels))
    }

    /// The labels (`"*"` for a wildcard).
    pub fn labels(&self) -> &[String] {
        &self.0
    }

    /// Whether the pattern has a wildcard.
    pub fn has_wildcard(&self) -> bool {
        self.0.iter().any(|l| l == Self::WILDCARD)
    }

    /// Whether `namespace` starts with the pattern.
    pub fn matches_prefix(&self, namespace: &Namespace) -> bool {
        namespace.len() >= self.0.len()
            && self
                .0
                .iter()
                .zip(namespace.labels())
                .all(|(p, l)| p == Self::WILDCARD || p == l)
    }

    /// Whether `namespace` ends with the pattern.
    pub fn matches_suffix(&self, namespace: &Namespace) -> bool {
        namespace.len() >= self.0.len()
            && self
                .0
                .iter()
                .rev()
                .zip(namespace.labels().iter().rev())
                .all(|(p, l)| p == Self::WILDCARD || p == l)
    }
}

fn check_labels(labels: &[String]) -> Result<(), StoreError> {
    for label in labels {
        let reason = if label.is_empty() {
            "labels cannot be empty strings"
        } else if label.contains('.') {
            "labels cannot contain periods ('.'); use separate labels, e.g. (\"a\", \"b\") for \"a.b\""
        } else if label.contains('\0') {
            "labels cannot contain NUL bytes"
        } else {
            continue;
        };
        return Err(StoreError::InvalidNamespace {
            namespace: labels.to_vec(),
            reason: format!("label {label:?}: {reason}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    fn ns(labels: &[&str]) -> Namespace {
        Namespace::new(labels.iter().copied()).unwrap()
    }

    /// Label by label, a prefix before its extensions; a clone and an equal
    /// namespace built apart compare equal either way.
    #[test]
    fn namespaces_order_label_by_label_and_clones_are_equal() {
        let a = ns(&["a"]);
        let ab = ns(&["a", "b"]);
        let b = ns(&["b"]);
        assert_eq!(a.cmp(&ab), Ordering::Less);
        assert_eq!(ab.cmp(&b), Ordering::Less);
        assert_eq!(b.cmp(&a), Ordering::Greater);
        assert_eq!(ab.cmp(&ab.clone()), Ordering::Equal);
        assert_eq!(ab.cmp(&ns(&["a", "b"])), Ordering::Equal);
        assert_eq!(ab.partial_cmp(&ns(&["a", "c"])), Some(Ordering::Less));
        let mut sorted = vec![b.clone(), ab.clone(), Namespace::root(), a.clone()];
        sorted.sort();
        assert_eq!(sorted, [Namespace::root(), a, ab, b]);
    }
}
