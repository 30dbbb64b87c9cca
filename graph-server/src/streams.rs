//! The limit on open SSE streams per client
//! ([`Server::stream_limit`](crate::Server::stream_limit)).
//!
//! A client is its identity when an [`Authenticator`](crate::Authenticator)
//! names one, else its IP address (when the server was started with
//! [`Server::serve`](crate::Server::serve), which records it). A stream holds
//! a [`StreamPermit`] from before its run is created until the client goes
//! away or the run's events end; a request past the limit is answered 429 and
//! starts no run.

use crate::auth::Caller;
use crate::error::ApiError;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

/// Who a stream is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Client {
    /// An authenticated identity.
    Identity(Arc<str>),
    /// An unauthenticated peer.
    Address(IpAddr),
    /// An unauthenticated caller whose address is not known (a router called
    /// in process): all of them count as one client.
    Unknown,
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Client::Identity(id) => write!(f, "`{id}`"),
            Client::Address(ip) => write!(f, "{ip}"),
            Client::Unknown => f.write_str("this client"),
        }
    }
}

/// The open streams of each client, and how many each may have.
#[derive(Debug)]
pub(crate) struct StreamLimit {
    max: usize,
    open: Mutex<HashMap<Client, usize>>,
}

impl StreamLimit {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(StreamLimit {
            max,
            open: Mutex::default(),
        })
    }

    fn acquire(self: &Arc<Self>, client: Client) -> Result<StreamPermit, ApiError> {
        let mut open = self.open.lock().map_err(|_| ApiError::Internal {
            message: "the stream counts were poisoned".into(),
        })?;
        let count = open.entry(client.clone()).or_insert(0);
        if *count >= self.max {
            return Err(ApiError::TooManyStreams {
                client: client.to_string(),
                limit: self.max,
            });
        }
        *count += 1;
        Ok(StreamPermit(Some((Arc::clone(self), client))))
    }

    fn release(&self, client: &Client) {
        if let Ok(mut open) = self.open.lock()
            && let Some(count) = open.get_mut(client)
        {
            *count -= 1;
            if *count == 0 {
                open.remove(client);
            }
        }
    }
}

/// One open stream of a client, counted until dropped (no count when the
/// server has no limit).
#[derive(Debug)]
pub(crate) struct StreamPermit(Option<(Arc<StreamLimit>, Client)>);

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Some((limit, client)) = self.0.take() {
            limit.release(&client);
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for StreamPermit {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let Some(limit) = parts.extensions.get::<Arc<StreamLimit>>() else {
            return Ok(StreamPermit(None));
        };
        let client = match parts.extensions.get::<Caller>().and_then(|c| c.0.clone()) {
            Some(identity) => Client::Identity(identity),
            None => match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
                Some(ConnectInfo(peer)) => Client::Address(peer.ip()),
                None => Client::Unknown,
            },
        };
        limit.acquire(client)
    }
}
