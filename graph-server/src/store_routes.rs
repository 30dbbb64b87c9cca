//! The store endpoints (`/store/items`, `/store/items/search`,
//! `/store/namespaces`) over the server's [`Store`].
//!
//! With an authenticator, a caller's namespaces start with its identity: an
//! item under another first label reads as missing (`null`), a write there is 403,
//! a search without a prefix searches the caller's own namespaces, and the
//! namespaces of others are never listed.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::runs::Shared;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use graph_core::store::{
    Filter, Item, ListNamespacesOp, Namespace, NamespacePattern, PutIndex, PutOp, SearchOp,
    StoreError, Ttl,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

type AppState = State<Arc<Shared>>;

fn bad(e: StoreError) -> ApiError {
    ApiError::Unprocessable {
        path: "namespace".into(),
        message: e.to_string(),
    }
}

fn failed(e: StoreError) -> ApiError {
    ApiError::Internal {
        message: format!("the store failed: {e}"),
    }
}

fn timestamp(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

fn item_json(item: &Item) -> Value {
    json!({
        "namespace": item.namespace.labels(),
        "key": item.key,
        "value": item.value,
        "created_at": timestamp(item.created_at),
        "updated_at": timestamp(item.updated_at),
    })
}

fn store(shared: &Shared) -> Result<&Arc<dyn graph_core::store::Store>, ApiError> {
    shared.store.as_ref().ok_or_else(|| ApiError::Internal {
        message: "this server has no store: give it one with `Server::store`".into(),
    })
}

/// Whether the caller may address `labels` (its first label is the caller).
fn allowed(caller: &Caller, labels: &[String]) -> bool {
    match &caller.0 {
        None => true,
        Some(me) => labels.first().map(String::as_str) == Some(&**me),
    }
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct PutBody {
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    #[serde(default)]
    index: Option<Value>,
    /// Minutes.
    #[serde(default)]
    ttl: Option<f64>,
}

pub(crate) async fn put_item(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> Result<StatusCode, ApiError> {
    let body: PutBody =
        serde_json::from_slice(&bytes).map_err(|e| ApiError::BadBody(e.to_string()))?;
    if !allowed(&caller, &body.namespace) {
        return Err(ApiError::Forbidden(
            "a caller writes only under its own namespace (its identity first)".into(),
        ));
    }
    let namespace = Namespace::new(body.namespace).map_err(bad)?;
    let index = match body.index {
        None | Some(Value::Null) => PutIndex::StoreFields,
        Some(Value::Bool(false)) => PutIndex::Off,
        Some(Value::Array(paths)) => {
            PutIndex::fields(paths.iter().filter_map(Value::as_str)).map_err(bad)?
        }
        Some(other) => {
            return Err(ApiError::Unprocessable {
                path: "index".into(),
                message: format!("expected false or a list of field paths, got {other}"),
            })
        }
    };
    let ttl = match body.ttl {
        Some(minutes) if minutes > 0.0 => Ttl::After(Duration::from_secs_f64(minutes * 60.0)),
        _ => Ttl::StoreDefault,
    };
    namespace.check_addressable().map_err(bad)?;
    let op = PutOp::put_object(namespace, body.key, body.value)
        .index(index)
        .ttl(ttl);
    store(&shared)?.put_with(op).await.map_err(failed)?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GetQuery {
    namespace: Option<String>,
    key: String,
}

pub(crate) async fn get_item(
    State(shared): AppState,
    caller: Caller,
    Query(q): Query<GetQuery>,
) -> Result<Json<Value>, ApiError> {
    let namespace = Namespace::from_dotted(q.namespace.as_deref().unwrap_or("")).map_err(bad)?;
    // A missing item is `null` (200), as LangGraph Server answers; so is
    // another caller's.
    if !allowed(&caller, namespace.labels()) {
        return Ok(Json(Value::Null));
    }
    let item = store(&shared)?
        .get(&namespace, &q.key)
        .await
        .map_err(failed)?;
    Ok(Json(item.as_ref().map_or(Value::Null, item_json)))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct DeleteBody {
    #[serde(default)]
    namespace: Vec<String>,
    key: String,
}

pub(crate) async fn delete_item(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> Result<StatusCode, ApiError> {
    let body: DeleteBody =
        serde_json::from_slice(&bytes).map_err(|e| ApiError::BadBody(e.to_string()))?;
    if !allowed(&caller, &body.namespace) {
        return Err(ApiError::Forbidden(
            "a caller deletes only under its own namespace (its identity first)".into(),
        ));
    }
    let namespace = Namespace::new(body.namespace).map_err(bad)?;
    store(&shared)?
        .delete(&namespace, &body.key)
        .await
        .map_err(failed)?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, Default, JsonSchema)]
pub(crate) struct SearchBody {
    #[serde(default)]
    namespace_prefix: Vec<String>,
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    refresh_ttl: Option<bool>,
}

pub(crate) async fn search_items(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let mut body: SearchBody = if bytes.is_empty() {
        SearchBody::default()
    } else {
        serde_json::from_slice(&bytes).map_err(|e| ApiError::BadBody(e.to_string()))?
    };
    if let Some(me) = &caller.0 {
        if body.namespace_prefix.is_empty() {
            body.namespace_prefix.push(me.to_string());
        } else if !allowed(&caller, &body.namespace_prefix) {
            return Ok(Json(json!({"items": []})));
        }
    }
    let mut op = SearchOp::new(Namespace::new(body.namespace_prefix).map_err(bad)?)
        .limit(body.limit.unwrap_or(10))
        .offset(body.offset.unwrap_or(0));
    if let Some(filter) = body.filter.filter(|f| !f.is_null()) {
        op = op.filter(
            Filter::from_json(filter).map_err(|e| ApiError::Unprocessable {
                path: "filter".into(),
                message: e.to_string(),
            })?,
        );
    }
    if let Some(query) = body.query {
        op = op.query(query);
    }
    if let Some(refresh) = body.refresh_ttl {
        op = op.refresh_ttl(refresh);
    }
    let items = store(&shared)?.search(op).await.map_err(failed)?;
    let items: Vec<Value> = items
        .iter()
        .map(|s| {
            let mut v = item_json(&s.item);
            v["score"] = json!(s.score);
            v
        })
        .collect();
    Ok(Json(json!({ "items": items })))
}

#[derive(Deserialize, Default, JsonSchema)]
pub(crate) struct NamespacesBody {
    #[serde(default)]
    prefix: Option<Vec<String>>,
    #[serde(default)]
    suffix: Option<Vec<String>>,
    #[serde(default)]
    max_depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

pub(crate) async fn list_namespaces(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let body: NamespacesBody = if bytes.is_empty() {
        NamespacesBody::default()
    } else {
        serde_json::from_slice(&bytes).map_err(|e| ApiError::BadBody(e.to_string()))?
    };
    let pattern = |labels: Vec<String>| NamespacePattern::new(labels).map_err(bad);
    let mut op = ListNamespacesOp::new()
        .limit(body.limit.unwrap_or(100))
        .offset(body.offset.unwrap_or(0));
    let mut prefix = body.prefix.unwrap_or_default();
    if let Some(me) = &caller.0 {
        if prefix.is_empty() {
            prefix.push(me.to_string());
        } else if !allowed(&caller, &prefix) {
            return Ok(Json(json!({"namespaces": []})));
        }
    }
    if !prefix.is_empty() {
        op = op.prefix(pattern(prefix)?);
    }
    if let Some(suffix) = body.suffix {
        op = op.suffix(pattern(suffix)?);
    }
    if let Some(depth) = body.max_depth {
        op = op.max_depth(depth);
    }
    let namespaces = store(&shared)?.list_namespaces(op).await.map_err(failed)?;
    let namespaces: Vec<&[String]> = namespaces.iter().map(Namespace::labels).collect();
    Ok(Json(json!({ "namespaces": namespaces })))
}
