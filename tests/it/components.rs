//! Typed components (issue 11): a library's compiled graph mounted in states it has
//! never seen through the fields they share, and node sets added to any graph
//! whose state has the fields they use.

use serde::de::DeserializeOwned;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::{CompiledGraph, FieldsOf, StreamEvent, SubgraphCheckpoints};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

// ------------------------------------------------------------- the "library"

stategraph::field! {
    pub Question: String;
    pub Answer: String;
    pub Sources: Vec<String>;
    pub Draft: String;
    pub Revisions: u32;
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct ResearchState {
    #[field(Question)]
    question: String,
    /// Internal to the component: never reaches the parent.
    hits: Vec<String>,
    #[field(Answer)]
    answer: String,
    #[field(Sources)]
    sources: Vec<String>,
}

/// Looks a question up in a fixed corpus, then answers from what it found.
pub struct Research {
    graph: CompiledGraph<ResearchState>,
}

impl Component for Research {
    type State = ResearchState;
    type Input = (Question,);
    type Output = (Answer, Sources);
    const NAME: &'static str = "research";

    fn graph(&self) -> &CompiledGraph<ResearchState> {
        &self.graph
    }
}

impl Research {
    fn new(runs: Arc<AtomicUsize>) -> Self {
        let corpus = ["rust is fast", "python is dynamic", "rust is typed"];
        let graph = StateGraph::<ResearchState>::new()
            .add_node(node_fn("retrieve", move |s: &ResearchState| {
                runs.fetch_add(1, Ordering::SeqCst);
                let hits = corpus
                    .iter()
                    .filter(|doc| s.question.split(' ').any(|w| doc.contains(w)))
                    .map(|doc| (*doc).to_owned())
                    .collect::<Vec<_>>();
                ResearchState::update().hits(hits)
            }))
            .add_node(node_fn("answer", |s: &ResearchState| {
                ResearchState::update()
                    .answer(format!("{} ({} sources)", s.question, s.hits.len()))
                    .sources(s.hits.iter().map(|h| format!("doc:{h}")).collect())
            }))
            .add_edge(START, "retrieve")
            .add_edge("retrieve", "answer")
            .compile()
            .unwrap();
        Research { graph }
    }
}

/// Asks a human to approve the draft before it counts as a revision.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReviewState {
    #[field(Draft)]
    draft: String,
    #[field(Revisions)]
    revisions: u32,
}

pub struct Review(CompiledGraph<ReviewState>);

impl Component for Review {
    type State = ReviewState;
    type Input = (Draft, Revisions);
    type Output = (Draft, Revisions);
    const NAME: &'static str = "review";

    fn graph(&self) -> &CompiledGraph<ReviewState> {
        &self.0
    }
}

fn review() -> Review {
    let graph = StateGraph::<ReviewState>::new()
        .add_node(node_fn("ask", |s: &ReviewState, ctx: &Context| {
            let ok: bool = ctx.interrupt(format!("approve {:?}?", s.draft))?;
            let draft = if ok {
                format!("{} [approved]", s.draft)
            } else {
                s.draft.clone()
            };
            Ok::<_, NodeError>(
                ReviewState::update()
                    .draft(draft)
                    .revisions(s.revisions + 1),
            )
        }))
        .add_edge(START, "ask")
        .compile()
        .unwrap();
    Review(graph)
}

/// Polishes the draft until it has two revisions: a node set.
pub struct Polish;

impl Polish {
    pub const ENTRY: &'static str = "polish";
}

fn polish<S: Has<Draft> + Has<Revisions>>(state: &S) -> UpdateOf<S> {
    UpdateOf::new()
        .set::<Draft>(format!("{}!", state.get::<Draft>()))
        .set::<Revisions>(state.get::<Revisions>() + 1)
}

impl<S> NodeSet<S> for Polish
where
    S: Has<Draft> + Has<Revisions> + Serialize + DeserializeOwned,
{
    fn add_to(self, graph: StateGraph<S>) -> StateGraph<S> {
        graph
            .add_node(node_fn(Self::ENTRY, polish::<S>))
            .add_conditional_edges(Self::ENTRY, |s: &S| {
                if *s.get::<Revisions>() < 2 {
                    Polish::ENTRY
                } else {
                    END
                }
            })
    }
}

// ------------------------------------------------------- two user states

/// A support desk: names its fields its own way; its sources accumulate.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Desk {
    #[field(Question)]
    ticket: String,
    #[field(Answer)]
    reply: String,
    #[reducer(concat)]
    #[field(Sources)]
    citations: Vec<String>,
    /// Not a field of the component: left alone by it.
    customer: String,
}

/// A blog: the same component answers, and the same node set polishes.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Blog {
    #[field(Question)]
    topic: String,
    #[field(Answer)]
    #[field(Draft)]
    body: String,
    #[field(Sources)]
    links: Vec<String>,
    #[field(Revisions)]
    edits: u32,
}

#[tokio::test]
async fn a_component_runs_in_two_states_through_their_own_fields() {
    let runs = Arc::new(AtomicUsize::new(0));
    let research = Research::new(Arc::clone(&runs));

    let desk_node = research.mount::<Desk>();
    let desk = StateGraph::<Desk>::new()
        .add_node(desk_node.clone())
        .add_edge(START, &desk_node)
        .compile()
        .unwrap();
    let out = desk
        .invoke(
            Desk::update()
                .ticket("typed rust".into())
                .citations(vec!["ticket:1".into()])
                .customer("ada".into()),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.reply, "typed rust (2 sources)");
    // The parent's reducer folds the component's output into what was there.
    assert_eq!(
        out.citations,
        ["ticket:1", "doc:rust is fast", "doc:rust is typed"]
    );
    assert_eq!(out.customer, "ada");

    let blog = StateGraph::<Blog>::new()
        .add_node(research.mount::<Blog>())
        .add_edge(START, Research::NAME)
        .compile()
        .unwrap();
    let out = blog
        .invoke(Blog::update().topic("python".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.body, "python (1 sources)");
    assert_eq!(out.links, ["doc:python is dynamic"]);
    assert_eq!(out.edits, 0);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_component_and_a_node_set_in_one_graph() {
    let research = Research::new(Arc::default());
    let app = StateGraph::<Blog>::new()
        .add_node(research.mount::<Blog>())
        .add_nodes(Polish)
        .add_edge(START, Research::NAME)
        .add_edge(Research::NAME, Polish::ENTRY)
        .compile()
        .unwrap();
    let out = app
        .invoke(Blog::update().topic("rust".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.body, "rust (2 sources)!!");
    assert_eq!(out.edits, 2);
}

/// A third state: only what `Polish` needs.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Post {
    #[field(Draft)]
    text: String,
    #[field(Revisions)]
    n: u32,
}

#[tokio::test]
async fn a_node_set_runs_on_the_users_own_state() {
    let app = StateGraph::<Post>::new()
        .add_nodes(Polish)
        .add_edge(START, Polish::ENTRY)
        .compile()
        .unwrap();
    let mut steps = Vec::new();
    let mut stream = app.stream(
        Post::update().text("hi".into()),
        &RunConfig::new(),
        StreamMode::Updates,
    );
    use futures::StreamExt;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Updates { node, .. } = event.unwrap() {
            steps.push(node.to_string());
        }
    }
    assert_eq!(steps, [Polish::ENTRY, Polish::ENTRY]);
}

#[tokio::test]
async fn one_component_mounted_twice_under_two_names() {
    let research = Research::new(Arc::default());
    let first = research.mount_as::<Desk>("first_look");
    let second = research.mount_as::<Desk>("second_look");
    let app = StateGraph::<Desk>::new()
        .add_node(first.clone())
        .add_node(second.clone())
        .add_edge(START, &first)
        .add_edge(&first, &second)
        .compile()
        .unwrap();
    let out = app
        .invoke(Desk::update().ticket("python".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(
        out.citations,
        ["doc:python is dynamic", "doc:python is dynamic"]
    );
}

#[tokio::test]
async fn mounting_a_node_set_twice_is_a_duplicate_node_at_compile() {
    let err = StateGraph::<Post>::new()
        .add_nodes(Polish)
        .add_nodes(Polish)
        .add_edge(START, Polish::ENTRY)
        .compile()
        .unwrap_err();
    assert!(err.to_string().contains("polish"), "{err}");
}

#[tokio::test]
async fn an_interrupt_inside_a_component_pauses_the_parent_and_resumes() {
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Article {
        #[field(Draft)]
        body: String,
        #[field(Revisions)]
        version: u32,
        #[reducer(concat)]
        log: Vec<String>,
    }
    let node = review().mount::<Article>();
    let app = StateGraph::<Article>::new()
        .add_node(node.clone())
        .add_node(node_fn("done", |s: &Article| {
            Article::update().log(vec![format!("v{} {}", s.version, s.body)])
        }))
        .add_edge(START, &node)
        .add_edge(&node, "done")
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("t");
    let paused = app
        .invoke(Article::update().body("text".into()).version(3), &config)
        .await
        .unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    assert_eq!(paused.interrupts[0].value, "approve \"text\"?");

    // The component's state is reachable in its own namespace.
    let snapshot = app.get_state_with_subgraphs(&config).await.unwrap();
    assert_eq!(snapshot.next, ["review"]);
    let child = snapshot.tasks[0].state.as_ref().unwrap();
    let child = child.downcast_ref::<ReviewState>().unwrap();
    assert_eq!(
        (child.values.draft.as_str(), child.values.revisions),
        ("text", 3)
    );

    let done = app.invoke(Command::resume(true), &config).await.unwrap();
    assert!(done.interrupts.is_empty());
    assert_eq!(done.log, ["v4 text [approved]"]);
}

#[tokio::test]
async fn a_persistent_component_keeps_its_state_across_calls() {
    // `Revisions` is an output only: the component counts its own runs.
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct CounterState {
        #[field(Draft)]
        seen: String,
        #[field(Revisions)]
        calls: u32,
    }
    struct Counter(CompiledGraph<CounterState>);
    impl Component for Counter {
        type State = CounterState;
        type Input = (Draft,);
        type Output = (Revisions,);
        const NAME: &'static str = "counter";
        fn graph(&self) -> &CompiledGraph<CounterState> {
            &self.0
        }
    }
    let counter = Counter(
        StateGraph::<CounterState>::new()
            .add_node(node_fn("count", |s: &CounterState| {
                CounterState::update().calls(s.calls + 1)
            }))
            .add_edge(START, "count")
            .compile()
            .unwrap(),
    );
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Page {
        #[field(Draft)]
        text: String,
        #[field(Revisions)]
        count: u32,
    }
    let node = counter
        .mount::<Page>()
        .checkpoints(SubgraphCheckpoints::Persistent);
    let app = StateGraph::<Page>::new()
        .add_node(node.clone())
        .add_edge(START, &node)
        .compile_with(InMemorySaver::new())
        .unwrap();
    let config = RunConfig::thread("p");
    for expected in 1..=3 {
        let out = app
            .invoke(Page::update().text(format!("call {expected}")), &config)
            .await
            .unwrap();
        assert_eq!(out.count, expected);
    }
}

#[test]
fn field_lists_name_their_markers() {
    assert_eq!(<() as FieldsOf<Desk>>::names(), Vec::<&str>::new());
    let names = <(Answer, Sources) as FieldsOf<Desk>>::names();
    assert_eq!(names.len(), 2);
    assert!(names[0].ends_with("Answer") && names[1].ends_with("Sources"));
}

#[tokio::test]
async fn a_component_fanned_out_over_send_payloads() {
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Batch {
        questions: Vec<String>,
        #[reducer(concat)]
        answers: Vec<String>,
    }
    let research = Research::new(Arc::default());
    // One run of the component per question; each answer appended to the batch.
    let node = research.mount_with(
        "ask",
        |q: &String| ResearchState::update().question(q.clone()),
        |done: ResearchState| Batch::update().answers(vec![done.answer]),
    );
    let fan_out = {
        let node = node.clone();
        move |b: &Batch| {
            b.questions
                .iter()
                .map(|q| send(&node, q.clone()))
                .collect::<Vec<_>>()
        }
    };
    let app = StateGraph::<Batch>::new()
        .add_node(node)
        .add_conditional_edges(START, fan_out)
        .compile()
        .unwrap();
    let out = app
        .invoke(
            Batch::update().questions(vec!["python".into(), "typed".into()]),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.answers, ["python (1 sources)", "typed (1 sources)"]);
}
