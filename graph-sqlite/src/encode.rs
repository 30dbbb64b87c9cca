//! Writing the two LangGraph objects a paused or failed step stores among its
//! pending writes — [`Interrupt`]s (channel `__interrupt__`) and [`Send`]s (channel
//! `__pregel_tasks`) — in the msgpack form LangGraph's `JsonPlusSerializer`
//! gives them, so that Python's Pregel loop finds objects it can resume from
//! (it reads `interrupt.id`), not the plain JSON maps stategraph uses.
//!
//! Everything else is stored as JSON (`"json"`), which Python reads as is. The
//! reader ([`crate::decode`]) turns these objects back into stategraph's JSON forms.
//!
//! [`Interrupt`]: https://langchain-ai.github.io/langgraph/reference/types/#langgraph.types.Interrupt
//! [`Send`]: https://langchain-ai.github.io/langgraph/reference/types/#langgraph.types.Send

use crate::decode::{DecodeError, EXT_CONSTRUCTOR_KW_ARGS, EXT_CONSTRUCTOR_POS_ARGS};
use rmpv::Value as Mp;
use serde_json::Value;

use graph_core::checkpoint::{INTERRUPT_CHANNEL as INTERRUPT, TASKS_CHANNEL as TASKS};

/// The msgpack form Python expects for a pending write to `channel`, or `None`
/// when the write is stored as JSON.
pub(crate) fn python_object_write(
    channel: &str,
    json: &str,
) -> Result<Option<Vec<u8>>, DecodeError> {
    let value = match channel {
        INTERRUPT => interrupts(serde_json::from_str(json)?)?,
        TASKS => send(serde_json::from_str(json)?)?,
        _ => return Ok(None),
    };
    Ok(Some(pack(&value)?))
}

/// `[{value, id}, ...]` → a list of `langgraph.types.Interrupt(value=, id=)`,
/// keyword arguments in the dataclass's field order. Other fields Python gave an
/// interrupt (`response_schema`) are written back as they were read; absent, they
/// take their Python defaults, and the reader gives back exactly what was written.
fn interrupts(value: Value) -> Result<Mp, DecodeError> {
    let Value::Array(items) = value else {
        return Err("an `__interrupt__` write is not a list of interrupts".into());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(mut fields) = item else {
            return Err("an interrupt is not a `{value, id}` object".into());
        };
        let (Some(value), Some(Value::String(id))) = (fields.remove("value"), fields.remove("id"))
        else {
            return Err("an interrupt lacks its `value` or its string `id`".into());
        };
        let mut kwargs = vec![
            (Mp::from("value"), to_msgpack(value)),
            (Mp::from("id"), Mp::from(id)),
        ];
        kwargs.extend(
            fields
                .into_iter()
                .map(|(name, v)| (Mp::from(name), to_msgpack(v))),
        );
        let kwargs = Mp::Map(kwargs);
        out.push(object(EXT_CONSTRUCTOR_KW_ARGS, "Interrupt", kwargs)?);
    }
    Ok(Mp::Array(out))
}

/// `{node, arg[, timeout]}` → `langgraph.types.Send(node, arg[, timeout])`.
fn send(value: Value) -> Result<Mp, DecodeError> {
    let Value::Object(mut fields) = value else {
        return Err("a `__pregel_tasks` write is not a `{node, arg}` object".into());
    };
    let (Some(Value::String(node)), Some(arg)) = (fields.remove("node"), fields.remove("arg"))
    else {
        return Err("a Send lacks its string `node` or its `arg`".into());
    };
    let mut args = vec![Mp::from(node), to_msgpack(arg)];
    if let Some(timeout) = fields.remove("timeout").filter(|t| !t.is_null()) {
        args.push(to_msgpack(timeout));
    }
    object(EXT_CONSTRUCTOR_POS_ARGS, "Send", Mp::Array(args))
}

/// A `langgraph.types` object: the extension `code` around `(module, name, args)`.
fn object(code: i8, name: &str, args: Mp) -> Result<Mp, DecodeError> {
    let parts = Mp::Array(vec![Mp::from("langgraph.types"), Mp::from(name), args]);
    Ok(Mp::Ext(code, pack(&parts)?))
}

fn pack(value: &Mp) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value)?;
    Ok(out)
}

/// JSON as msgpack, as Python's `ormsgpack` packs the same data: integers as
/// integers, other numbers as 64-bit floats, objects as maps with string keys.
fn to_msgpack(value: Value) -> Mp {
    match value {
        Value::Null => Mp::Nil,
        Value::Bool(b) => Mp::Boolean(b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Mp::from(i),
            (None, Some(u), _) => Mp::from(u),
            (None, None, Some(f)) => Mp::F64(f),
            // serde_json numbers are always one of the three.
            (None, None, None) => Mp::Nil,
        },
        Value::String(s) => Mp::from(s),
        Value::Array(items) => Mp::Array(items.into_iter().map(to_msgpack).collect()),
        Value::Object(fields) => Mp::Map(
            fields
                .into_iter()
                .map(|(k, v)| (Mp::from(k), to_msgpack(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::msgpack_to_json;
    use serde_json::json;

    fn round_trip(channel: &str, value: Value) -> Value {
        let bytes = python_object_write(channel, &value.to_string())
            .map_err(|e| e.to_string())
            .and_then(|b| b.ok_or_else(|| "stored as JSON".to_owned()));
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => panic!("{channel}: {e}"),
        };
        match msgpack_to_json(&bytes) {
            Ok(v) => v,
            Err(e) => panic!("{channel}: {e}"),
        }
    }

    #[test]
    fn interrupts_are_the_bytes_python_writes() {
        // `JsonPlusSerializer().dumps_typed([Interrupt(value={"q": "approve?"}, id="abc")])`
        // with langgraph 1.2.22.
        let python: &[u8] = b"\x91\xc7F\x02\x93\xaflanggraph.types\xa9Interrupt\x83\xa5value\
            \x81\xa1q\xa8approve?\xa2id\xa3abc\xafresponse_schema\xc0";
        let ours = python_object_write(
            INTERRUPT,
            r#"[{"value": {"q": "approve?"}, "id": "abc", "response_schema": null}]"#,
        );
        assert_eq!(ours.map_err(|e| e.to_string()), Ok(Some(python.to_vec())));
    }

    #[test]
    fn sends_are_the_bytes_python_writes() {
        // `JsonPlusSerializer().dumps_typed(Send("worker", {"x": 1}))`.
        let python: &[u8] = b"\xc7\"\x01\x93\xaflanggraph.types\xa4Send\x92\xa6worker\x81\xa1x\x01";
        let ours = python_object_write(TASKS, r#"{"node": "worker", "arg": {"x": 1}}"#);
        assert_eq!(ours.map_err(|e| e.to_string()), Ok(Some(python.to_vec())));
    }

    #[test]
    fn the_reader_gives_back_stategraphs_forms() {
        let interrupts = json!([
            {"value": {"n": -1, "big": u64::MAX, "f": 0.5, "l": [true, null]}, "id": "a"},
            {"value": "second", "id": "b"}
        ]);
        let back = round_trip(INTERRUPT, interrupts);
        assert_eq!(
            back,
            json!([
                {"value": {"n": -1, "big": u64::MAX, "f": 0.5, "l": [true, null]}, "id": "a"},
                {"value": "second", "id": "b"}
            ])
        );
        let send = json!({"node": "w", "arg": [1, 2], "timeout": 1.5});
        assert_eq!(round_trip(TASKS, send.clone()), send);
    }

    #[test]
    fn other_channels_stay_json_and_bad_shapes_are_errors() {
        assert!(matches!(python_object_write("messages", "[1]"), Ok(None)));
        for (channel, bad) in [
            (INTERRUPT, r#"{"value": 1, "id": "a"}"#),
            (INTERRUPT, r#"[{"value": 1}]"#),
            (INTERRUPT, r#"[{"value": 1, "id": 7}]"#),
            (TASKS, r#"["w", 1]"#),
            (TASKS, r#"{"arg": 1}"#),
            (TASKS, "not json"),
        ] {
            assert!(
                python_object_write(channel, bad).is_err(),
                "{channel}: {bad} was accepted"
            );
        }
    }
}
