use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

/// A database handle: no `Default`.
struct Db {
    url: String,
}

#[node]
fn read(_: &S, ctx: &Context<Db>) -> SUpdate {
    S::update().n(ctx.context().url.len() as u32)
}

async fn run() {
    let app = StateGraph::<S, Db>::with_context_schema()
        .add_node(read)
        .add_edge(START, read)
        .compile()
        .unwrap();
    // A run of this graph needs its `Db`: `app.with_context(db).invoke(..)`.
    let _ = app.invoke(S::update(), &RunConfig::new()).await;
    // And a value of that type.
    let _ = app.with_context(42u32);
}

fn main() {
    let _ = run();
}
