//! What the HTTP model clients share: a JSON request sent and its status
//! turned into a typed error, transport failures in words that say what to do,
//! bodies cut to a size fit for an error message, `Retry-After`.

use crate::error::AgentError;
use std::time::Duration;

/// `body` as the JSON bytes of a request.
pub(crate) fn json_body(body: &impl serde::Serialize) -> Result<Vec<u8>, AgentError> {
    // The request types hold strings, numbers and JSON values only: this does
    // not fail.
    serde_json::to_vec(body)
        .map_err(|e| AgentError::Model(format!("the request could not be written as JSON: {e}")))
}

/// Sends `request`: the response when its status is a success, else the typed
/// error of its status, with the body (cut to 2000 bytes): 429 is
/// [`RateLimited`](AgentError::RateLimited) (with its `Retry-After`), 5xx
/// [`Server`](AgentError::Server), any other [`Rejected`](AgentError::Rejected).
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, AgentError> {
    let response = request.send().await.map_err(transport)?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = truncate(response.text().await.unwrap_or_default(), 2000);
    Err(match status.as_u16() {
        429 => AgentError::RateLimited { retry_after, body },
        s @ 500..=599 => AgentError::Server { status: s, body },
        s => AgentError::Rejected { status: s, body },
    })
}

/// A failure of the HTTP client, said in words that tell what to do; the
/// client's error stays whole as the source.
pub(crate) fn transport(e: reqwest::Error) -> AgentError {
    let at = e.url().map(|url| format!(" at {url}")).unwrap_or_default();
    let context = if e.is_timeout() {
        format!(
            "the model server{at} did not answer in time: check that it is up and not \
             overloaded, or allow more time with a client of your own (`with_client`)"
        )
    } else if e.is_connect() {
        format!(
            "could not connect to the model server{at}: check the base URL and that the \
             server is running"
        )
    } else if e.is_builder() {
        format!("could not build the request to the model server{at}: check the base URL")
    } else if e.is_body() || e.is_decode() {
        format!("the connection to the model server{at} failed while its reply was read: try again")
    } else {
        format!(
            "the request to the model server{at} failed: check the base URL and that the \
             server is running"
        )
    };
    AgentError::Transport {
        context,
        source: Box::new(e),
    }
}

pub(crate) fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let cut = (0..=max)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        s.truncate(cut);
        s.push('…');
    }
    s
}

/// A response's `Retry-After` in seconds, when it has one.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}
