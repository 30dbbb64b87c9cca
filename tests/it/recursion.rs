//! Recursion limit and the managed values `RemainingSteps` / `IsLastStep`
//! (docs/semantics.md §2.9; scenario 10 of its appendix A).

use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Steps {
    #[reducer(concat)]
    log: Vec<(String, i64, bool)>,
    remaining: RemainingSteps,
    last: IsLastStep,
}

fn chain(k: usize) -> CompiledGraph<Steps> {
    let mut graph = StateGraph::<Steps>::new();
    for i in 0..k {
        let name = format!("n{i}");
        let entry = name.clone();
        graph = graph.add_node(node_fn(name, move |s: &Steps| {
            Steps::update().log(vec![(entry.clone(), *s.remaining, *s.last)])
        }));
    }
    graph = graph.add_edge(START, "n0");
    for i in 1..k {
        graph = graph.add_edge(format!("n{}", i - 1), format!("n{i}"));
    }
    graph.compile().unwrap()
}

async fn run(k: usize, limit: u64) -> Result<Vec<(String, i64, bool)>, GraphError> {
    chain(k)
        .invoke(
            Steps::update(),
            &RunConfig::new().with_recursion_limit(limit),
        )
        .await
        .map(|s| s.into_state().log)
}

#[tokio::test]
async fn two_nodes_need_a_limit_of_three() {
    let err = run(2, 2).await.unwrap_err();
    assert!(
        matches!(err, GraphError::RecursionLimit { limit: 2 }),
        "{err}"
    );
    assert!(err
        .to_string()
        .starts_with("Recursion limit of 2 reached without hitting a stop condition."));
    assert_eq!(err.code(), Some(stategraph::ErrorCode::GraphRecursionLimit));
    assert_eq!(
        run(2, 3).await.unwrap(),
        [("n0".to_owned(), 2, false), ("n1".to_owned(), 1, true)]
    );
}

#[tokio::test]
async fn one_node_needs_a_limit_of_two() {
    assert!(run(1, 1).await.is_err());
    assert_eq!(run(1, 2).await.unwrap(), [("n0".to_owned(), 1, true)]);
}

#[tokio::test]
async fn the_context_reports_the_same_managed_values() {
    let app = StateGraph::<Steps>::new()
        .add_node(node_fn("n0", |_: &Steps, ctx: &Context| {
            Steps::update().log(vec![(
                format!("step {}", ctx.step()),
                ctx.remaining_steps(),
                ctx.is_last_step(),
            )])
        }))
        .add_edge(START, "n0")
        .compile()
        .unwrap();
    let out = app
        .invoke(Steps::update(), &RunConfig::new().with_recursion_limit(5))
        .await
        .unwrap();
    assert_eq!(out.log, [("step 1".to_owned(), 4, false)]);
}

#[tokio::test]
async fn a_recursion_limit_of_zero_is_rejected() {
    let err = run(1, 0).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("recursion_limit must be at least 1"),
        "{err}"
    );
}

#[tokio::test]
async fn an_endless_loop_stops_at_the_default_limit() {
    #[derive(Goto, Clone, Copy, Debug)]
    enum Again {
        Spin,
    }
    #[node]
    fn spin(_: &Steps) -> Command<Again> {
        Command::goto(Again::Spin)
    }
    let app = StateGraph::<Steps>::new()
        .add_node(spin)
        .add_edge(START, spin)
        .compile()
        .unwrap();
    let err = app
        .invoke(Steps::update(), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, GraphError::RecursionLimit { limit: 10_007 }),
        "{err}"
    );
}

#[tokio::test]
async fn a_ten_thousand_node_chain_runs_without_stack_overflow() {
    let out = chain(10_000)
        .invoke(
            Steps::update(),
            &RunConfig::new().with_recursion_limit(20_000),
        )
        .await
        .unwrap();
    assert_eq!(out.log.len(), 10_000);
    assert_eq!(out.log[9_999].0, "n9999");
}
