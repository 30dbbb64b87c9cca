//! Routers of conditional edges that can fail, take the task's context, or
//! have their results looked up in a path map (LangGraph's `path_map`).
//!
//! Each test's comment records what LangGraph 1.2.22 printed for the same graph
//! (nodes `a`: n + 1 and `b`: n + 10, `START -> a`, a conditional edge from `a`).

use stategraph::checkpoint::InMemorySaver;
use stategraph::error::GraphProblem;
use stategraph::prelude::*;
use stategraph::{PathMap, StreamEvent, StreamExt, StreamMode};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct S {
    n: u32,
}

fn plus(k: u32) -> impl Fn(&S) -> SUpdate + Send + Sync + 'static {
    move |s: &S| S::update().n(s.n + k)
}

/// `a` and `b`, with `START -> a`, ready for `a`'s conditional edge.
fn nodes() -> StateGraph<S> {
    StateGraph::<S>::new()
        .add_node(node_fn("a", plus(1)))
        .add_node(node_fn("b", plus(10)))
        .add_edge(START, "a")
}

fn yes_or_no(s: &S) -> &'static str {
    if s.n > 1 {
        "yes"
    } else {
        "no"
    }
}

mod path_map {
    use super::*;

    /// ```python
    /// g.add_conditional_edges("a", router, {"yes": "b", "no": END})
    /// app.invoke({"n": 1})  # {'n': 12}
    /// app.invoke({"n": 0})  # {'n': 1}
    /// ```
    #[tokio::test]
    async fn keys_route_to_their_targets() {
        let app = nodes()
            .add_conditional_edges_with("a", yes_or_no, PathMap::from([("yes", "b"), ("no", END)]))
            .compile()
            .unwrap();
        let yes = app.invoke(S::update().n(1), &RunConfig::new()).await;
        assert_eq!(yes.unwrap().n, 12);
        let no = app.invoke(S::update().n(0), &RunConfig::new()).await;
        assert_eq!(no.unwrap().n, 1);
    }

    /// LangGraph's list form maps each name to itself.
    #[tokio::test]
    async fn a_list_maps_names_to_themselves() {
        let app = nodes()
            .add_conditional_edges_with("a", |_: &S| "b", PathMap::from(["b", END]))
            .compile()
            .unwrap();
        let out = app.invoke(S::update().n(1), &RunConfig::new()).await;
        assert_eq!(out.unwrap().n, 12);
    }

    /// Built with `route`, which takes nodes as `add_edge` does.
    #[tokio::test]
    async fn route_builds_a_map() {
        let app = nodes()
            .add_conditional_edges_with(
                "a",
                yes_or_no,
                PathMap::new().route("yes", "b").route("no", END),
            )
            .compile()
            .unwrap();
        let out = app.invoke(S::update().n(5), &RunConfig::new()).await;
        assert_eq!(out.unwrap().n, 16);
    }

    /// ```python
    /// def bad(s): return "maybe"
    /// g.add_conditional_edges("a", bad, {"yes": "b", "no": END})
    /// app.invoke({"n": 1}, cfg)
    /// # KeyError('maybe')
    /// app.get_state(cfg)
    /// # values {'n': 2}, next (), tasks [('a', "KeyError('maybe')")]
    /// ```
    ///
    /// A run error naming the router and the key, not a route silently
    /// dropped. Unlike LangGraph, which stores `a`'s write with the error and
    /// so loses the route, the thread stays at the checkpoint before `a`'s step
    /// (as for a router that panics): `next` is `a`, which runs again.
    #[tokio::test]
    async fn a_key_not_in_the_map_fails_the_run_naming_router_and_key() {
        fn maybe(_: &S) -> &'static str {
            "maybe"
        }
        let app = nodes()
            .add_conditional_edges_with("a", maybe, PathMap::from([("yes", "b"), ("no", END)]))
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("unmapped");
        let err = app.invoke(S::update().n(1), &config).await.unwrap_err();
        let GraphError::UnmappedRoute {
            node,
            router,
            key,
            keys,
        } = &err
        else {
            panic!("expected UnmappedRoute, got {err:?}");
        };
        assert_eq!((node.as_str(), key.as_str()), ("a", "maybe"));
        assert!(router.ends_with("maybe"), "{router}");
        assert_eq!(keys, &["yes", "no"]);
        let message = err.to_string();
        assert!(
            message
                .contains("returned `maybe`, which is not a key of its path map (keys: yes, no)"),
            "{message}"
        );
        let snapshot = app.get_state(&config).await.unwrap();
        assert_eq!(snapshot.values.n, 1);
        assert_eq!(snapshot.next, ["a"]);
    }

    /// ```python
    /// def to_end(s): return END
    /// g.add_conditional_edges("a", to_end, {"yes": "b"})
    /// # KeyError('__end__')
    /// ```
    #[tokio::test]
    async fn end_is_a_key_like_any_other() {
        let app = nodes()
            .add_conditional_edges_with("a", |_: &S| END, PathMap::from([("yes", "b")]))
            .compile()
            .unwrap();
        let err = app
            .invoke(S::update().n(1), &RunConfig::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, GraphError::UnmappedRoute { key, .. } if key == END),
            "{err:?}"
        );
    }

    /// ```python
    /// def sends(s): return [Send("b", {"n": 5})]
    /// g.add_conditional_edges("a", sends, {"yes": "b"})
    /// app.invoke({"n": 1})  # {'n': 15}
    /// ```
    #[tokio::test]
    async fn sends_pass_through_unmapped() {
        let app = nodes()
            .add_conditional_edges_with(
                "a",
                |_: &S| vec![stategraph::Send::to_named("b", S { n: 5 })],
                PathMap::from([("yes", "b")]),
            )
            .compile()
            .unwrap();
        let out = app.invoke(S::update().n(1), &RunConfig::new()).await;
        assert_eq!(out.unwrap().n, 15);
    }

    /// A typed router's variants are the keys.
    #[tokio::test]
    async fn a_goto_enum_is_looked_up_by_its_names() {
        #[derive(Goto, Clone, Copy)]
        enum Verdict {
            Approve,
            #[goto(end)]
            Reject,
        }
        let app = nodes()
            .add_conditional_edges_with(
                "a",
                |s: &S| {
                    if s.n > 1 {
                        Verdict::Approve
                    } else {
                        Verdict::Reject
                    }
                },
                PathMap::from([("approve", "b"), (END, END)]),
            )
            .compile()
            .unwrap();
        let out = app.invoke(S::update().n(1), &RunConfig::new()).await;
        assert_eq!(out.unwrap().n, 12);
        let out = app.invoke(S::update().n(0), &RunConfig::new()).await;
        assert_eq!(out.unwrap().n, 1);
    }

    /// ```python
    /// g.add_conditional_edges("a", router, {"yes": "c", "no": END})
    /// g.compile()
    /// # ValueError("At 'a' node, 'router' branch found unknown target 'c'")
    /// ```
    #[test]
    fn compile_checks_every_target_exists() {
        let Err(GraphError::InvalidGraph { problems }) = nodes()
            .add_conditional_edges_with("a", yes_or_no, PathMap::from([("yes", "c"), ("no", END)]))
            .compile()
        else {
            panic!("expected InvalidGraph");
        };
        let [GraphProblem::UnknownPathMapTarget {
            source,
            router,
            key,
            target,
        }] = problems.as_slice()
        else {
            panic!("expected one UnknownPathMapTarget, got {problems:?}");
        };
        assert_eq!(
            (source.as_str(), key.as_str(), target.as_str()),
            ("a", "yes", "c")
        );
        assert!(router.ends_with("yes_or_no"), "{router}");
        let message = problems[0].to_string();
        assert!(
            message.starts_with(&format!(
                "At 'a' node, '{router}' branch found unknown target 'c'"
            )),
            "{message}"
        );
    }

    #[test]
    fn compile_checks_every_variant_is_a_key() {
        #[derive(Goto, Clone, Copy)]
        enum Verdict {
            Approve,
            #[goto(end)]
            Reject,
        }
        let Err(GraphError::InvalidGraph { problems }) = nodes()
            .add_conditional_edges_with(
                "a",
                |s: &S| {
                    if s.n > 1 {
                        Verdict::Approve
                    } else {
                        Verdict::Reject
                    }
                },
                PathMap::from([("approve", "b")]),
            )
            .compile()
        else {
            panic!("expected InvalidGraph");
        };
        assert!(
            matches!(
                problems.as_slice(),
                [GraphProblem::UnmappedBranchTarget { source, key, .. }]
                    if source == "a" && key == END
            ),
            "{problems:?}"
        );
    }

    /// ```text
    /// LangGraph's draw_mermaid() for {"yes": "b", "no": END}:
    ///     a -. &nbsp;no&nbsp; .-> __end__;
    ///     a -. &nbsp;yes&nbsp; .-> b;
    /// and for the list ["b", END] (keys equal to their targets, no label):
    ///     a -.-> __end__;
    ///     a -.-> b;
    /// ```
    #[test]
    fn the_drawing_labels_edges_with_their_keys() {
        let app = nodes()
            .add_conditional_edges_with("a", yes_or_no, PathMap::from([("yes", "b"), ("no", END)]))
            .add_edge("b", END)
            .compile()
            .unwrap();
        let mermaid = app.draw_mermaid();
        assert!(mermaid.contains("\ta -. no .-> __end__;\n"), "{mermaid}");
        assert!(mermaid.contains("\ta -. yes .-> b;\n"), "{mermaid}");
        let dot = app.draw_dot();
        assert!(
            dot.contains("\t\"a\" -> \"b\" [style=dashed label=\"yes\"];\n"),
            "{dot}"
        );

        let app = nodes()
            .add_conditional_edges_with("a", |_: &S| "b", PathMap::from(["b", END]))
            .compile()
            .unwrap();
        let mermaid = app.draw_mermaid();
        assert!(mermaid.contains("\ta -.-> __end__;\n"), "{mermaid}");
        assert!(mermaid.contains("\ta -.-> b;\n"), "{mermaid}");
        assert!(!mermaid.contains("routes at run time"), "{mermaid}");
    }
}

mod fallible {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("router failed at n = {0}")]
    struct Boom(u32);

    /// ```python
    /// class Boom(Exception): pass
    /// def raising(s): raise Boom("router failed")
    /// g.add_conditional_edges("a", raising, ["b", END])
    /// app.invoke({"n": 1}, cfg)
    /// # Boom('router failed')
    /// app.get_state(cfg)
    /// # values {'n': 2}, next (), tasks [('a', "Boom('router failed')")]
    /// app.invoke(None, cfg)  # (router fixed) {'n': 2}: the router is not called again
    /// ```
    ///
    /// The router's error fails the run, as a node's would, and keeps its type.
    /// LangGraph runs the router inside `a`'s task, stores `a`'s write with the
    /// error, and on resume takes the task as done: the route is lost. Here
    /// the step is not applied: the thread stays at its last checkpoint with
    /// `a` next, and invoking it again runs `a` and its router again.
    #[tokio::test]
    async fn an_err_fails_the_run_and_the_thread_runs_the_task_again() {
        let calls = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&calls);
        let app = nodes()
            .add_conditional_edges("a", move |s: &S| {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(Boom(s.n));
                }
                Ok("b")
            })
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("fallible");
        let err = app.invoke(S::update().n(1), &config).await.unwrap_err();
        let GraphError::RouterFailed {
            node,
            router,
            task_id,
            step,
            source,
        } = &err
        else {
            panic!("expected RouterFailed, got {err:?}");
        };
        assert_eq!((node.as_str(), *step), ("a", 1));
        assert!(router.contains("closure"), "{router}");
        assert!(
            matches!(source.downcast_ref::<Boom>(), Some(Boom(2))),
            "{source}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "the router of a conditional edge from node `a` failed (task {task_id}, step 1)"
            )
        );

        let snapshot = app.get_state(&config).await.unwrap();
        assert_eq!(snapshot.values.n, 1);
        assert_eq!(snapshot.next, ["a"]);
        assert_eq!(snapshot.tasks[0].id, *task_id);

        let out = app.invoke(None, &config).await.unwrap();
        assert_eq!(out.n, 12);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    /// `?` works in a router returning `Result<_, NodeError>`.
    #[tokio::test]
    async fn question_mark_converts_errors() {
        fn parse(_: &S) -> Result<&'static str, NodeError> {
            let limit: u32 = "not a number".parse()?;
            Ok(if limit > 0 { "b" } else { END })
        }
        let app = nodes().add_conditional_edges("a", parse).compile().unwrap();
        let err = app
            .invoke(S::update().n(1), &RunConfig::new())
            .await
            .unwrap_err();
        let GraphError::RouterFailed { source, .. } = &err else {
            panic!("expected RouterFailed, got {err:?}");
        };
        assert!(source.is::<std::num::ParseIntError>(), "{source:?}");
    }

    /// A path map and a fallible router together.
    #[tokio::test]
    async fn a_fallible_router_can_have_a_path_map() {
        let app = nodes()
            .add_conditional_edges_with(
                "a",
                |s: &S| -> Result<&'static str, Boom> { Ok(yes_or_no(s)) },
                PathMap::from([("yes", "b"), ("no", END)]),
            )
            .compile()
            .unwrap();
        let out = app.invoke(S::update().n(1), &RunConfig::new()).await;
        assert_eq!(out.unwrap().n, 12);
    }
}

mod context {
    use super::*;

    /// ```python
    /// def with_config(s, config):
    ///     print(config["metadata"]["langgraph_step"], config["metadata"]["langgraph_node"])
    ///     return END
    /// # 1 a
    /// ```
    ///
    /// The router sees its source task's node, id and step, and the run's config.
    #[tokio::test]
    async fn a_router_gets_its_tasks_context() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let app = nodes()
            .add_conditional_edges("a", move |s: &S, ctx: &Context| {
                if let Ok(mut seen) = record.lock() {
                    seen.push((
                        ctx.node().to_owned(),
                        ctx.task_id().to_owned(),
                        ctx.step(),
                        ctx.thread_id().map(str::to_owned),
                    ));
                }
                ctx.write_custom(s.n);
                if ctx.step() < 3 {
                    "a"
                } else {
                    END
                }
            })
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("ctx");
        let mut stream = app.stream(S::update().n(0), &config, StreamMode::Custom);
        let mut custom = Vec::new();
        while let Some(event) = stream.next().await {
            if let StreamEvent::Custom { node, value } = event.unwrap() {
                custom.push((node.to_string(), value));
            }
        }
        assert_eq!(
            custom,
            [
                ("a".to_owned(), serde_json::json!(1)),
                ("a".to_owned(), serde_json::json!(2)),
                ("a".to_owned(), serde_json::json!(3)),
            ]
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen.iter()
                .map(|(n, _, step, thread)| (n.as_str(), *step, thread.as_deref()))
                .collect::<Vec<_>>(),
            [
                ("a", 1, Some("ctx")),
                ("a", 2, Some("ctx")),
                ("a", 3, Some("ctx"))
            ]
        );
        let history = app
            .get_state_history(&config, &Default::default())
            .await
            .unwrap();
        // Each router call saw the id of the task it routes for.
        for (_, task_id, step, _) in &seen {
            let before = history
                .iter()
                .find(|s| s.metadata.as_ref().is_some_and(|m| m.step == step - 1))
                .unwrap();
            assert_eq!(before.tasks[0].id, *task_id);
        }
    }

    /// A router cannot pause the run: `interrupt` in a router is an error that
    /// says where to call it instead.
    #[tokio::test]
    async fn interrupt_in_a_router_is_an_error() {
        let app = nodes()
            .add_conditional_edges(
                "a",
                |_: &S, ctx: &Context| -> Result<&'static str, NodeError> {
                    let go: bool = ctx.interrupt("which way?")?;
                    Ok(if go { "b" } else { END })
                },
            )
            .compile_with(InMemorySaver::new())
            .unwrap();
        let err = app
            .invoke(S::update().n(1), &RunConfig::thread("pause"))
            .await
            .unwrap_err();
        let GraphError::RouterFailed { source, .. } = &err else {
            panic!("expected RouterFailed, got {err:?}");
        };
        assert!(
            source.to_string().starts_with("a router cannot interrupt"),
            "{source}"
        );
    }
}
