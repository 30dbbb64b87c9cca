use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

#[derive(Default)]
struct UserCtx {
    admin: bool,
}

#[derive(Default)]
struct OtherCtx;

#[node]
fn step(s: &S) -> SUpdate {
    S::update().n(s.n + 1)
}

fn main() {
    // A closure node and a router reading another context type than the graph's.
    let _ = StateGraph::<S, OtherCtx>::with_context_schema()
        .add_node(node_fn("check", |_: &S, ctx: &Context<UserCtx>| {
            assert!(ctx.context().admin);
        }))
        .add_node(step)
        .add_conditional_edges(step, |_: &S, ctx: &Context<UserCtx>| {
            if ctx.context().admin {
                "check"
            } else {
                END
            }
        });
}
