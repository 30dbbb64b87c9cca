//! Semantic search: the [`Embeddings`] a store embeds texts with, the
//! [`IndexConfig`] saying which fields and how many dimensions, cosine
//! similarity, and [`HashEmbeddings`], a deterministic offline embedder.

use super::error::StoreError;
use super::fields::{FieldPath, Texts};
use super::op::PutIndex;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::sync::Arc;
use std::time::Duration;

/// An embedding model: texts in, one vector per text out (async, batched).
///
/// Implement it for a model of your own; `stategraph::agents::openai` has a
/// client for OpenAI-compatible servers, and [`HashEmbeddings`] is an offline
/// stand-in for tests and examples. The texts are borrowed (a store passes
/// the strings of the value it writes, not copies).
///
/// A model that answers without waiting (a table, a function of the text)
/// also implements [`embed_documents_sync`](Self::embed_documents_sync), as
/// LangGraph's `Embeddings` has both `embed_documents` and
/// `aembed_documents`: a store then calls it and skips the boxed future.
pub trait Embeddings: Send + Sync + 'static {
    /// One vector per text, in order.
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>>;

    /// The vectors of `texts` computed without waiting, for a model that
    /// answers at once (a table lookup, [`HashEmbeddings`]); `None`, the
    /// default, for a model that must be awaited. A store asks this first and
    /// awaits [`embed_documents`](Self::embed_documents) only on `None`. An
    /// implementation returns what `embed_documents` would. An answer given
    /// here is not subject to [`IndexConfig::timeout`] (a blocking call
    /// cannot be cut short), and a store may ask it while it holds its write
    /// lock: the SQLite store asks it on its connection's thread inside the
    /// put's transaction (as LangGraph's SQLite store embeds inside its
    /// transaction), the in-memory store under its write lock, so that a put
    /// is one step. A model that may take long, or wait on a server, leaves
    /// the default; one answering here must not use the store it embeds for.
    fn embed_documents_sync(
        &self,
        texts: &[&str],
    ) -> Option<Result<Vec<Embedding>, EmbeddingError>> {
        let _ = texts;
        None
    }

    /// The vector of one text computed without waiting: what
    /// [`embed_documents_sync`](Self::embed_documents_sync) answers for
    /// `[text]`, which is the default. A store asks this when a put has one
    /// text to embed (most puts); a model answering at once implements it
    /// too, to hand over its vector without a list around it.
    fn embed_document_sync(&self, text: &str) -> Option<Result<Embedding, EmbeddingError>> {
        Some(self.embed_documents_sync(&[text])?.and_then(only_vector))
    }

    /// The vector of a search query (by default, `embed_document_sync` of
    /// it, else `embed_documents` of it).
    fn embed_query<'a>(
        &'a self,
        text: &'a str,
    ) -> BoxFuture<'a, Result<Embedding, EmbeddingError>> {
        Box::pin(async move {
            match self.embed_document_sync(text) {
                Some(answer) => answer,
                None => only_vector(self.embed_documents(&[text]).await?),
            }
        })
    }
}

/// The one vector of an answer for one text.
fn only_vector(mut vectors: Vec<Embedding>) -> Result<Embedding, EmbeddingError> {
    match vectors.len() {
        1 => Ok(vectors.swap_remove(0)),
        got => Err(EmbeddingError::WrongCount { expected: 1, got }),
    }
}

/// One text's vector, as an embedding model hands it to a store: shared, so
/// that a model which keeps its vectors (a table, a cache in front of a
/// server) gives them without a copy, and a store keeps what it was given, as
/// LangGraph's stores keep the lists the model returned. A store also shares
/// one vector among repeated texts and keeps it, without a copy, when a put
/// leaves its text unchanged. Make one from a `Vec<f32>` with `.into()`.
pub type Embedding = Arc<[f32]>;

/// Why texts could not be embedded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbeddingError {
    /// The model (or the server running it) failed.
    #[error("the embedding model failed: {0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The model did not answer in time.
    #[error(
        "the embedding model did not answer within {after:?}; check the server, or raise the \
         timeout (IndexConfig::timeout)"
    )]
    Timeout {
        /// The time allowed.
        after: Duration,
    },
    /// The model returned another number of vectors than texts.
    #[error("the embedding model returned {got} vectors for {expected} texts")]
    WrongCount {
        /// How many texts were sent.
        expected: usize,
        /// How many vectors came back.
        got: usize,
    },
    /// A vector has another size than the index's `dims`.
    #[error(
        "the embedding model returned a vector of {got} dimensions, the index expects {expected}; \
         set IndexConfig's dims to the model's output size"
    )]
    WrongDimensions {
        /// The index's `dims`.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
}

/// Semantic search configuration of a store (LangGraph's `IndexConfig`): the
/// vectors' size, the model, the fields embedded by default.
///
/// ```
/// use graph_core::store::{HashEmbeddings, IndexConfig};
///
/// let index = IndexConfig::new(64, HashEmbeddings::new(64)).fields(["text", "tags[*]"])?;
/// assert_eq!(index.dims(), 64);
/// assert_eq!(index.field_paths().len(), 2);
/// # Ok::<(), graph_core::store::StoreError>(())
/// ```
#[derive(Clone)]
pub struct IndexConfig {
    dims: usize,
    embeddings: Arc<dyn Embeddings>,
    fields: Vec<FieldPath>,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &self.fields)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl IndexConfig {
    /// Vectors of `dims` dimensions from `embeddings`, of the whole value (`$`)
    /// unless [`fields`](Self::fields) says otherwise.
    pub fn new(dims: usize, embeddings: impl Embeddings) -> Self {
        Self::shared(dims, Arc::new(embeddings))
    }

    /// As [`new`](Self::new), with a model shared with other code.
    pub fn shared(dims: usize, embeddings: Arc<dyn Embeddings>) -> Self {
        IndexConfig {
            dims,
            embeddings,
            fields: vec![FieldPath::root()],
            timeout: None,
        }
    }

    /// The paths embedded by default (see [`FieldPath`] for the syntax).
    pub fn fields<I, S>(mut self, fields: I) -> Result<Self, StoreError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.fields = fields
            .into_iter()
            .map(|f| FieldPath::parse(f.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// Fails a call to the model that takes longer than `timeout`
    /// ([`EmbeddingError::Timeout`]; nothing is written). Needs a tokio
    /// runtime with its timer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The vectors' size.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The model.
    pub fn embeddings(&self) -> &Arc<dyn Embeddings> {
        &self.embeddings
    }

    /// The paths embedded by default.
    pub fn field_paths(&self) -> &[FieldPath] {
        &self.fields
    }

    /// The texts of `value` to embed under `index`, each with its vector's
    /// field name (LangGraph's: the path, or `path.i` when a path yields
    /// several texts).
    pub fn texts_to_embed(&self, value: &Map<String, Value>, index: &PutIndex) -> Vec<IndexedText> {
        match index {
            PutIndex::Off => Vec::new(),
            PutIndex::StoreFields => indexed_texts(value, &self.fields),
            PutIndex::Fields(paths) => indexed_texts(value, paths),
        }
    }

    /// Appends the texts of `value` to embed under `index` to `texts`, and
    /// calls `field` with each one's vector name, in the same order: what
    /// [`texts_to_embed`](Self::texts_to_embed) lists, without its
    /// allocations (a path yielding one text names its vector with the path's
    /// shared name).
    pub(crate) fn push_texts<'v>(
        &self,
        value: &'v Map<String, Value>,
        index: &PutIndex,
        texts: &mut Texts<'v>,
        mut field: impl FnMut(Arc<str>),
    ) {
        let paths = match index {
            PutIndex::Off => return,
            PutIndex::StoreFields => &self.fields[..],
            PutIndex::Fields(paths) => &paths[..],
        };
        for path in paths {
            let start = texts.len();
            path.texts_into(value, texts);
            match texts.len() - start {
                0 => {}
                1 => field(Arc::clone(path.name())),
                several => {
                    for i in 0..several {
                        field(Arc::from(format!("{}.{i}", path.as_str())));
                    }
                }
            }
        }
    }

    /// Embeds `texts` in one call (each distinct text once), checking the
    /// number and size of the vectors and the timeout.
    pub async fn embed_documents<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
    ) -> Result<Vec<Embedding>, StoreError> {
        let batch = Distinct::of(texts);
        if batch.unique.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = self.call_documents(&batch.unique).await?;
        let vectors = self.checked(vectors, batch.unique.len())?;
        Ok(batch.spread(vectors))
    }

    /// [`embed_documents`](Self::embed_documents) without awaiting: the
    /// model's answer from [`Embeddings::embed_documents_sync`] (each
    /// distinct text once, the vectors checked as there), or `None` when the
    /// model must be awaited. No texts: `Some(Ok([]))`, without asking the
    /// model. For a store that embeds where it cannot await (inside a
    /// database transaction on a thread of its own).
    pub fn embed_documents_sync<S: AsRef<str>>(
        &self,
        texts: &[S],
    ) -> Option<Result<Vec<Embedding>, StoreError>> {
        let batch = Distinct::of(texts);
        if batch.unique.is_empty() {
            return Some(Ok(Vec::new()));
        }
        let answer = self.embeddings.embed_documents_sync(&batch.unique)?;
        Some(
            answer
                .map_err(StoreError::Embedding)
                .and_then(|vectors| self.checked(vectors, batch.unique.len()))
                .map(|vectors| batch.spread(vectors)),
        )
    }

    /// [`embed_documents_sync`](Self::embed_documents_sync) of one text,
    /// through [`Embeddings::embed_document_sync`]: the model's vector,
    /// checked, or `None` when the model must be awaited.
    pub fn embed_document_sync(&self, text: &str) -> Option<Result<Embedding, StoreError>> {
        let answer = self.embeddings.embed_document_sync(text)?;
        Some(
            answer
                .map_err(StoreError::Embedding)
                .and_then(|vector| self.check_dims(&vector).map(|()| vector)),
        )
    }

    /// `vectors` if there are `expected` of them, each of `dims` dimensions.
    fn checked(
        &self,
        vectors: Vec<Embedding>,
        expected: usize,
    ) -> Result<Vec<Embedding>, StoreError> {
        if vectors.len() != expected {
            return Err(StoreError::Embedding(EmbeddingError::WrongCount {
                expected,
                got: vectors.len(),
            }));
        }
        for v in &vectors {
            self.check_dims(v)?;
        }
        Ok(vectors)
    }

    /// Embeds a search query, checking its size and the timeout.
    pub async fn embed_query(&self, query: &str) -> Result<Embedding, StoreError> {
        let vector = self.call(self.embeddings.embed_query(query)).await?;
        self.check_dims(&vector)?;
        Ok(vector)
    }

    fn check_dims(&self, vector: &[f32]) -> Result<(), StoreError> {
        if vector.len() != self.dims {
            return Err(StoreError::Embedding(EmbeddingError::WrongDimensions {
                expected: self.dims,
                got: vector.len(),
            }));
        }
        Ok(())
    }

    /// The model's vectors of `texts`: its synchronous answer when it has
    /// one, else its future, awaited within the timeout.
    async fn call_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, StoreError> {
        match self.embeddings.embed_documents_sync(texts) {
            Some(answer) => answer.map_err(StoreError::Embedding),
            None => self.call(self.embeddings.embed_documents(texts)).await,
        }
    }

    async fn call<T>(
        &self,
        call: BoxFuture<'_, Result<T, EmbeddingError>>,
    ) -> Result<T, StoreError> {
        let result = match self.timeout {
            None => call.await,
            Some(after) => match tokio::time::timeout(after, call).await {
                Ok(result) => result,
                Err(_) => Err(EmbeddingError::Timeout { after }),
            },
        };
        result.map_err(StoreError::Embedding)
    }
}

/// The distinct texts of a call to the model, and where each text's vector
/// is among theirs.
struct Distinct<'t> {
    /// Each text once, in order of first appearance.
    unique: SmallVec<[&'t str; 4]>,
    /// For each text, its position in `unique`; `None` when no text repeats
    /// (most calls: a put of one item), so that the vectors are the answer.
    slots: Option<Vec<usize>>,
}

impl<'t> Distinct<'t> {
    fn of<S: AsRef<str>>(texts: &'t [S]) -> Self {
        // Most puts embed one text.
        if let [text] = texts {
            let mut unique = SmallVec::new();
            unique.push(text.as_ref());
            return Distinct {
                unique,
                slots: None,
            };
        }
        // A put's few texts are passed without an allocation.
        let texts: SmallVec<[&str; 4]> = texts.iter().map(AsRef::as_ref).collect();
        let repeated = if texts.len() <= 16 {
            texts
                .iter()
                .enumerate()
                .any(|(i, t)| texts[..i].contains(t))
        } else {
            let mut seen = hashbrown::HashSet::with_capacity(texts.len());
            !texts.iter().all(|t| seen.insert(*t))
        };
        if !repeated {
            return Distinct {
                unique: texts,
                slots: None,
            };
        }
        let mut unique: SmallVec<[&str; 4]> = SmallVec::with_capacity(texts.len());
        let mut position = hashbrown::HashMap::with_capacity(texts.len());
        let slots = texts
            .iter()
            .map(|&t| {
                *position.entry(t).or_insert_with(|| {
                    unique.push(t);
                    unique.len() - 1
                })
            })
            .collect();
        Distinct {
            unique,
            slots: Some(slots),
        }
    }

    /// One vector per text, from one per distinct text.
    fn spread(self, vectors: Vec<Embedding>) -> Vec<Embedding> {
        match self.slots {
            None => vectors,
            Some(slots) => slots.into_iter().map(|i| Arc::clone(&vectors[i])).collect(),
        }
    }
}

/// What becomes of one text of a put ([`IndexConfig::keep_or_embed`]).
#[derive(Debug, PartialEq)]
pub enum TextPlan<'v, V> {
    /// The item the put replaces has this text under this field: its stored
    /// vector is kept.
    Keep {
        /// The vector's field name.
        field: String,
        /// The stored vector.
        vector: &'v V,
    },
    /// A new or changed text: it is embedded.
    Embed(IndexedText),
}

impl IndexConfig {
    /// Splits `texts`, a put's texts ([`texts_to_embed`](Self::texts_to_embed)
    /// of its value and `index`), into those whose vector the item it
    /// replaces already has — the same text under the same field, whose
    /// stored vector is kept — and those to embed: an update re-embeds only
    /// what changed. `stored` is the replaced item's value and how to find
    /// its vector of a field (in whatever form the backend keeps vectors).
    pub fn keep_or_embed<'v, V>(
        &self,
        texts: Vec<IndexedText>,
        index: &PutIndex,
        stored: Option<(&Map<String, Value>, impl Fn(&str) -> Option<&'v V>)>,
    ) -> Vec<TextPlan<'v, V>> {
        let Some((old_value, vector_of)) = stored else {
            return texts.into_iter().map(TextPlan::Embed).collect();
        };
        let old_texts = self.texts_to_embed(old_value, index);
        texts
            .into_iter()
            .map(|text| {
                let unchanged = old_texts.contains(&text);
                match unchanged.then(|| vector_of(&text.field)).flatten() {
                    Some(vector) => TextPlan::Keep {
                        field: text.field,
                        vector,
                    },
                    None => TextPlan::Embed(text),
                }
            })
            .collect()
    }
}

/// One text of an item to embed, and the field name its vector is stored under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedText {
    /// The vector's field name (`text`, `messages[*].content.1`, `$`).
    pub field: String,
    /// The text.
    pub text: String,
}

/// The texts at `paths` in `value`, named as LangGraph names their vectors.
pub fn indexed_texts(value: &Map<String, Value>, paths: &[FieldPath]) -> Vec<IndexedText> {
    let mut out = Vec::new();
    for path in paths {
        let texts = path.texts(value);
        let several = texts.len() > 1;
        for (i, text) in texts.into_iter().enumerate() {
            let field = if several {
                format!("{}.{i}", path.as_str())
            } else {
                path.as_str().to_owned()
            };
            out.push(IndexedText { field, text });
        }
    }
    out
}

/// The cosine similarity of two vectors (0 when either is all zeros), as
/// LangGraph scores semantic search.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// A deterministic, offline embedder for tests and examples. **Not a language
/// model**: it hashes each lower-cased word (runs of letters and digits) into
/// one of `dims` buckets with a sign (the "hashing trick") and normalises the
/// sum, so two texts are similar exactly when they share words, weighted by
/// how often. It knows no synonyms ("vegetarian" and "meat" are unrelated),
/// and with few dimensions two unrelated words may share a bucket (a few
/// hundred dimensions make that rare). Exactly: each word's xxh3-64 hash `h`
/// (of its lower-cased UTF-8 bytes) adds `+1` (top bit clear) or `-1` (top
/// bit set) to bucket `h % dims`; the sum is divided by its length.
///
/// ```
/// use graph_core::store::{cosine_similarity, Embeddings, HashEmbeddings};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), graph_core::store::EmbeddingError> {
/// let e = HashEmbeddings::new(64);
/// let v = e.embed_documents(&["I am vegetarian", "cold rainy day"]).await?;
/// let q = e.embed_query("vegetarian restaurant").await?;
/// assert!(cosine_similarity(&q, &v[0]) > cosine_similarity(&q, &v[1]));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashEmbeddings {
    dims: usize,
}

impl HashEmbeddings {
    /// An embedder of `dims`-dimensional vectors (at least 1).
    pub fn new(dims: usize) -> Self {
        HashEmbeddings { dims: dims.max(1) }
    }

    /// The vector of one text.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = xxhash_rust::xxh3::xxh3_64(word.to_lowercase().as_bytes());
            let bucket = (h % self.dims as u64) as usize;
            v[bucket] += if h >> 63 == 0 { 1.0 } else { -1.0 };
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Embeddings for HashEmbeddings {
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
        Box::pin(async move { Ok(texts.iter().map(|t| self.embed(t).into()).collect()) })
    }

    /// Computed at once: a store skips the boxed future.
    fn embed_documents_sync(
        &self,
        texts: &[&str],
    ) -> Option<Result<Vec<Embedding>, EmbeddingError>> {
        Some(Ok(texts.iter().map(|t| self.embed(t).into()).collect()))
    }

    fn embed_document_sync(&self, text: &str) -> Option<Result<Embedding, EmbeddingError>> {
        Some(Ok(self.embed(text).into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers at once (or, when `awaited`, only when awaited) with `[len]`
    /// per text, recording each call's texts; `extra` vectors more than asked.
    #[derive(Default)]
    struct Lengths {
        awaited: bool,
        extra: usize,
        calls: Mutex<Vec<Vec<String>>>,
    }

    impl Lengths {
        fn answer(&self, texts: &[&str]) -> Vec<Embedding> {
            let calls = texts.iter().map(|t| (*t).to_owned()).collect();
            self.calls.lock().expect("calls").push(calls);
            let n = texts.len() + self.extra;
            (0..n)
                .map(|i| vec![texts.get(i).map_or(0.0, |t| t.len() as f32)].into())
                .collect()
        }
    }

    impl Embeddings for Lengths {
        fn embed_documents<'a>(
            &'a self,
            texts: &'a [&'a str],
        ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
            Box::pin(async move { Ok(self.answer(texts)) })
        }

        fn embed_documents_sync(
            &self,
            texts: &[&str],
        ) -> Option<Result<Vec<Embedding>, EmbeddingError>> {
            (!self.awaited).then(|| Ok(self.answer(texts)))
        }
    }

    fn floats(vectors: &[Embedding]) -> Vec<Vec<f32>> {
        vectors.iter().map(|v| v.to_vec()).collect()
    }

    fn calls(model: &Lengths) -> Vec<Vec<String>> {
        model.calls.lock().expect("calls").clone()
    }

    #[test]
    fn embed_documents_sync_asks_each_distinct_text_once() {
        let model = Arc::new(Lengths::default());
        let index = IndexConfig::shared(1, model.clone());
        let vectors = index
            .embed_documents_sync(&["a", "bbb", "a"])
            .expect("answers at once")
            .expect("vectors");
        assert_eq!(floats(&vectors), [vec![1.0], vec![3.0], vec![1.0]]);
        // A repeated text's vector is shared, not copied.
        assert!(Arc::ptr_eq(&vectors[0], &vectors[2]));
        assert_eq!(calls(&model), [["a", "bbb"]]);
        // Nothing to embed: the model is not asked.
        let none: [&str; 0] = [];
        assert!(index
            .embed_documents_sync(&none)
            .expect("answers")
            .expect("no vectors")
            .is_empty());
        assert_eq!(calls(&model).len(), 1);
    }

    #[test]
    fn embed_documents_sync_checks_the_answer_and_defers_to_awaiting() {
        let wrong = Arc::new(Lengths {
            extra: 1,
            ..Lengths::default()
        });
        let index = IndexConfig::shared(1, wrong);
        assert!(matches!(
            index.embed_documents_sync(&["a"]),
            Some(Err(StoreError::Embedding(EmbeddingError::WrongCount {
                expected: 1,
                got: 2
            })))
        ));
        let index = IndexConfig::shared(2, Arc::new(Lengths::default()));
        assert!(matches!(
            index.embed_documents_sync(&["a"]),
            Some(Err(StoreError::Embedding(
                EmbeddingError::WrongDimensions { .. }
            )))
        ));
        let awaited = Arc::new(Lengths {
            awaited: true,
            ..Lengths::default()
        });
        let index = IndexConfig::shared(1, awaited.clone());
        assert!(index.embed_documents_sync(&["a"]).is_none());
        // The model's future is ready at once: no runtime needed.
        let vectors = futures::FutureExt::now_or_never(index.embed_documents(&["a", "bb", "a"]))
            .expect("ready")
            .expect("vectors");
        assert_eq!(floats(&vectors), [vec![1.0], vec![2.0], vec![1.0]]);
        assert_eq!(calls(&awaited), [["a", "bb"]]);
    }

    #[test]
    fn embed_document_sync_defaults_to_the_list_and_checks_the_answer() {
        // A model with only the list method answers one text through it.
        let model = Arc::new(Lengths::default());
        let index = IndexConfig::shared(1, model.clone());
        let vector = index
            .embed_document_sync("abcd")
            .expect("answers at once")
            .expect("a vector");
        assert_eq!(vector.to_vec(), [4.0]);
        assert_eq!(calls(&model), [["abcd"]]);
        // The query goes the same way (its future is ready at once).
        let query = futures::FutureExt::now_or_never(index.embed_query("xy"))
            .expect("ready")
            .expect("a vector");
        assert_eq!(query.to_vec(), [2.0]);
        // Two vectors for one text, a vector of the wrong size: errors.
        let index = IndexConfig::shared(
            1,
            Arc::new(Lengths {
                extra: 1,
                ..Lengths::default()
            }),
        );
        assert!(matches!(
            index.embed_document_sync("a"),
            Some(Err(StoreError::Embedding(EmbeddingError::WrongCount {
                expected: 1,
                got: 2
            })))
        ));
        let index = IndexConfig::shared(3, Arc::new(Lengths::default()));
        assert!(matches!(
            index.embed_document_sync("a"),
            Some(Err(StoreError::Embedding(
                EmbeddingError::WrongDimensions {
                    expected: 3,
                    got: 1
                }
            )))
        ));
        // A model that must be awaited: no answer at once.
        let awaited = IndexConfig::shared(
            1,
            Arc::new(Lengths {
                awaited: true,
                ..Lengths::default()
            }),
        );
        assert!(awaited.embed_document_sync("a").is_none());
    }

    #[test]
    fn hash_embeddings_answer_one_text_as_in_a_list() {
        let e = HashEmbeddings::new(16);
        let one = e
            .embed_document_sync("a cat")
            .expect("at once")
            .expect("vector");
        let list = e
            .embed_documents_sync(&["a cat"])
            .expect("at once")
            .expect("vectors");
        assert_eq!(one.to_vec(), list[0].to_vec());
    }
}
