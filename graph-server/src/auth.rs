//! Who is calling: a pluggable [`Authenticator`], and the ownership of
//! threads.
//!
//! With an authenticator, every request but `GET /ok` is authenticated (a
//! request it refuses is answered 401). A thread belongs to the caller who
//! created it (its `metadata.owner`, as in LangGraph's auth examples), and so
//! do its runs: any other caller is answered 404 for it, as if it did not
//! exist, and never finds it in a search.
//!
//! ```
//! use graph_server::{ApiKeys, Server};
//!
//! let server = Server::new().authenticator(
//!     ApiKeys::new().key("secret-of-alice", "alice").key("secret-of-bob", "bob"),
//! );
//! # let _ = server;
//! ```

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

/// Tells who a request comes from.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller's identity, or `None` to refuse the request (401).
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Option<String>>;
}

/// API keys, each naming an identity: read from `x-api-key: KEY` or
/// `authorization: Bearer KEY`.
#[derive(Clone, Default)]
pub struct ApiKeys {
    keys: HashMap<String, String>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The keys are secrets: only their number is shown.
        f.debug_struct("ApiKeys")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl ApiKeys {
    /// No keys: every request is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `key` as the identity `identity`.
    pub fn key(mut self, key: impl Into<String>, identity: impl Into<String>) -> Self {
        self.keys.insert(key.into(), identity.into());
        self
    }
}

impl Authenticator for ApiKeys {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Option<String>> {
        let key = headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .or_else(|| {
                headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
            });
        let identity = key.and_then(|k| self.keys.get(k.trim()).cloned());
        Box::pin(std::future::ready(identity))
    }
}

/// The authenticated caller of a request (`None` without an authenticator).
#[derive(Debug, Clone, Default)]
pub(crate) struct Caller(pub Option<Arc<str>>);

impl Caller {
    /// Whether the caller may see `thread`.
    pub(crate) fn owns(&self, thread: &Value) -> bool {
        match &self.0 {
            None => true,
            Some(me) => thread["metadata"]["owner"].as_str() == Some(&**me),
        }
    }

    /// `metadata` with the caller as its owner (a body cannot name another).
    pub(crate) fn stamp(&self, metadata: &mut serde_json::Map<String, Value>) {
        if let Some(me) = &self.0 {
            metadata.insert("owner".into(), Value::String(me.to_string()));
        }
    }

    /// Removes `owner` from a metadata patch when callers are authenticated.
    pub(crate) fn guard_patch(&self, metadata: &mut serde_json::Map<String, Value>) {
        if self.0.is_some() {
            metadata.remove("owner");
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_default())
    }
}

/// Authenticates each request but `GET /ok` and the Studio's static files
/// (`/studio`, `/studio/…`): those hold no data, and the page sends the key
/// its user types with every API call it makes.
pub(crate) async fn authenticate(
    State(auth): State<Arc<dyn Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path == "/ok" || path == "/studio" || path.starts_with("/studio/") {
        return next.run(request).await;
    }
    match auth.authenticate(request.headers()).await {
        Some(identity) => {
            request
                .extensions_mut()
                .insert(Caller(Some(identity.into())));
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            axum::Json(serde_json::json!({
                "detail": "Missing or invalid credentials: send an API key as `x-api-key` or `authorization: Bearer <key>`"
            })),
        )
            .into_response(),
    }
}
