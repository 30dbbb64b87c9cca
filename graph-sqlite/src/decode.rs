//! Reading LangGraph's typed values: `(type, bytes)` pairs as written by its
//! `JsonPlusSerializer` (`"json"`, `"msgpack"`, `"null"`, ...), turned into JSON
//! [`Blob`]s.
//!
//! This library writes `"json"`, and `"msgpack"` for the Interrupt and Send
//! objects of pending writes ([`crate::encode`]). Python writes `"msgpack"` by default; plain
//! JSON-like data (None, bool, numbers, str, list, tuple, dict) converts exactly.
//! Python objects travel as msgpack extensions naming a module and a class; the two
//! LangGraph types a graph run stores ([`Interrupt`] and [`Send`]) become the JSON
//! objects stategraph uses for them, and every other one is an error that names the
//! Python type, never a silent guess.
//!
//! [`Interrupt`]: https://langchain-ai.github.io/langgraph/reference/types/#langgraph.types.Interrupt
//! [`Send`]: https://langchain-ai.github.io/langgraph/reference/types/#langgraph.types.Send

use graph_core::checkpoint::Blob;
use rmp::Marker;
use serde_json::{Map, Number, Value};

/// Why a stored value could not be read.
pub(crate) type DecodeError = Box<dyn std::error::Error + Send + Sync>;

/// Deepest nesting accepted: serde_json's own recursion limit, so anything read
/// here can be parsed again by the graph.
const MAX_DEPTH: usize = 128;

/// LangGraph's msgpack extension codes (`langgraph.checkpoint.serde.jsonplus`).
const EXT_CONSTRUCTOR_SINGLE_ARG: i8 = 0;
pub(crate) const EXT_CONSTRUCTOR_POS_ARGS: i8 = 1;
pub(crate) const EXT_CONSTRUCTOR_KW_ARGS: i8 = 2;
const EXT_METHOD_SINGLE_ARG: i8 = 3;
const EXT_PYDANTIC_V1: i8 = 4;
const EXT_PYDANTIC_V2: i8 = 5;
const EXT_NUMPY_ARRAY: i8 = 6;
const EXT_DELTA_SNAPSHOT: i8 = 7;

/// A stored value's bytes, as SQLite returned them.
pub(crate) enum Stored<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
    Null,
}

impl<'a> From<rusqlite::types::ValueRef<'a>> for Stored<'a> {
    fn from(value: rusqlite::types::ValueRef<'a>) -> Self {
        use rusqlite::types::ValueRef;
        match value {
            ValueRef::Text(t) => match std::str::from_utf8(t) {
                Ok(s) => Stored::Text(s),
                Err(_) => Stored::Bytes(t),
            },
            ValueRef::Blob(b) => Stored::Bytes(b),
            ValueRef::Null => Stored::Null,
            // Numbers are not a LangGraph encoding; reading them as bytes makes the
            // type dispatch below report them.
            ValueRef::Integer(_) | ValueRef::Real(_) => Stored::Bytes(&[]),
        }
    }
}

impl Stored<'_> {
    fn utf8(&self) -> Result<&str, DecodeError> {
        match self {
            Stored::Text(s) => Ok(s),
            Stored::Bytes(b) => Ok(std::str::from_utf8(b)?),
            Stored::Null => Err("the value is NULL".into()),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Stored::Text(s) => s.as_bytes(),
            Stored::Bytes(b) => b,
            Stored::Null => &[],
        }
    }
}

/// Decodes a LangGraph `(type, value)` pair into a JSON value.
pub(crate) fn typed_to_json(type_: Option<&str>, value: Stored<'_>) -> Result<Value, DecodeError> {
    match type_ {
        Some("json") => Ok(serde_json::from_str(value.utf8()?)?),
        Some("msgpack") => msgpack_to_json(value.bytes()),
        Some("null") => Ok(Value::Null),
        other => Err(unreadable_type(other)),
    }
}

/// Decodes a LangGraph `(type, value)` pair into a [`Blob`]. JSON text is kept
/// byte for byte.
pub(crate) fn typed_to_blob(type_: Option<&str>, value: Stored<'_>) -> Result<Blob, DecodeError> {
    match type_ {
        Some("json") => Ok(Blob::from_json(value.utf8()?)?),
        _ => Ok(Blob::encode(&typed_to_json(type_, value)?)?),
    }
}

fn unreadable_type(type_: Option<&str>) -> DecodeError {
    match type_ {
        Some("bytes" | "bytearray") => {
            "raw Python bytes have no JSON form; store them as a string or list".into()
        }
        Some("pickle") => "a pickled Python object cannot be read outside Python".into(),
        Some(t) => format!("unknown serialisation type `{t}`").into(),
        None => "the serialisation type is NULL".into(),
    }
}

/// Decodes one msgpack document (all of `bytes`) into JSON.
pub(crate) fn msgpack_to_json(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut reader = Reader::new(bytes);
    let value = reader.value(0)?;
    reader.finish()?;
    Ok(value)
}

/// A strict msgpack reader producing JSON directly. Strict where general readers
/// are lenient (the reserved byte `0xc1`, trailing bytes), with a nesting limit
/// that also counts extension payloads, so hostile input is an error, not a stack
/// overflow.
pub(crate) struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    /// Fails if bytes are left after the document.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(format!("invalid msgpack: {} trailing bytes", self.rest.len()).into())
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.rest.len() < n {
            return Err("invalid msgpack: truncated".into());
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, DecodeError> {
        let len = self.uint(n)?;
        // Every element takes at least one byte: a length beyond what is left is
        // corruption, and must not become a huge allocation.
        match usize::try_from(len) {
            Ok(len) if len <= self.rest.len() => Ok(len),
            _ => Err("invalid msgpack: length beyond the end of the data".into()),
        }
    }

    /// The length of a map starting here.
    pub(crate) fn map_len(&mut self) -> Result<usize, DecodeError> {
        match Marker::from_u8(self.byte()?) {
            Marker::FixMap(n) => Ok(usize::from(n)),
            Marker::Map16 => self.len(2),
            Marker::Map32 => self.len(4),
            _ => Err("expected a msgpack map".into()),
        }
    }

    /// One value, as JSON.
    pub(crate) fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(format!("value nested deeper than {MAX_DEPTH} levels").into());
        }
        Ok(match Marker::from_u8(self.byte()?) {
            Marker::FixPos(n) => Value::from(n),
            Marker::FixNeg(n) => Value::from(i64::from(n)),
            Marker::Null => Value::Null,
            Marker::False => Value::Bool(false),
            Marker::True => Value::Bool(true),
            Marker::U8 => Value::from(self.uint(1)?),
            Marker::U16 => Value::from(self.uint(2)?),
            Marker::U32 => Value::from(self.uint(4)?),
            Marker::U64 => Value::from(self.uint(8)?),
            // Two's complement: reinterpreting the bits is the decoding.
            Marker::I8 => Value::from(i64::from(self.uint(1)? as u8 as i8)),
            Marker::I16 => Value::from(i64::from(self.uint(2)? as u16 as i16)),
            Marker::I32 => Value::from(i64::from(self.uint(4)? as u32 as i32)),
            Marker::I64 => Value::from(self.uint(8)? as i64),
            Marker::F32 => float(f64::from(f32::from_bits(self.uint(4)? as u32)))?,
            Marker::F64 => float(f64::from_bits(self.uint(8)?))?,
            Marker::FixStr(n) => self.string(usize::from(n))?,
            Marker::Str8 => {
                let n = self.len(1)?;
                self.string(n)?
            }
            Marker::Str16 => {
                let n = self.len(2)?;
                self.string(n)?
            }
            Marker::Str32 => {
                let n = self.len(4)?;
                self.string(n)?
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                return Err(
                    "raw Python bytes have no JSON form; store them as a string or list".into(),
                )
            }
            Marker::FixArray(n) => self.array(usize::from(n), depth)?,
            Marker::Array16 => {
                let n = self.len(2)?;
                self.array(n, depth)?
            }
            Marker::Array32 => {
                let n = self.len(4)?;
                self.array(n, depth)?
            }
            Marker::FixMap(n) => self.map(usize::from(n), depth)?,
            Marker::Map16 => {
                let n = self.len(2)?;
                self.map(n, depth)?
            }
            Marker::Map32 => {
                let n = self.len(4)?;
                self.map(n, depth)?
            }
            Marker::FixExt1 => self.ext(1, depth)?,
            Marker::FixExt2 => self.ext(2, depth)?,
            Marker::FixExt4 => self.ext(4, depth)?,
            Marker::FixExt8 => self.ext(8, depth)?,
            Marker::FixExt16 => self.ext(16, depth)?,
            Marker::Ext8 => {
                let n = self.len(1)?;
                self.ext(n, depth)?
            }
            Marker::Ext16 => {
                let n = self.len(2)?;
                self.ext(n, depth)?
            }
            Marker::Ext32 => {
                let n = self.len(4)?;
                self.ext(n, depth)?
            }
            Marker::Reserved => return Err("invalid msgpack: reserved byte 0xc1".into()),
        })
    }

    /// A map key, as JSON writes it (Python's `json.dumps` turns int, bool and
    /// None keys into strings the same way).
    pub(crate) fn key(&mut self, depth: usize) -> Result<String, DecodeError> {
        match self.value(depth)? {
            Value::String(s) => Ok(s),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Null => Ok("null".to_owned()),
            _ => Err("a map key that is a list or a map has no JSON form".into()),
        }
    }

    fn string(&mut self, n: usize) -> Result<Value, DecodeError> {
        let bytes = self.take(n)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Value::String(s.to_owned())),
            Err(_) => Err("a msgpack string is not valid UTF-8".into()),
        }
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let mut map = Map::new();
        for _ in 0..n {
            let key = self.key(depth + 1)?;
            map.insert(key, self.value(depth + 1)?);
        }
        Ok(Value::Object(map))
    }

    fn ext(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let code = self.byte()? as i8;
        let data = self.take(n)?;
        ext_to_json(code, data, depth + 1)
    }
}

fn float(f: f64) -> Result<Value, DecodeError> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("the float {f} has no JSON form").into())
}

/// A LangGraph extension: `(module, name, payload[, method])`, itself msgpack.
fn ext_to_json(code: i8, data: &[u8], depth: usize) -> Result<Value, DecodeError> {
    match code {
        EXT_CONSTRUCTOR_SINGLE_ARG
        | EXT_CONSTRUCTOR_POS_ARGS
        | EXT_CONSTRUCTOR_KW_ARGS
        | EXT_METHOD_SINGLE_ARG
        | EXT_PYDANTIC_V1
        | EXT_PYDANTIC_V2 => {}
        EXT_NUMPY_ARRAY => {
            return Err("a numpy array (msgpack extension 6) has no JSON form".into())
        }
        EXT_DELTA_SNAPSHOT => {
            return Err(
                "a LangGraph delta-channel snapshot (msgpack extension 7) is not supported".into(),
            )
        }
        _ => return Err(format!("unknown msgpack extension type {code}").into()),
    }
    let not_a_tuple = || -> DecodeError {
        format!("msgpack extension {code} does not hold a (module, name, ...) tuple").into()
    };
    let mut reader = Reader::new(data);
    let parts = reader.value(depth)?;
    reader.finish()?;
    let Value::Array(mut parts) = parts else {
        return Err(not_a_tuple());
    };
    let (Some(Value::String(module)), Some(Value::String(name))) = (parts.first(), parts.get(1))
    else {
        return Err(not_a_tuple());
    };
    match (code, module.as_str(), name.as_str(), parts.len()) {
        // `Interrupt(value, id)`: a dataclass, stored as its keyword arguments.
        (EXT_CONSTRUCTOR_KW_ARGS, "langgraph.types", "Interrupt", 3) => Ok(parts.swap_remove(2)),
        // `Send(node, arg[, timeout])`: stategraph's `{"node", "arg"}` form.
        (EXT_CONSTRUCTOR_POS_ARGS, "langgraph.types", "Send", 3) => {
            let Value::Array(args) = parts.swap_remove(2) else {
                return Err("langgraph.types.Send without its arguments".into());
            };
            let mut args = args.into_iter();
            let (Some(node), Some(arg)) = (args.next(), args.next()) else {
                return Err("langgraph.types.Send without node and arg".into());
            };
            let mut map = Map::new();
            map.insert("node".to_owned(), node);
            map.insert("arg".to_owned(), arg);
            if let Some(timeout) = args.next().filter(|t| !t.is_null()) {
                map.insert("timeout".to_owned(), timeout);
            }
            Ok(Value::Object(map))
        }
        // LangChain messages (`HumanMessage`, `AIMessage`, `ToolMessage`, ...): their
        // `model_dump()`, which carries the `type` tag; the shape stategraph's
        // agents serialise messages in, so threads with chat histories that Python
        // wrote read back as `Vec<Message>`.
        (EXT_PYDANTIC_V2 | EXT_PYDANTIC_V1, m, _, 3 | 4)
            if m.starts_with("langchain_core.messages") =>
        {
            Ok(parts.swap_remove(2))
        }
        _ => Err(format!(
            "the Python type {module}.{name} (msgpack extension {code}) has no JSON form; \
             keep graph state to JSON-like values (or read this thread from Python)"
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmpv::Value as Mp;

    fn pack(value: &Mp) -> Vec<u8> {
        let mut out = Vec::new();
        if let Err(e) = rmpv::encode::write_value(&mut out, value) {
            panic!("encode: {e}");
        }
        out
    }

    fn ext(code: i8, parts: Vec<Mp>) -> Mp {
        Mp::Ext(code, pack(&Mp::Array(parts)))
    }

    #[test]
    fn plain_values_convert_exactly() {
        let value = Mp::Map(vec![
            (Mp::from("s"), Mp::from("héllo")),
            (Mp::from("i"), Mp::from(-3)),
            (Mp::from("u"), Mp::from(u64::MAX)),
            (Mp::from("f"), Mp::F64(1.5)),
            (Mp::from("b"), Mp::from(true)),
            (Mp::from("n"), Mp::Nil),
            (Mp::from("l"), Mp::Array(vec![Mp::from(1), Mp::from("x")])),
            (Mp::from(7), Mp::from("int key")),
        ]);
        let json = msgpack_to_json(&pack(&value)).map_err(|e| e.to_string());
        assert_eq!(
            json,
            Ok(serde_json::json!({
                "s": "héllo", "i": -3, "u": u64::MAX, "f": 1.5, "b": true, "n": null,
                "l": [1, "x"], "7": "int key"
            }))
        );
    }

    #[test]
    fn interrupt_and_send_become_stategraph_forms() {
        let interrupt = ext(
            EXT_CONSTRUCTOR_KW_ARGS,
            vec![
                Mp::from("langgraph.types"),
                Mp::from("Interrupt"),
                Mp::Map(vec![
                    (Mp::from("value"), Mp::from("approve?")),
                    (Mp::from("id"), Mp::from("abc")),
                ]),
            ],
        );
        let send = ext(
            EXT_CONSTRUCTOR_POS_ARGS,
            vec![
                Mp::from("langgraph.types"),
                Mp::from("Send"),
                Mp::Array(vec![Mp::from("worker"), Mp::from(3)]),
            ],
        );
        let json =
            msgpack_to_json(&pack(&Mp::Array(vec![interrupt, send]))).map_err(|e| e.to_string());
        assert_eq!(
            json,
            Ok(serde_json::json!([
                {"value": "approve?", "id": "abc"},
                {"node": "worker", "arg": 3}
            ]))
        );
    }

    #[test]
    fn langchain_messages_become_their_model_dump() {
        let message = ext(
            EXT_PYDANTIC_V2,
            vec![
                Mp::from("langchain_core.messages.ai"),
                Mp::from("AIMessage"),
                Mp::Map(vec![
                    (Mp::from("content"), Mp::from("")),
                    (Mp::from("type"), Mp::from("ai")),
                    (Mp::from("id"), Mp::from("a1")),
                ]),
                Mp::from("model_validate_json"),
            ],
        );
        let json = msgpack_to_json(&pack(&message)).map_err(|e| e.to_string());
        assert_eq!(
            json,
            Ok(serde_json::json!({"content": "", "type": "ai", "id": "a1"}))
        );
    }

    #[test]
    fn other_python_types_are_named_in_the_error() {
        let dt = ext(
            EXT_METHOD_SINGLE_ARG,
            vec![
                Mp::from("datetime"),
                Mp::from("datetime"),
                Mp::from("2024-01-01T00:00:00"),
                Mp::from("fromisoformat"),
            ],
        );
        let err = msgpack_to_json(&pack(&dt)).map_err(|e| e.to_string());
        assert!(
            matches!(&err, Err(m) if m.contains("datetime.datetime")),
            "{err:?}"
        );
        let unknown = Mp::Ext(42, vec![1, 2, 3]);
        let err = msgpack_to_json(&pack(&unknown)).map_err(|e| e.to_string());
        assert!(
            matches!(&err, Err(m) if m.contains("extension type 42")),
            "{err:?}"
        );
        let bin = Mp::Binary(vec![0, 1]);
        assert!(msgpack_to_json(&pack(&bin)).is_err());
        let huge = [0xdd, 0xff, 0xff, 0xff, 0xff];
        assert!(msgpack_to_json(&huge).is_err(), "a length beyond the data");
    }

    #[test]
    fn garbage_and_deep_nesting_are_errors_not_panics() {
        assert!(
            msgpack_to_json(&[0xc1]).is_err(),
            "0xc1 is never valid msgpack"
        );
        assert!(msgpack_to_json(&[0x92, 0x01]).is_err(), "truncated array");
        assert!(msgpack_to_json(&[0x01, 0x02]).is_err(), "trailing bytes");
        let mut deep = Mp::Nil;
        for _ in 0..200 {
            deep = ext(
                EXT_CONSTRUCTOR_KW_ARGS,
                vec![Mp::from("langgraph.types"), Mp::from("Interrupt"), deep],
            );
        }
        assert!(
            msgpack_to_json(&pack(&deep)).is_err(),
            "nesting through extensions"
        );
        assert!(typed_to_json(Some("pickle"), Stored::Bytes(b"x")).is_err());
        assert!(typed_to_json(Some("json"), Stored::Text("{oops")).is_err());
        assert!(typed_to_json(None, Stored::Null).is_err());
        assert_eq!(
            typed_to_json(Some("null"), Stored::Bytes(b"")).map_err(|e| e.to_string()),
            Ok(Value::Null)
        );
    }
}
