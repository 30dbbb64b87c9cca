//! [`OpenAiEmbeddings`]: the [`Embeddings`] of a store's semantic search from
//! any server speaking OpenAI's embeddings API. Feature `openai`.

use super::http::{json_body, transport, truncate};
use crate::error::AgentError;
use futures::future::BoxFuture;
use graph_core::store::{Embedding, EmbeddingError, Embeddings};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A client for an OpenAI-compatible embeddings server (`POST {base}/embeddings`:
/// OpenAI, vLLM, Ollama, llama.cpp's server...), sending the texts in batches.
///
/// Failures are [`EmbeddingError`]s: a request that takes longer than the
/// timeout is [`Timeout`](EmbeddingError::Timeout); an HTTP error, a
/// connection failure or an answer that is not a list of embeddings is
/// [`Failed`](EmbeddingError::Failed) with the [`AgentError`] as its source. A
/// store writes nothing when its embeddings fail.
///
/// ```no_run
/// use graph_agents::model::openai::OpenAiEmbeddings;
/// use graph_core::store::{IndexConfig, InMemoryStore, StoreConfig};
///
/// let embeddings = OpenAiEmbeddings::new("https://api.openai.com/v1", "text-embedding-3-small")
///     .api_key(std::env::var("OPENAI_API_KEY").unwrap_or_default());
/// let index = IndexConfig::new(1536, embeddings);
/// let store = InMemoryStore::with_config(StoreConfig::new().index(index));
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    dimensions: Option<usize>,
    batch_size: usize,
    timeout: Duration,
}

impl OpenAiEmbeddings {
    /// A client for `model` at `base_url` (the part before `/embeddings`, e.g.
    /// `https://api.openai.com/v1`), 512 texts a request, 60 s per request.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        OpenAiEmbeddings {
            client,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            dimensions: None,
            batch_size: 512,
            timeout: Duration::from_secs(60),
        }
    }

    /// Sends `key` as a bearer token.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Asks for vectors of `dimensions` (the `dimensions` parameter of OpenAI's
    /// text-embedding-3 models).
    pub fn dimensions(mut self, dimensions: usize) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Sends at most `size` texts a request (OpenAI accepts up to 2048).
    pub fn batch_size(mut self, size: usize) -> Self {
        self.batch_size = size.max(1);
        self
    }

    /// Fails a request that takes longer than `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Uses `client` (proxies, TLS settings of your own).
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    async fn request(&self, input: &[&str]) -> Result<Vec<Embedding>, EmbeddingError> {
        let body = EmbeddingsRequest {
            dimensions: self.dimensions,
            encoding_format: "float",
            input,
            model: &self.model,
        };
        let failed = |e: AgentError| EmbeddingError::Failed(Box::new(e));
        let body = json_body(&body).map_err(failed)?;
        let mut http = self
            .client
            .post(format!("{}/embeddings", self.base_url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(self.timeout)
            .body(body);
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        let timed_out = |e: &reqwest::Error| e.is_timeout();
        let response = match http.send().await {
            Ok(response) => response,
            Err(e) if timed_out(&e) => {
                return Err(EmbeddingError::Timeout {
                    after: self.timeout,
                })
            }
            Err(e) => return Err(failed(transport(e))),
        };
        let status = response.status();
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) if timed_out(&e) => {
                return Err(EmbeddingError::Timeout {
                    after: self.timeout,
                })
            }
            Err(e) => return Err(failed(transport(e))),
        };
        if !status.is_success() {
            let body = truncate(text, 2000);
            return Err(failed(match status.as_u16() {
                429 => AgentError::RateLimited {
                    retry_after: None,
                    body,
                },
                s @ 500..=599 => AgentError::Server { status: s, body },
                s => AgentError::Rejected { status: s, body },
            }));
        }
        let parsed: EmbeddingsResponse = serde_json::from_str(&text).map_err(|e| {
            failed(AgentError::InvalidResponse(format!(
                "not a list of embeddings ({e}): {}",
                truncate(text.clone(), 500)
            )))
        })?;
        let mut data = parsed.data;
        if data.len() != input.len() {
            return Err(EmbeddingError::WrongCount {
                expected: input.len(),
                got: data.len(),
            });
        }
        data.sort_by_key(|d| d.index);
        if data.iter().enumerate().any(|(i, d)| d.index != i) {
            return Err(failed(AgentError::InvalidResponse(
                "the embeddings' indexes are not 0, 1, 2, ... one per input".into(),
            )));
        }
        Ok(data.into_iter().map(|d| d.embedding.into()).collect())
    }
}

impl Embeddings for OpenAiEmbeddings {
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(self.batch_size) {
                out.extend(self.request(chunk).await?);
            }
            Ok(out)
        })
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
    encoding_format: &'static str,
    input: &'a [&'a str],
    model: &'a str,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingData>,
}

#[derive(Deserialize)]
struct EmbeddingData {
    index: usize,
    embedding: Vec<f32>,
}
