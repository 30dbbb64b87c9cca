use stategraph::prelude::*;
use stategraph::Subgraph;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

#[derive(Default)]
struct UserCtx {
    n: u32,
}

#[derive(Default)]
struct OtherCtx;

#[node]
fn read(_: &S, ctx: &Context<UserCtx>) -> SUpdate {
    S::update().n(ctx.context().n)
}

fn main() {
    let child = StateGraph::<S, UserCtx>::with_context_schema()
        .add_node(read)
        .add_edge(START, read)
        .compile()
        .unwrap();
    // The child's nodes read a `UserCtx`: a parent of another context type
    // cannot give it one.
    let _ = StateGraph::<S, OtherCtx>::with_context_schema().add_node(Subgraph::new("child", child));
}
