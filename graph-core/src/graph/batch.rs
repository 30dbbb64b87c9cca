//! [`CompiledGraph::batch`] and [`CompiledGraph::batch_stream`]: many runs at
//! once, at most `max_concurrency` at a time (LangGraph's `batch` and
//! `batch_as_completed`).

use super::CompiledGraph;
use crate::config::RunConfig;
use crate::context::RunContext;
use crate::error::GraphError;
use crate::io::{GraphInput, GraphOutput};
use crate::state::State;
use futures::{Stream, StreamExt};

/// Options of [`CompiledGraph::batch`] and [`CompiledGraph::batch_stream`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct BatchOptions {
    max_concurrency: Option<usize>,
}

impl BatchOptions {
    /// No limit: every run starts at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `limit` runs at a time (LangGraph's `max_concurrency`); the
    /// next starts when one finishes. A limit of 0 counts as 1.
    pub fn max_concurrency(mut self, limit: usize) -> Self {
        self.max_concurrency = Some(limit.max(1));
        self
    }

    /// The limit, if any.
    pub fn concurrency_limit(&self) -> Option<usize> {
        self.max_concurrency
    }
}

/// One run's result in a batch: its index in the batch's input, and what
/// [`CompiledGraph::invoke`] returned for it.
pub type BatchItem<S> = (usize, Result<GraphOutput<S>, GraphError>);

impl<S: State, C: ?Sized + 'static> CompiledGraph<S, C> {
    /// Runs the graph once per `(input, config)` pair, concurrently (at most
    /// [`BatchOptions::max_concurrency`] at a time), and returns each run's
    /// result in the order of the pairs: LangGraph's `batch(inputs, configs,
    /// return_exceptions=True)`.
    ///
    /// Each run is an [`invoke`](Self::invoke) with its own config, so with a
    /// checkpointer each continues its own thread. Give each pair its own
    /// thread: runs of one thread must not overlap, and a run that finds its
    /// thread busy with another of the batch fails with
    /// [`GraphError::ThreadBusy`]. One config for every input is
    /// `inputs.map(|i| (i, config.clone()))`.
    ///
    /// A run's error does not stop the others: they have run (and stored their
    /// checkpoints), so their results are kept. LangGraph's default, raising
    /// the first error in input order, is
    /// `.into_iter().collect::<Result<Vec<_>, _>>()`.
    ///
    /// The runs take turns on the calling task, as [`join_all`] would; their
    /// nodes run as in `invoke` (async nodes that wait are spawned on tokio).
    ///
    /// [`join_all`]: futures::future::join_all
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::checkpoint::InMemorySaver;
    /// use stategraph::BatchOptions;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { n: u32 }
    ///
    /// #[node]
    /// fn tenfold(s: &S) -> SUpdate { S::update().n(s.n * 10) }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), GraphError> {
    /// let app = StateGraph::<S>::new()
    ///     .add_node(tenfold)
    ///     .add_edge(START, tenfold)
    ///     .compile_with(InMemorySaver::new())?;
    /// let runs = (1..=3).map(|n| (S::update().n(n), RunConfig::thread(format!("t{n}"))));
    /// let results = app.batch(runs, BatchOptions::new().max_concurrency(2)).await;
    /// let totals = results
    ///     .into_iter()
    ///     .map(|r| r.map(|out| out.n))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// assert_eq!(totals, [10, 20, 30]);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn batch<I>(
        &self,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: BatchOptions,
    ) -> Vec<Result<GraphOutput<S>, GraphError>>
    where
        I: Into<GraphInput<S>>,
        C: super::DefaultContext,
    {
        self.batch_in(C::default_context(), runs, options).await
    }

    /// [`batch`](Self::batch) with the runs' context value.
    pub(crate) async fn batch_in<I>(
        &self,
        context: RunContext,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: BatchOptions,
    ) -> Vec<Result<GraphOutput<S>, GraphError>>
    where
        I: Into<GraphInput<S>>,
    {
        let runs: Vec<(GraphInput<S>, RunConfig)> = runs
            .into_iter()
            .map(|(input, config)| (input.into(), config))
            .collect();
        let total = runs.len();
        let limit = options.max_concurrency.unwrap_or(total).max(1);
        let mut done: Vec<BatchItem<S>> = futures::stream::iter(runs.into_iter().enumerate())
            .map(|(i, (input, config))| {
                let context = context.clone();
                async move { (i, self.invoke_in(context, input, &config).await) }
            })
            .buffer_unordered(limit)
            .collect()
            .await;
        done.sort_unstable_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, result)| result).collect()
    }

    /// Runs the graph once per `(input, config)` pair as
    /// [`batch`](Self::batch) does, yielding each run's index and result as it
    /// finishes (LangGraph's `batch_as_completed`). The runs advance only while
    /// the stream is polled; dropping it stops the runs still going.
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::{BatchOptions, StreamExt};
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { n: u32 }
    ///
    /// #[node]
    /// fn tenfold(s: &S) -> SUpdate { S::update().n(s.n * 10) }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), GraphError> {
    /// let app = StateGraph::<S>::new().add_node(tenfold).add_edge(START, tenfold).compile()?;
    /// let runs = (1..=3).map(|n| (S::update().n(n), RunConfig::new()));
    /// let mut done = app.batch_stream(runs, BatchOptions::new().max_concurrency(2));
    /// let mut totals = [0; 3];
    /// while let Some((i, result)) = done.next().await {
    ///     totals[i] = result?.n;
    /// }
    /// assert_eq!(totals, [10, 20, 30]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn batch_stream<I>(
        &self,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: BatchOptions,
    ) -> impl Stream<Item = BatchItem<S>> + Send + Unpin + 'static
    where
        I: Into<GraphInput<S>>,
        C: super::DefaultContext,
    {
        self.batch_stream_in(C::default_context(), runs, options)
    }

    /// [`batch_stream`](Self::batch_stream) with the runs' context value.
    pub(crate) fn batch_stream_in<I>(
        &self,
        context: RunContext,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: BatchOptions,
    ) -> impl Stream<Item = BatchItem<S>> + Send + Unpin + 'static
    where
        I: Into<GraphInput<S>>,
    {
        let runs: Vec<(usize, GraphInput<S>, RunConfig)> = runs
            .into_iter()
            .enumerate()
            .map(|(i, (input, config))| (i, input.into(), config))
            .collect();
        let limit = options.max_concurrency.unwrap_or(runs.len()).max(1);
        let app = self.clone();
        futures::stream::iter(runs)
            .map(move |(i, input, config)| {
                let (app, context) = (app.clone(), context.clone());
                async move { (i, app.invoke_in(context, input, &config).await) }
            })
            .buffer_unordered(limit)
    }
}
