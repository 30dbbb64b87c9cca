use super::{AiMessageChunk, ChatModel, ChatRequest, ToolCallChunk};
use crate::error::AgentError;
use crate::message::AiMessage;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A scripted chat model for tests, examples and benchmarks.
///
/// Each call returns the next scripted reply (shared, not copied); after the last one it
/// starts again from the first. It ignores what it is asked, but records how many
/// messages each call received. Streaming splits the text and each tool call's
/// arguments into pieces of [`chunk_chars`](FakeChatModel::chunk_chars)
/// characters.
///
/// ```
/// use graph_agents::model::{ChatModel, ChatRequest, FakeChatModel};
/// use graph_agents::{AiMessage, Message};
///
/// let model = FakeChatModel::new(vec![AiMessage::new("one"), AiMessage::new("two")]);
/// let history = [Message::human("hi")];
/// # futures::executor::block_on(async {
/// assert_eq!(model.generate(ChatRequest::new(&history)).await?.content, "one");
/// assert_eq!(model.generate(ChatRequest::new(&history)).await?.content, "two");
/// assert_eq!(model.generate(ChatRequest::new(&history)).await?.content, "one");
/// assert_eq!(model.calls(), 3);
/// # Ok::<(), graph_agents::AgentError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FakeChatModel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    responses: Vec<Arc<AiMessage>>,
    cursor: AtomicUsize,
    calls: AtomicUsize,
    last_len: AtomicUsize,
    failures: AtomicUsize,
    chunk_chars: usize,
}

impl FakeChatModel {
    /// A model replying with `responses`, in order, round and round.
    pub fn new(responses: Vec<AiMessage>) -> Self {
        FakeChatModel {
            inner: Arc::new(Inner {
                responses: responses.into_iter().map(Arc::new).collect(),
                cursor: AtomicUsize::new(0),
                calls: AtomicUsize::new(0),
                last_len: AtomicUsize::new(0),
                failures: AtomicUsize::new(0),
                chunk_chars: 4,
            }),
        }
    }

    fn with_inner(self, f: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            responses: shared.responses.clone(),
            cursor: AtomicUsize::new(shared.cursor.load(Ordering::Relaxed)),
            calls: AtomicUsize::new(shared.calls.load(Ordering::Relaxed)),
            last_len: AtomicUsize::new(shared.last_len.load(Ordering::Relaxed)),
            failures: AtomicUsize::new(shared.failures.load(Ordering::Relaxed)),
            chunk_chars: shared.chunk_chars,
        });
        f(&mut inner);
        FakeChatModel {
            inner: Arc::new(inner),
        }
    }

    /// Streams text and arguments in pieces of `n` characters (default 4).
    pub fn chunk_chars(self, n: usize) -> Self {
        self.with_inner(|i| i.chunk_chars = n.max(1))
    }

    /// The next `n` calls fail with a retryable server error (HTTP 503) before the
    /// script goes on; for testing retry policies.
    pub fn fail_next(self, n: usize) -> Self {
        self.with_inner(|i| i.failures = AtomicUsize::new(n))
    }

    /// How many calls were made (failed ones included).
    pub fn calls(&self) -> usize {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// The index of the reply the next call returns.
    pub fn cursor(&self) -> usize {
        self.inner.cursor.load(Ordering::Relaxed)
    }

    /// How many messages the last call received.
    pub fn last_history_len(&self) -> usize {
        self.inner.last_len.load(Ordering::Relaxed)
    }

    fn next(&self, request: &ChatRequest<'_>) -> Result<Arc<AiMessage>, AgentError> {
        let i = &self.inner;
        i.calls.fetch_add(1, Ordering::Relaxed);
        i.last_len.store(request.messages.len(), Ordering::Relaxed);
        let failing = i
            .failures
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(AgentError::Server {
                status: 503,
                body: "scripted failure".to_owned(),
            });
        }
        if i.responses.is_empty() {
            return Err(AgentError::Model(
                "FakeChatModel has no scripted responses".to_owned(),
            ));
        }
        let n = i.responses.len();
        let at = i
            .cursor
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| Some((c + 1) % n))
            .unwrap_or(0);
        Ok(Arc::clone(&i.responses[at % n]))
    }
}

/// Splits `text` into pieces of at most `n` characters.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

impl ChatModel for FakeChatModel {
    fn generate<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<Arc<AiMessage>, AgentError>> {
        Box::pin(std::future::ready(self.next(&request)))
    }

    fn stream<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxStream<'a, Result<AiMessageChunk, AgentError>> {
        let reply = match self.next(&request) {
            Ok(reply) => reply,
            Err(e) => return futures::stream::once(std::future::ready(Err(e))).boxed(),
        };
        let n = self.inner.chunk_chars;
        let mut chunks: Vec<AiMessageChunk> = pieces(&reply.content, n)
            .into_iter()
            .map(|content| AiMessageChunk {
                content,
                id: reply.id.clone(),
                ..Default::default()
            })
            .collect();
        for (index, call) in reply.tool_calls.iter().enumerate() {
            for (k, args) in pieces(&call.args.to_string(), n).into_iter().enumerate() {
                let first = k == 0;
                chunks.push(AiMessageChunk {
                    id: reply.id.clone(),
                    tool_call_chunks: vec![ToolCallChunk {
                        index,
                        id: first.then(|| call.id.clone()),
                        name: first.then(|| call.name.clone()),
                        args,
                    }],
                    ..Default::default()
                });
            }
        }
        if chunks.is_empty() {
            chunks.push(AiMessageChunk {
                id: reply.id.clone(),
                ..Default::default()
            });
        }
        if let Some(last) = chunks.last_mut() {
            last.usage_metadata = reply.usage_metadata;
        }
        futures::stream::iter(chunks.into_iter().map(Ok)).boxed()
    }
}
