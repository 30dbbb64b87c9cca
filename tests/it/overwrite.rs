//! `Overwrite` on reducer fields (docs/semantics.md §1.3; scenario 37 of its
//! appendix A).

use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    #[reducer(concat)]
    messages: Vec<String>,
}

fn append(word: &'static str) -> impl Fn(&Log) -> LogUpdate + Send + Sync + 'static {
    move |_: &Log| Log::update().messages(vec![word.to_owned()])
}

fn overwrite(word: &'static str) -> impl Fn(&Log) -> LogUpdate + Send + Sync + 'static {
    move |_: &Log| Log::update().messages_overwrite(vec![word.to_owned()])
}

fn start() -> LogUpdate {
    Log::update().messages(vec!["START".into()])
}

#[tokio::test]
async fn an_overwrite_replaces_the_accumulated_value() {
    let app = StateGraph::<Log>::new()
        .add_node(node_fn("a", append("a")))
        .add_node(node_fn("b", overwrite("b")))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile()
        .unwrap();
    let out = app.invoke(start(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages, ["b"]);
}

#[tokio::test]
async fn an_overwrite_wins_over_a_parallel_write_in_the_same_step() {
    let app = StateGraph::<Log>::new()
        .add_node(node_fn("a", append("a")))
        .add_node(node_fn("b", overwrite("b")))
        .add_node(node_fn("c", append("c")))
        .add_node(node_fn("d", append("d")))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(("b", "c"), "d")
        .compile()
        .unwrap();
    let out = app.invoke(start(), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages, ["b", "d"]);
}

#[tokio::test]
async fn two_overwrites_in_one_step_are_an_error() {
    let app = StateGraph::<Log>::new()
        .add_node(node_fn("a", append("a")))
        .add_node(node_fn("b", overwrite("b")))
        .add_node(node_fn("c", overwrite("c")))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .compile()
        .unwrap();
    let err = app.invoke(start(), &RunConfig::new()).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("Can receive only one Overwrite value per super-step."),
        "{err}"
    );
}

/// Reducers that can reject a write (docs/semantics.md §1.3).
mod fallible {
    use stategraph::checkpoint::InMemorySaver;
    use stategraph::prelude::*;

    #[derive(Debug, PartialEq)]
    struct Negative(Vec<i64>);

    impl std::fmt::Display for Negative {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "negative write {:?}", self.0)
        }
    }

    impl std::error::Error for Negative {}

    fn picky(mut a: Vec<i64>, b: Vec<i64>) -> Result<Vec<i64>, Negative> {
        if b.iter().any(|x| *x < 0) {
            return Err(Negative(b));
        }
        a.extend(b);
        Ok(a)
    }

    /// A reducer's error may be any type that converts into a boxed error.
    fn capped(a: u32, b: u32) -> Result<u32, String> {
        a.checked_add(b)
            .filter(|n| *n <= 10)
            .ok_or_else(|| format!("{a} + {b} is over the cap of 10"))
    }

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct S {
        #[reducer(picky)]
        xs: Vec<i64>,
        #[reducer(capped)]
        total: u32,
        n: u32,
    }

    /// LangGraph 1.2.22, the same graph (`xs: Annotated[list, picky]`, nodes
    /// `one` -> {"xs": [1], "n": 1} and `two` -> {"xs": [-1], "n": 2} from
    /// START, InMemorySaver):
    ///   invoke raises ValueError('negative write [-1]')
    ///   history: [(0, {'xs': [], 'n': 0}, ('one', 'two')), (-1, {'xs': []}, ('__start__',))]
    ///   pending writes of step 0: both tasks' writes
    /// Here the error is an `InvalidUpdate` naming the field and the reducer's
    /// message, with the reducer's error reachable; the step is not applied.
    #[tokio::test]
    async fn a_rejected_write_fails_the_step_and_nothing_of_it_is_applied() {
        let app = StateGraph::<S>::new()
            .add_node(node_fn("one", |_: &S| S::update().xs(vec![1]).n(1)))
            .add_node(node_fn("two", |_: &S| S::update().xs(vec![-1]).n(2)))
            .add_edge(START, "one")
            .add_edge(START, "two")
            .compile_with(InMemorySaver::new())
            .unwrap();
        let config = RunConfig::thread("t");
        let err = app
            .invoke(S::update().xs(vec![]).n(0), &config)
            .await
            .unwrap_err();
        let GraphError::InvalidUpdate(invalid) = &err else {
            panic!("expected InvalidUpdate, got {err:?}");
        };
        assert_eq!(
            invalid.message(),
            "the reducer of `xs` rejected a write: negative write [-1]"
        );
        let rejected = invalid.reducer_error().expect("the reducer's error");
        assert_eq!(
            rejected.downcast_ref::<Negative>(),
            Some(&Negative(vec![-1]))
        );

        // The thread is where the step started: step 0, both nodes still next.
        let history = app
            .get_state_history(&config, &stategraph::checkpoint::ListOptions::default())
            .await
            .unwrap();
        let steps: Vec<(i64, Vec<String>)> = history
            .iter()
            .map(|s| (s.metadata.as_ref().map_or(-2, |m| m.step), s.next.clone()))
            .collect();
        assert_eq!(
            steps,
            [
                (0, vec!["one".to_owned(), "two".to_owned()]),
                (-1, vec!["__start__".to_owned()])
            ]
        );
        assert_eq!(history[0].values.n, 0);
        assert!(history[0].values.xs.is_empty());
    }

    #[tokio::test]
    async fn an_accepted_write_folds_as_a_plain_reducer_would() {
        let app = StateGraph::<S>::new()
            .add_node(node_fn("add", |_: &S| S::update().total(4).xs(vec![2])))
            .add_edge(START, "add")
            .compile()
            .unwrap();
        let out = app
            .invoke(S::update().total(3).xs(vec![1]), &RunConfig::new())
            .await
            .unwrap();
        assert_eq!((out.total, out.xs.clone()), (7, vec![1, 2]));

        let err = app
            .invoke(S::update().total(8), &RunConfig::new())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the reducer of `total` rejected a write: 8 + 4 is over the cap of 10"
        );
    }
}
