//! [`WithOutput`]: a compiled graph whose `invoke` returns an output schema.

use crate::config::RunConfig;
use crate::error::GraphError;
use crate::graph::{BatchItem, BatchOptions, CompiledGraph, DefaultContext, GraphStream};
use crate::io::{GraphInput, GraphOutput, OutputSchema};
use crate::state::State;
use crate::stream::StreamModes;
use futures::{Stream, StreamExt};
use std::marker::PhantomData;

impl<S: State, C: ?Sized + 'static> CompiledGraph<S, C> {
    /// This graph, with `invoke` returning the output schema `O` (LangGraph's
    /// `output_schema`): only `O`'s fields of the final state. Nodes still read
    /// and write the whole state, and [`stream`](WithOutput::stream) reports
    /// every field.
    ///
    /// `O` is a struct with `#[derive(Schema)]` and `#[schema(state = S)]`. The
    /// same derive makes a struct an input schema: `invoke(In { .. }, ..)` writes
    /// only `In`'s fields.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct Overall { question: String, notes: String, answer: String }
    ///
    /// #[derive(Schema)]
    /// #[schema(state = Overall)]
    /// struct Question { question: String }
    ///
    /// #[derive(Schema, Debug, PartialEq)]
    /// #[schema(state = Overall)]
    /// struct Answer { answer: String }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), GraphError> {
    /// let app = StateGraph::<Overall>::new()
    ///     .add_node(node_fn("think", |s: &Overall| {
    ///         Overall::update()
    ///             .notes(format!("thought about {}", s.question))
    ///             .answer("42".into())
    ///     }))
    ///     .add_edge(START, "think")
    ///     .compile()?
    ///     .with_output::<Answer>();
    ///
    /// let question = Question { question: "meaning of life?".into() };
    /// let out = app.invoke(question, &RunConfig::new()).await?;
    /// assert_eq!(out.state, Answer { answer: "42".into() });
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_output<O: OutputSchema<S>>(self) -> WithOutput<S, O, C> {
        WithOutput {
            graph: self,
            output: PhantomData,
        }
    }
}

/// A compiled graph whose [`invoke`](Self::invoke) returns the output schema `O`
/// instead of the state; made by
/// [`CompiledGraph::with_output`]; so do [`batch`](Self::batch) and
/// [`batch_stream`](Self::batch_stream). It dereferences to the graph, for
/// `get_state`, `update_state` and the rest, which read the whole state.
pub struct WithOutput<S: State, O, C: ?Sized = crate::context::Untyped> {
    graph: CompiledGraph<S, C>,
    output: PhantomData<fn() -> O>,
}

impl<S: State, O, C: ?Sized> Clone for WithOutput<S, O, C> {
    fn clone(&self) -> Self {
        WithOutput {
            graph: self.graph.clone(),
            output: PhantomData,
        }
    }
}

impl<S: State, O, C: ?Sized + 'static> std::fmt::Debug for WithOutput<S, O, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithOutput")
            .field("graph", &self.graph)
            .field("output", &std::any::type_name::<O>())
            .finish()
    }
}

impl<S: State, O, C: ?Sized> WithOutput<S, O, C> {
    /// The graph, without the output schema.
    pub fn into_inner(self) -> CompiledGraph<S, C> {
        self.graph
    }
}

impl<S: State, O, C: ?Sized> std::ops::Deref for WithOutput<S, O, C> {
    type Target = CompiledGraph<S, C>;

    fn deref(&self) -> &CompiledGraph<S, C> {
        &self.graph
    }
}

impl<S: State, O: OutputSchema<S>, C: DefaultContext + ?Sized + 'static> WithOutput<S, O, C> {
    /// Runs the graph as [`CompiledGraph::invoke`] does, and returns `O`'s fields
    /// of the final state, with the interrupts and the breakpoint. A field no node
    /// wrote has its default value (LangGraph leaves the key out, and returns
    /// `None` when no field of the schema was written).
    pub async fn invoke(
        &self,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
    ) -> Result<GraphOutput<O>, GraphError> {
        // `O` may name a private field: it is part of this output.
        let out = self
            .graph
            .run_to_end(C::default_context(), input.into(), config)
            .await?;
        Ok(out.map(|state| O::from_state(&state)))
    }

    /// Runs the graph as [`CompiledGraph::stream`] does: `values` events carry
    /// the whole state and `updates` events every field a node wrote, not only
    /// `O`'s, as LangGraph's do with an output schema.
    pub fn stream(
        &self,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
        modes: impl Into<StreamModes>,
    ) -> GraphStream<S> {
        self.graph.stream(input, config, modes)
    }

    /// Runs the graph once per `(input, config)` pair as
    /// [`CompiledGraph::batch`] does; each result holds `O`'s fields.
    pub async fn batch<I>(
        &self,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: BatchOptions,
    ) -> Vec<Result<GraphOutput<O>, GraphError>>
    where
        I: Into<GraphInput<S>>,
    {
        self.graph
            .batch(runs, options)
            .await
            .into_iter()
            .map(|result| result.map(|out| out.map(|state| O::from_state(&state))))
            .collect()
    }

    /// Runs the graph once per `(input, config)` pair as
    /// [`CompiledGraph::batch_stream`] does; each result holds `O`'s fields.
    pub fn batch_stream<I>(
        &self,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: BatchOptions,
    ) -> impl Stream<Item = BatchItem<O>> + Send + Unpin + 'static
    where
        I: Into<GraphInput<S>>,
        O: Send + 'static,
    {
        self.graph
            .batch_stream(runs, options)
            .map(|(i, result)| (i, result.map(|out| out.map(|state| O::from_state(&state)))))
    }
}
