//! Runs the tour of `src/lib.rs` (macros that found `sg` in Cargo.toml), and the
//! same shapes with every macro told `crate = sg` (the path as an identifier, and as
//! a string), from an integration test, which sees the library as a dependency.

use renamed_dep::{count_words, declared_graph, graph, Essay};
use sg::agents::{tool, ToolCall, Toolbox};
use sg::prelude::*;

#[tokio::test]
async fn the_tour_runs_with_the_renamed_facade() -> Result<(), GraphError> {
    let essay = graph()?
        .invoke(Essay::update().topic("rust".into()), &RunConfig::new())
        .await?;
    assert_eq!(essay.drafts, ["draft 1 on rust", "draft 2 on rust"]);
    let mut reviews = essay.reviews.clone();
    reviews.sort();
    assert_eq!(
        reviews,
        ["draft 1 on rust: 4 words", "draft 2 on rust: 4 words"]
    );

    // `graph!` finds the renamed facade on its own, and is told with `crate sg;`.
    let told = sg::graph! {
        state Essay;
        crate sg;
        node renamed_dep::write, renamed_dep::fan_out, renamed_dep::review;

        START -> write;
        fan_out -> send review;
        review -> END;
    }
    .compile()?;
    for app in [declared_graph()?, told] {
        let declared = app
            .invoke(Essay::update().topic("rust".into()), &RunConfig::new())
            .await?;
        assert_eq!(declared.drafts, essay.drafts);
        let mut declared_reviews = declared.reviews.clone();
        declared_reviews.sort();
        assert_eq!(declared_reviews, reviews);
    }

    let tools = Toolbox::new(count_words);
    let call = ToolCall::new("c1", "count_words", sg::json!({ "text": "one two three" }));
    assert_eq!(tools.run(&call).await.unwrap().content, "3");
    Ok(())
}

fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
#[state(crate = sg)]
struct Tally {
    #[reducer(add)]
    total: u32,
    #[channel(topic(accumulate))]
    seen: Vec<u32>,
}

#[derive(Goto, Clone, Copy, Debug)]
#[goto(crate = "sg")]
enum Step {
    Count,
    #[goto(end)]
    Stop,
}

#[node(crate = sg)]
fn count(tally: &Tally) -> Command<Step> {
    if tally.total >= 3 {
        return Command::goto(Step::Stop);
    }
    Command::goto(Step::Count).update(Tally::update().total(1))
}

#[node(state = Tally, crate = sg)]
fn record(n: u32) -> TallyUpdate {
    Tally::update().seen_item(n)
}

/// Doubles a number.
#[tool(crate = sg)]
fn double(n: i64) -> i64 {
    n * 2
}

#[tokio::test]
async fn every_macro_takes_an_explicit_crate_path() -> Result<(), GraphError> {
    let app = StateGraph::<Tally>::new()
        .add_node(count)
        .add_node(record)
        .add_edge(START, count)
        .add_conditional_edges(START, |_: &Tally| vec![send(record, 7), send(record, 8)])
        .add_edge(record, END)
        .compile()?;
    let tally = app.invoke(Tally::update(), &RunConfig::new()).await?;
    assert_eq!(tally.total, 3);
    let mut seen = tally.seen.clone();
    seen.sort();
    assert_eq!(seen, [7, 8]);

    let tools = Toolbox::new(double);
    let call = ToolCall::new("c1", "double", sg::json!({ "n": 21 }));
    assert_eq!(tools.run(&call).await.unwrap().content, "42");
    Ok(())
}
