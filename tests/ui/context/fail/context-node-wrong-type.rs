use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct S {
    greeting: String,
}

#[derive(Default)]
struct UserCtx {
    name: String,
}

#[derive(Default)]
struct OtherCtx;

#[node]
fn greet(_: &S, ctx: &Context<UserCtx>) -> SUpdate {
    S::update().greeting(format!("hi {}", ctx.context().name))
}

fn main() {
    // The node reads a `UserCtx`, which a run of this graph does not have.
    let _ = StateGraph::<S, OtherCtx>::with_context_schema().add_node(greet);
    // Nor does a graph without a context type.
    let _ = StateGraph::<S>::new().add_node(greet);
}
