//! Search filters on the fields of an item's value (`$eq`, `$ne`, `$gt`,
//! `$gte`, `$lt`, `$lte`), with LangGraph's semantics.

use super::error::{json_kind, StoreError};
use super::namespace::Namespace;
use serde_json::{Map, Value};
use std::cmp::Ordering;

/// A search filter: conditions on top-level fields of an item's value, all of
/// which must hold.
///
/// Built from LangGraph's JSON form or with the builder methods:
///
/// - `{"status": "active"}` (or `{"status": {"$eq": "active"}}`): the field
///   equals the value. An object operand matches an object field holding at
///   least those entries (compared the same way, recursively); an array operand
///   an array of the same length whose elements match in turn. Numbers compare
///   by value (`1` equals `1.0`). A missing field equals `null`.
/// - `{"status": {"$ne": "done"}}`: the field differs (a missing field differs
///   from every value but `null`).
/// - `{"score": {"$gt": 4.5}}`, `$gte`, `$lt`, `$lte`: numbers compare with
///   numbers, strings with strings (by their bytes). An item that lacks the
///   field, or holds `null` in it, does not match; one that holds another kind
///   of value is a [`StoreError::FilterType`] error.
/// - Several operators on one field (`{"$gte": 1, "$lt": 5}`) must all hold.
///
/// ```
/// use graph_core::store::Filter;
/// use serde_json::json;
///
/// let filter = Filter::from_json(json!({"kind": "fact", "score": {"$gte": 0.5}}))?;
/// assert_eq!(filter, Filter::new().eq("kind", "fact").gte("score", 0.5));
/// let value = json!({"kind": "fact", "score": 0.75});
/// assert!(filter.matches_value(value.as_object().unwrap())?);
/// # Ok::<(), graph_core::store::StoreError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    conditions: Vec<(String, Condition)>,
}

/// What one filtered field must satisfy.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    /// Equal to the value (objects: at least those entries).
    Matches(Value),
    /// Every operator holds.
    Operators(Vec<(Operator, Value)>),
}

/// A filter operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `$eq`: equal (whole values; objects must be equal too).
    Eq,
    /// `$ne`: not equal.
    Ne,
    /// `$gt`: greater than.
    Gt,
    /// `$gte`: greater than or equal.
    Gte,
    /// `$lt`: less than.
    Lt,
    /// `$lte`: less than or equal.
    Lte,
}

impl std::fmt::Display for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Operator {
    /// The operator's name in LangGraph's filters (`"$gt"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Eq => "$eq",
            Operator::Ne => "$ne",
            Operator::Gt => "$gt",
            Operator::Gte => "$gte",
            Operator::Lt => "$lt",
            Operator::Lte => "$lte",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "$eq" => Operator::Eq,
            "$ne" => Operator::Ne,
            "$gt" => Operator::Gt,
            "$gte" => Operator::Gte,
            "$lt" => Operator::Lt,
            "$lte" => Operator::Lte,
            _ => return None,
        })
    }

    fn is_comparison(self) -> bool {
        !matches!(self, Operator::Eq | Operator::Ne)
    }
}

impl Filter {
    /// The empty filter: every item matches.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses LangGraph's JSON form (an object of field names to values or to
    /// objects of operators); `null` is the empty filter.
    pub fn from_json(filter: Value) -> Result<Self, StoreError> {
        let map = match filter {
            Value::Null => return Ok(Self::new()),
            Value::Object(map) => map,
            other => {
                return Err(StoreError::InvalidFilter {
                    field: String::new(),
                    reason: format!(
                        "a filter is a JSON object of field names to values, not {}",
                        json_kind(&other)
                    ),
                })
            }
        };
        let mut filter = Filter::new();
        for (field, operand) in map {
            let condition = match operand {
                Value::Object(ops) if ops.keys().any(|k| k.starts_with('$')) => {
                    let mut parsed = Vec::with_capacity(ops.len());
                    for (name, value) in ops {
                        let op =
                            Operator::parse(&name).ok_or_else(|| StoreError::InvalidFilter {
                                field: field.clone(),
                                reason: format!(
                                "unknown operator `{name}`; use $eq, $ne, $gt, $gte, $lt or $lte \
                                 (an object operand cannot mix operators and fields)"
                            ),
                            })?;
                        check_operand(&field, op, &value)?;
                        parsed.push((op, value));
                    }
                    Condition::Operators(parsed)
                }
                value => Condition::Matches(value),
            };
            filter.conditions.push((field, condition));
        }
        Ok(filter)
    }

    /// Adds `field == value`.
    pub fn eq(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(field.into(), Condition::Matches(value.into()))
    }

    /// Adds `field != value`.
    pub fn ne(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.op(field, Operator::Ne, value)
    }

    /// Adds `field > value`.
    pub fn gt(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.op(field, Operator::Gt, value)
    }

    /// Adds `field >= value`.
    pub fn gte(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.op(field, Operator::Gte, value)
    }

    /// Adds `field < value`.
    pub fn lt(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.op(field, Operator::Lt, value)
    }

    /// Adds `field <= value`.
    pub fn lte(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.op(field, Operator::Lte, value)
    }

    fn op(self, field: impl Into<String>, op: Operator, value: impl Into<Value>) -> Self {
        self.push(field.into(), Condition::Operators(vec![(op, value.into())]))
    }

    fn push(mut self, field: String, condition: Condition) -> Self {
        // `{"$gte": 1, "$lt": 5}` built in two calls parses the same as in one.
        if let Condition::Operators(new) = &condition
            && let Some((_, Condition::Operators(ops))) =
                self.conditions.iter_mut().find(|(f, _)| *f == field)
        {
            ops.extend(new.iter().cloned());
            return self;
        }
        self.conditions.push((field, condition));
        self
    }

    /// Whether the filter has no conditions.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// The conditions, field by field (for backends that translate filters to
    /// their query language).
    pub fn conditions(&self) -> &[(String, Condition)] {
        &self.conditions
    }

    /// Checks every operand: comparison operators take a number or a string.
    /// Filters built with the builder methods are checked here (those from
    /// [`Filter::from_json`] already are); stores call it before searching.
    pub fn validate(&self) -> Result<(), StoreError> {
        for (field, condition) in &self.conditions {
            if let Condition::Operators(ops) = condition {
                for (op, value) in ops {
                    check_operand(field, *op, value)?;
                }
            }
        }
        Ok(())
    }

    /// Whether `value` passes the filter, with errors naming no item (see
    /// [`Filter::matches`]).
    pub fn matches_value(&self, value: &Map<String, Value>) -> Result<bool, StoreError> {
        self.matches(&Namespace::root(), "", value)
    }

    /// Whether the value of item `key` in `namespace` passes the filter.
    /// A comparison with a stored value of another kind is an error naming
    /// the item.
    pub fn matches(
        &self,
        namespace: &Namespace,
        key: &str,
        value: &Map<String, Value>,
    ) -> Result<bool, StoreError> {
        for (field, condition) in &self.conditions {
            let stored = value.get(field);
            let ok = match condition {
                Condition::Matches(operand) => matches(stored, operand),
                Condition::Operators(ops) => {
                    let mut all = true;
                    for (op, operand) in ops {
                        if !apply(*op, stored, operand).map_err(|found| StoreError::FilterType {
                            field: field.clone(),
                            operator: *op,
                            operand: operand.to_string(),
                            found,
                            namespace: namespace.clone(),
                            key: key.to_owned(),
                        })? {
                            all = false;
                            break;
                        }
                    }
                    all
                }
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn check_operand(field: &str, op: Operator, value: &Value) -> Result<(), StoreError> {
    if op.is_comparison() && !matches!(value, Value::Number(_) | Value::String(_)) {
        return Err(StoreError::InvalidFilter {
            field: field.to_owned(),
            reason: format!(
                "{} compares with a number or a string, not {}",
                op.as_str(),
                json_kind(value)
            ),
        });
    }
    Ok(())
}

/// LangGraph's `_compare_values`: subset match for objects, element-wise for
/// arrays, equality otherwise (a missing field is `null`).
fn matches(stored: Option<&Value>, operand: &Value) -> bool {
    match operand {
        Value::Object(want) => match stored {
            Some(Value::Object(have)) => want.iter().all(|(k, v)| matches(have.get(k), v)),
            _ => false,
        },
        Value::Array(want) => match stored {
            Some(Value::Array(have)) => {
                have.len() == want.len() && have.iter().zip(want).all(|(h, w)| matches(Some(h), w))
            }
            _ => false,
        },
        scalar => equal(stored.unwrap_or(&Value::Null), scalar),
    }
}

/// JSON equality with numbers compared by value (Python's `1 == 1.0`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// One operator on a stored value; `Err` holds the stored value's JSON when a
/// comparison cannot be made.
fn apply(op: Operator, stored: Option<&Value>, operand: &Value) -> Result<bool, String> {
    let stored_or_null = stored.unwrap_or(&Value::Null);
    let ordering = match op {
        Operator::Eq => return Ok(equal(stored_or_null, operand)),
        Operator::Ne => return Ok(!equal(stored_or_null, operand)),
        _ => match (stored, operand) {
            (None | Some(Value::Null), _) => return Ok(false),
            (Some(Value::Number(a)), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
                (Some(a), Some(b)) => a.partial_cmp(&b),
                _ => None,
            },
            (Some(Value::String(a)), Value::String(b)) => Some(a.as_str().cmp(b.as_str())),
            (Some(other), _) => return Err(other.to_string()),
        },
    };
    let Some(ordering) = ordering else {
        return Ok(false);
    };
    Ok(match op {
        Operator::Gt => ordering == Ordering::Greater,
        Operator::Gte => ordering != Ordering::Less,
        Operator::Lt => ordering == Ordering::Less,
        Operator::Lte => ordering != Ordering::Greater,
        Operator::Eq | Operator::Ne => unreachable!("handled above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(filter: Value, value: Value) -> Result<bool, StoreError> {
        Filter::from_json(filter)?.matches_value(value.as_object().expect("object"))
    }

    #[test]
    fn operators_as_langgraph_in_memory_store() {
        // Python, InMemoryStore search with these filters over {"a": 1, "s": "x",
        // "o": {"p": 2, "q": 3}, "l": [1, 2]}: True for each of the following.
        let v = json!({"a": 1, "s": "x", "o": {"p": 2, "q": 3}, "l": [1, 2]});
        for f in [
            json!({"a": 1}),
            json!({"a": 1.0}),
            json!({"a": {"$eq": 1}}),
            json!({"a": {"$gt": 0, "$lte": 1}}),
            json!({"s": {"$ne": "y"}}),
            json!({"missing": {"$ne": "y"}}),
            json!({"missing": null}),
            json!({"o": {"p": 2}}),
            json!({"l": [1, 2]}),
        ] {
            assert!(check(f.clone(), v.clone()).unwrap(), "{f}");
        }
        for f in [
            json!({"a": 2}),
            json!({"a": {"$gt": 1}}),
            json!({"o": {"p": 3}}),
            json!({"l": [1]}),
            json!({"missing": 1}),
            json!({"missing": {"$gt": 1}}),
            json!({"o": {"$eq": {"p": 2}}}),
        ] {
            assert!(!check(f.clone(), v.clone()).unwrap(), "{f}");
        }
    }

    #[test]
    fn bad_filters_are_errors() {
        assert!(matches!(
            Filter::from_json(json!({"a": {"$in": [1]}})),
            Err(StoreError::InvalidFilter { .. })
        ));
        assert!(matches!(
            Filter::from_json(json!({"a": {"$gt": [1]}})),
            Err(StoreError::InvalidFilter { .. })
        ));
        assert!(matches!(
            Filter::from_json(json!([1])),
            Err(StoreError::InvalidFilter { .. })
        ));
        // Python: float("x") > 1 raises ValueError; here a typed error.
        assert!(matches!(
            check(json!({"s": {"$gt": 1}}), json!({"s": "x"})),
            Err(StoreError::FilterType { .. })
        ));
    }
}
