//! [`CompiledGraph`]: a validated graph, ready to `invoke` or `stream`.

use super::compiled::Graph;
use crate::config::RunConfig;
use crate::error::GraphError;
use crate::pregel::{EventSink, Run};
use crate::state::State;
use crate::stream::{StreamEvent, StreamModes};
use futures::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// A compiled graph. Cheap to clone; every clone runs the same graph.
pub struct CompiledGraph<S: State> {
    graph: Arc<Graph<S>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        CompiledGraph {
            graph: Arc::clone(&self.graph),
        }
    }
}

impl<S: State> std::fmt::Debug for CompiledGraph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.node_names().collect::<Vec<_>>())
            .finish()
    }
}

impl<S: State> CompiledGraph<S> {
    pub(crate) fn new(graph: Graph<S>) -> Self {
        CompiledGraph {
            graph: Arc::new(graph),
        }
    }

    /// The names of the graph's nodes, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.graph.nodes.iter().skip(1).map(|n| &*n.name)
    }

    /// Runs the graph from `input` until no node is triggered; returns the final state.
    ///
    /// `input` is the state's update type (`S::update()...`); `None` means "no input",
    /// which is an error on a graph without a checkpointer.
    pub async fn invoke(
        &self,
        input: impl Into<Option<S::Update>>,
        config: &RunConfig,
    ) -> Result<S, GraphError> {
        let run = Run::new(Arc::clone(&self.graph), config.clone(), None)?;
        let state = run.run(input.into()).await?;
        Ok(Arc::try_unwrap(state).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// Runs the graph, reporting the events of `modes` as they happen.
    ///
    /// The run advances only while the stream is polled. An error ends the stream
    /// after the events that preceded it.
    pub fn stream(
        &self,
        input: impl Into<Option<S::Update>>,
        config: &RunConfig,
        modes: impl Into<StreamModes>,
    ) -> GraphStream<S> {
        let (tx, rx) = unbounded_channel();
        let sink = EventSink {
            modes: modes.into(),
            tx,
            sent: Default::default(),
        };
        let input = input.into();
        let graph = Arc::clone(&self.graph);
        let config = config.clone();
        let run = async move {
            let run = Run::new(graph, config, Some(sink))?;
            run.run(input).await.map(drop)
        };
        GraphStream {
            run: Some(Box::pin(run)),
            rx,
            error: None,
        }
    }
}

type RunFuture = Pin<Box<dyn Future<Output = Result<(), GraphError>> + Send>>;

/// The stream returned by [`CompiledGraph::stream`].
pub struct GraphStream<S: State> {
    run: Option<RunFuture>,
    rx: UnboundedReceiver<StreamEvent<S>>,
    error: Option<GraphError>,
}

impl<S: State> Stream for GraphStream<S> {
    type Item = Result<StreamEvent<S>, GraphError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Poll::Ready(None) => return Poll::Ready(this.error.take().map(Err)),
                Poll::Pending => {}
            }
            let Some(run) = this.run.as_mut() else {
                return Poll::Pending;
            };
            match run.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.run = None;
                    this.error = result.err();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<S: State> Unpin for GraphStream<S> {}
