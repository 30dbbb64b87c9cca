//! The runtime context (LangGraph's `context_schema` / `Runtime[Context]`): a
//! typed, read-only value given to each run, read by every node, router and
//! subgraph of the run, never checkpointed.

use futures::StreamExt;
use stategraph::checkpoint::{CheckpointConfig, Checkpointer, InMemorySaver};
use stategraph::prelude::*;
use stategraph::{async_node_fn, BatchOptions, PathMap, StreamEvent, StreamMode, Subgraph};
use std::sync::Arc;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
struct Log {
    #[reducer(concat)]
    log: Vec<String>,
}

fn line(s: impl Into<String>) -> LogUpdate {
    Log::update().log(vec![s.into()])
}

/// What each run is given. Neither `Serialize` nor `Clone`: a context is never
/// stored, nor copied per task.
#[derive(Debug, Default)]
struct Ctx {
    user: String,
    loud: bool,
}

fn ctx(user: &str, loud: bool) -> Ctx {
    Ctx {
        user: user.into(),
        loud,
    }
}

#[node]
fn inner(_: &Log, ctx: &Context<Ctx>) -> LogUpdate {
    line(format!("inner sees {}", ctx.context().user))
}

#[node]
fn greet(_: &Log, ctx: &Context<Ctx>) -> LogUpdate {
    line(format!("greet {}", ctx.context().user))
}

fn route(_: &Log, ctx: &Context<Ctx>) -> &'static str {
    if ctx.context().loud {
        "loud"
    } else {
        "quiet"
    }
}

#[node]
fn loud(_: &Log, ctx: &Context<Ctx>) -> LogUpdate {
    line(format!("LOUD {}", ctx.context().user.to_uppercase()))
}

/// A node that reads no context runs in a graph of any context type.
#[node]
fn quiet(_: &Log) -> LogUpdate {
    line("quiet")
}

#[node]
fn ask(_: &Log, ctx: &Context<Ctx>) -> Result<LogUpdate, NodeError> {
    let answer: String = ctx.interrupt("ok?")?;
    Ok(line(format!("{answer} from {}", ctx.context().user)))
}

fn app(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Log, Ctx> {
    let sub = StateGraph::<Log, Ctx>::with_context_schema()
        .add_node(inner)
        .add_edge(START, inner)
        .compile()
        .unwrap();
    StateGraph::<Log, Ctx>::with_context_schema()
        .add_node(greet)
        .add_node(loud)
        .add_node(quiet)
        .add_node(Subgraph::new("sub", sub))
        .add_node(ask)
        .add_edge(START, greet)
        .add_conditional_edges_with(greet, route, PathMap::from(["loud", "quiet"]))
        .add_edge(loud, "sub")
        .add_edge(quiet, "sub")
        .add_edge("sub", ask)
        .add_edge(ask, END)
        .compile_with(saver)
        .unwrap()
}

/// Nodes, a router and a subgraph read the run's context; a checkpoint holds
/// none of it, and a resumed run reads the resuming call's.
///
/// LangGraph 1.2.22, the same graph (`StateGraph(State, context_schema=Ctx)`,
/// nodes and the router taking `runtime: Runtime[Ctx]`, `sub` a compiled
/// `StateGraph(State, context_schema=Ctx)` added as a node):
///
/// ```text
/// out = app.invoke({"log": []}, cfg, context=Ctx(user="ada", loud=True))
/// paused: {'log': ['greet ada', 'LOUD ADA', 'greet ada', 'LOUD ADA', 'inner sees ada'],
///          '__interrupt__': [Interrupt(value='ok?', ...)]}
/// app.get_state(cfg): values: (the same log)  next: ('ask',)
/// checkpoint channel_values keys: ['branch:to:ask', 'log']   (no context)
/// out = app.invoke(Command(resume="yes"), cfg, context=Ctx(user="bob", loud=False))
/// resumed: {'log': ['greet ada', 'LOUD ADA', 'greet ada', 'LOUD ADA', 'inner sees ada',
///                   'yes from bob']}
/// ```
///
/// (The subgraph shares the parent's state, so its final `log` is folded in
/// again by the reducer: the repeated lines are LangGraph's as well.)
#[tokio::test]
async fn nodes_routers_and_subgraphs_read_the_context_of_their_run() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let app = app(Arc::clone(&saver));
    let config = RunConfig::thread("t1");

    let paused = app
        .with_context(ctx("ada", true))
        .invoke(Log::update(), &config)
        .await
        .unwrap();
    let before = [
        "greet ada",
        "LOUD ADA",
        "greet ada",
        "LOUD ADA",
        "inner sees ada",
    ];
    assert_eq!(paused.log, before);
    assert_eq!(paused.interrupts[0].value, "ok?");

    let snapshot = app.get_state(&config).await.unwrap();
    assert_eq!(snapshot.values.log, before);
    assert_eq!(snapshot.next, ["ask"]);
    let stored = saver
        .get_tuple(&CheckpointConfig {
            thread_id: "t1".into(),
            checkpoint_ns: Default::default(),
            checkpoint_id: None,
        })
        .await
        .unwrap()
        .expect("the paused run's checkpoint");
    let mut channels: Vec<&str> = stored
        .checkpoint
        .channel_values
        .keys()
        .map(|k| &**k)
        .collect();
    channels.sort_unstable();
    assert_eq!(channels, ["branch:to:ask", "log"]);

    let done = app
        .with_context(ctx("bob", false))
        .invoke(Command::resume("yes"), &config)
        .await
        .unwrap();
    let mut after = before.to_vec();
    after.push("yes from bob");
    assert_eq!(done.log, after);
}

/// A router reads the context of the call: the same thread routes otherwise
/// when the next run is given another value.
#[tokio::test]
async fn each_run_reads_its_own_context() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let app = app(saver);
    let quiet_run = app
        .with_context(ctx("cy", false))
        .invoke(Log::update(), &RunConfig::thread("quiet"))
        .await
        .unwrap();
    assert_eq!(
        quiet_run.log,
        ["greet cy", "quiet", "greet cy", "quiet", "inner sees cy"]
    );
}

/// LangGraph 1.2.22: a graph with `context_schema=Ctx` invoked without
/// `context=` gives its nodes `runtime.context == None`:
///
/// ```text
/// bare.invoke({"log": []})  ->  {'log': ['context None']}
/// ```
///
/// Here a run given no value reads the context type's `Default`: `None` for an
/// `Option`, and `()` for a graph without a context type.
#[tokio::test]
async fn a_run_given_no_context_reads_the_default() {
    #[node]
    fn show(_: &Log, ctx: &Context<Option<String>>) -> LogUpdate {
        line(format!("context {:?}", ctx.context()))
    }
    let bare = StateGraph::<Log, Option<String>>::with_context_schema()
        .add_node(show)
        .add_edge(START, show)
        .compile()
        .unwrap();
    let out = bare.invoke(Log::update(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.log, ["context None"]);
    let out = bare
        .with_context(Some("ada".to_owned()))
        .invoke(Log::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.log, ["context Some(\"ada\")"]);

    // Untyped: the plain `Context` sees the value as `&dyn Any`, `()` if none.
    #[node]
    fn peek(_: &Log, ctx: &Context) -> LogUpdate {
        let value = ctx.context();
        line(match value.downcast_ref::<u32>() {
            Some(n) => format!("u32 {n}"),
            None => format!("unit {}", value.is::<()>()),
        })
    }
    let untyped = StateGraph::<Log>::new()
        .add_node(peek)
        .add_edge(START, peek)
        .compile()
        .unwrap();
    let out = untyped
        .invoke(Log::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.log, ["unit true"]);
    let out = untyped
        .with_context(7u32)
        .invoke(Log::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.log, ["u32 7"]);
}

/// Closure nodes, async nodes, untyped nodes and `invoke_nested` in a graph with
/// a context type; `stream` and `batch` give their runs the value.
#[tokio::test]
async fn every_kind_of_node_and_every_way_to_run_gets_the_context() {
    let nested = StateGraph::<Log, Ctx>::with_context_schema()
        .add_node(inner)
        .add_edge(START, inner)
        .compile()
        .unwrap();
    let app = StateGraph::<Log, Ctx>::with_context_schema()
        .add_node(node_fn("closure", |_: &Log, ctx: &Context<Ctx>| {
            line(format!("closure {}", ctx.context().user))
        }))
        .add_node(async_node_fn(
            "async",
            |_: Arc<Log>, ctx: Context<Ctx>| async move {
                line(format!("async {}", ctx.context().user))
            },
        ))
        .add_node(node_fn("untyped", |_: &Log, ctx: &Context| {
            let user = ctx.context().downcast_ref::<Ctx>().map(|c| c.user.clone());
            line(format!("untyped {user:?}"))
        }))
        .add_node(async_node_fn(
            "calls",
            move |_: Arc<Log>, ctx: Context<Ctx>| {
                let nested = nested.clone();
                async move {
                    let out = nested.invoke_nested(&ctx, Log::update()).await?;
                    Ok::<_, NodeError>(Log::update().log(out.log))
                }
            },
        ))
        .add_edge(START, "closure")
        .add_edge("closure", "async")
        .add_edge("async", "untyped")
        .add_edge("untyped", "calls")
        .compile()
        .unwrap();
    let want = [
        "closure eve",
        "async eve",
        "untyped Some(\"eve\")",
        "inner sees eve",
    ];

    let runs = app.with_context(ctx("eve", false));
    let out = runs.invoke(Log::update(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.log, want);

    let mut stream = runs.stream(Log::update(), &RunConfig::new(), StreamMode::Values);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Values(state) = event.unwrap() {
            last = Some(state);
        }
    }
    assert_eq!(last.expect("a values event").log, want);

    let batch = runs
        .batch(
            vec![(Log::update(), RunConfig::new()); 2],
            BatchOptions::new(),
        )
        .await;
    for out in batch {
        assert_eq!(out.unwrap().log, want);
    }
}

/// `update_state` runs the source node's conditional edges: they read the
/// value given with `with_context` (or the default).
///
/// LangGraph 1.2.22 cannot do this: a router taking `runtime` fails during
/// `update_state` with `ValueError: Missing required config key 'N/A' for
/// 'peek'` (its routers get no runtime outside a run).
#[tokio::test]
async fn update_state_gives_the_routers_the_context() {
    let app = app(Arc::new(InMemorySaver::new()));
    let config = RunConfig::thread("t");
    app.with_context(ctx("ada", true))
        .invoke(Log::update(), &config)
        .await
        .unwrap();
    for (loud, next) in [(true, "loud"), (false, "quiet")] {
        app.with_context(ctx("bob", loud))
            .update_state(&config, line("manual"), Some("greet"))
            .await
            .unwrap();
        assert_eq!(app.get_state(&config).await.unwrap().next, [next]);
    }
    // Without a value, `Ctx::default()`, which is not loud.
    app.update_state(&config, line("manual"), Some("greet"))
        .await
        .unwrap();
    assert_eq!(app.get_state(&config).await.unwrap().next, ["quiet"]);
}

/// A graph without a context type (e.g. one a library built) is added as a
/// subgraph of a graph with one, and its nodes see the value untyped.
#[tokio::test]
async fn an_untyped_subgraph_runs_in_a_graph_with_a_context_type() {
    let child = StateGraph::<Log>::new()
        .add_node(node_fn("child", |_: &Log, ctx: &Context| {
            line(format!("child sees ctx: {}", ctx.context().is::<Ctx>()))
        }))
        .add_edge(START, "child")
        .compile()
        .unwrap();
    let parent = StateGraph::<Log, Ctx>::with_context_schema()
        .add_node(Subgraph::new("child", child))
        .add_edge(START, "child")
        .compile()
        .unwrap();
    let out = parent
        .with_context(ctx("ada", false))
        .invoke(Log::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.log, ["child sees ctx: true"]);
}
