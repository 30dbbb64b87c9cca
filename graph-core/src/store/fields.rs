//! Field paths: which parts of an item's value are embedded for semantic
//! search, in LangGraph's path syntax.

use super::error::StoreError;
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::borrow::Cow;

/// Texts of a value to embed: borrowed where the value holds them as strings.
pub(crate) type Texts<'v> = SmallVec<[Cow<'v, str>; 2]>;

/// A path into an item's value naming the text to embed, as LangGraph's
/// `fields` and a put's `index` list them:
///
/// - `$`: the whole value, as JSON text (sorted keys);
/// - `title`, `metadata.title`: a field, a nested field;
/// - `authors[0].name`, `revisions[-1]`: an array element (negative counts from
///   the end);
/// - `messages[*].content`: every element, each embedded on its own;
/// - `metadata.*`: every value of an object (or element of an array);
/// - `{title,body.text}`: several fields of one object, each on its own.
///
/// A string, number or boolean at the end of a path is embedded as its text
/// (`true` as `True`, as Python's `str`), an object or array as JSON text;
/// a missing field or `null` yields nothing.
///
/// ```
/// use graph_core::store::FieldPath;
/// use serde_json::json;
///
/// let value = json!({"messages": [{"content": "hi"}, {"content": "bye"}], "n": 2});
/// let value = value.as_object().unwrap();
/// assert_eq!(FieldPath::parse("messages[*].content")?.texts(value), ["hi", "bye"]);
/// assert_eq!(FieldPath::parse("messages[-1].content")?.texts(value), ["bye"]);
/// assert_eq!(FieldPath::parse("n")?.texts(value), ["2"]);
/// assert!(FieldPath::parse("missing")?.texts(value).is_empty());
/// # Ok::<(), graph_core::store::StoreError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    /// As written; shared by the vectors named after it.
    text: std::sync::Arc<str>,
    tokens: Vec<Token>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Field(String),
    Index(i64),
    Each,
    Wildcard,
    Multi(Vec<Vec<String>>),
}

impl FieldPath {
    /// The path of the whole value, `$` (LangGraph's default `fields`).
    pub fn root() -> Self {
        FieldPath {
            text: "$".into(),
            tokens: Vec::new(),
        }
    }

    /// Parses a path (see the type's docs for the syntax).
    pub fn parse(path: &str) -> Result<Self, StoreError> {
        if path.is_empty() || path == "$" {
            return Ok(FieldPath {
                text: path.into(),
                tokens: Vec::new(),
            });
        }
        let error = |reason: &str| StoreError::InvalidFieldPath {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let mut tokens = Vec::new();
        let mut current = String::new();
        let mut chars = path.char_indices().peekable();
        let flush = |current: &mut String, tokens: &mut Vec<Token>| {
            if !current.is_empty() {
                let field = std::mem::take(current);
                tokens.push(if field == "*" {
                    Token::Wildcard
                } else {
                    Token::Field(field)
                });
            }
        };
        while let Some((start, c)) = chars.next() {
            match c {
                '[' => {
                    flush(&mut current, &mut tokens);
                    let end = path[start..]
                        .find(']')
                        .ok_or_else(|| error("`[` without a closing `]`"))?;
                    let inner = &path[start + 1..start + end];
                    tokens.push(if inner == "*" {
                        Token::Each
                    } else {
                        Token::Index(inner.trim().parse().map_err(|_| {
                            error("an array index is an integer (`[0]`, `[-1]`) or `[*]`")
                        })?)
                    });
                    while chars.peek().is_some_and(|&(i, _)| i <= start + end) {
                        chars.next();
                    }
                }
                '{' => {
                    flush(&mut current, &mut tokens);
                    let end = path[start..]
                        .find('}')
                        .ok_or_else(|| error("`{` without a closing `}`"))?;
                    let inner = &path[start + 1..start + end];
                    let fields: Vec<Vec<String>> = inner
                        .split(',')
                        .map(|f| {
                            f.trim()
                                .split('.')
                                .filter(|s| !s.is_empty())
                                .map(str::to_owned)
                                .collect::<Vec<_>>()
                        })
                        .filter(|f| !f.is_empty())
                        .collect();
                    if fields.is_empty() {
                        return Err(error("`{}` lists no fields; write `{a,b}`"));
                    }
                    tokens.push(Token::Multi(fields));
                    while chars.peek().is_some_and(|&(i, _)| i <= start + end) {
                        chars.next();
                    }
                }
                ']' | '}' => return Err(error("a closing bracket without its opening one")),
                '.' => flush(&mut current, &mut tokens),
                c => current.push(c),
            }
        }
        flush(&mut current, &mut tokens);
        Ok(FieldPath {
            text: path.into(),
            tokens,
        })
    }

    /// The path as written (the name LangGraph gives the vectors of this path:
    /// the path itself for one text, `path.0`, `path.1`, ... for several).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether this is the whole value (`$`).
    pub fn is_root(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The texts at this path in `value`, in order (LangGraph's
    /// `get_text_at_path`).
    pub fn texts(&self, value: &Map<String, Value>) -> Vec<String> {
        let mut out = Texts::new();
        self.texts_into(value, &mut out);
        out.into_iter().map(Cow::into_owned).collect()
    }

    /// The texts at this path in `value`, appended to `out` (a string is
    /// borrowed, not copied).
    pub(crate) fn texts_into<'v>(&self, value: &'v Map<String, Value>, out: &mut Texts<'v>) {
        if self.tokens.is_empty() {
            out.push(Cow::Owned(python_json(&ValueRef::Object(value))));
            return;
        }
        extract_in_object(value, &self.tokens, out);
    }

    /// The path as written, shared.
    pub(crate) fn name(&self) -> &std::sync::Arc<str> {
        &self.text
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

enum ValueRef<'a> {
    Object(&'a Map<String, Value>),
    Value(&'a Value),
}

fn extract_in_object<'v>(object: &'v Map<String, Value>, tokens: &[Token], out: &mut Texts<'v>) {
    match &tokens[0] {
        Token::Field(name) => {
            if let Some(v) = object.get(name) {
                extract(v, &tokens[1..], out);
            }
        }
        Token::Wildcard => {
            for v in object.values() {
                extract(v, &tokens[1..], out);
            }
        }
        Token::Multi(fields) => multi(object, fields, out),
        Token::Index(_) | Token::Each => {}
    }
}

fn extract<'v>(value: &'v Value, tokens: &[Token], out: &mut Texts<'v>) {
    let Some(token) = tokens.first() else {
        leaf(value, out);
        return;
    };
    match (token, value) {
        (Token::Index(i), Value::Array(items)) => {
            let len = items.len() as i64;
            let i = if *i < 0 { len + i } else { *i };
            if (0..len).contains(&i) {
                extract(&items[i as usize], &tokens[1..], out);
            }
        }
        (Token::Each | Token::Wildcard, Value::Array(items)) => {
            for item in items {
                extract(item, &tokens[1..], out);
            }
        }
        (_, Value::Object(object)) => extract_in_object(object, tokens, out),
        _ => {}
    }
}

/// `{a,b.c}`: each field of `object` (nested paths through objects only), the
/// leaf as text (LangGraph does not descend further after a multi-field token).
fn multi<'v>(object: &'v Map<String, Value>, fields: &[Vec<String>], out: &mut Texts<'v>) {
    for field in fields {
        let mut current: Option<&Value> = None;
        let mut object = Some(object);
        for name in field {
            current = object.and_then(|o| o.get(name));
            object = current.and_then(Value::as_object);
        }
        if let Some(v) = current {
            leaf(v, out);
        }
    }
}

/// The text of a value at the end of a path, as LangGraph writes it: a
/// string as it is, `True` / `False`, a number, JSON for the rest; no text
/// for `null`.
fn leaf<'v>(value: &'v Value, out: &mut Texts<'v>) {
    match value {
        Value::Null => {}
        Value::String(s) => out.push(Cow::Borrowed(s)),
        Value::Bool(true) => out.push(Cow::Borrowed("True")),
        Value::Bool(false) => out.push(Cow::Borrowed("False")),
        Value::Number(n) => out.push(Cow::Owned(n.to_string())),
        Value::Array(_) | Value::Object(_) => {
            out.push(Cow::Owned(python_json(&ValueRef::Value(value))))
        }
    }
}

/// JSON text as Python's `json.dumps(obj, sort_keys=True, ensure_ascii=False)`
/// writes it (`", "` and `": "` separators), so that the whole-value text
/// LangGraph embeds is the same here.
fn python_json(value: &ValueRef<'_>) -> String {
    let mut out = String::new();
    match value {
        ValueRef::Object(map) => write_object(map, &mut out),
        ValueRef::Value(v) => write_value(v, &mut out),
    }
    out
}

fn write_object(map: &Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_string(k, out);
        out.push_str(": ");
        write_value(&map[k], out);
    }
    out.push('}');
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, out),
    }
}

fn write_string(s: &str, out: &mut String) {
    // serde_json escapes exactly as Python's json with ensure_ascii=False.
    match serde_json::to_string(s) {
        Ok(text) => out.push_str(&text),
        Err(_) => out.push_str("\"\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(path: &str, value: Value) -> Vec<String> {
        let Value::Object(map) = value else {
            panic!("not an object")
        };
        FieldPath::parse(path).unwrap().texts(&map)
    }

    #[test]
    fn paths_extract_as_langgraph_does() {
        let doc = json!({
            "a": {"b": [{"c": "x", "d": 1}, {"c": "y", "d": true}], "e": null},
            "tags": ["t1", "t2"],
            "title": "T",
            "ü": "é",
        });
        // Python: get_text_at_path(doc, "$") ==
        // '{"a": {"b": [{"c": "x", "d": 1}, {"c": "y", "d": true}], "e": null}, "tags": ["t1", "t2"], "title": "T", "ü": "é"}'
        assert_eq!(
            texts("$", doc.clone()),
            [
                r#"{"a": {"b": [{"c": "x", "d": 1}, {"c": "y", "d": true}], "e": null}, "tags": ["t1", "t2"], "title": "T", "ü": "é"}"#
            ]
        );
        // Python: ["x", "y"], ["1", "True"], ["t2"], ['[{"c": "x", "d": 1}, {"c": "y", "d": true}]'], [], ["T", "t1"]
        assert_eq!(texts("a.b[*].c", doc.clone()), ["x", "y"]);
        assert_eq!(texts("a.b[*].d", doc.clone()), ["1", "True"]);
        assert_eq!(texts("tags[-1]", doc.clone()), ["t2"]);
        assert_eq!(
            texts("a.b", doc.clone()),
            [r#"[{"c": "x", "d": 1}, {"c": "y", "d": true}]"#]
        );
        assert!(texts("a.e", doc.clone()).is_empty());
        assert_eq!(texts("{title,tags}", doc.clone()), ["T", r#"["t1", "t2"]"#]);
        // Python: get_text_at_path(doc, "a.b[5].c") == [], "a.*" == ['[{"c": ...}]'] (null skipped)
        assert!(texts("a.b[5].c", doc.clone()).is_empty());
        assert_eq!(texts("a.*", doc.clone()).len(), 1);
        assert_eq!(texts("tags[*]", doc), ["t1", "t2"]);
    }

    #[test]
    fn malformed_paths_are_errors() {
        for bad in ["a[0", "a[x]", "a{b", "a]"] {
            assert!(
                matches!(
                    FieldPath::parse(bad),
                    Err(StoreError::InvalidFieldPath { .. })
                ),
                "{bad}"
            );
        }
    }
}
