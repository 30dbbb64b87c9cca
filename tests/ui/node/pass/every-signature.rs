// Every supported #[node] signature, checked through the Node / NodeSpec traits
// (without building a graph).
use stategraph::prelude::*;
use stategraph::{Destination, IntoNodeSpec, Node, NodeSpec, State, Targets};

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default, Debug, Serialize, Deserialize)]
pub struct Agent {
    #[reducer(concat)]
    log: Vec<String>,
    turns: u32,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Route {
    Agent,
    Tools,
    #[goto(end)]
    Done,
}

#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("failed")
    }
}

impl std::error::Error for Failed {}

/// Decides where to go next.
#[node]
async fn agent(state: &Agent) -> Command<Route> {
    if state.turns >= 2 {
        Command::goto(Route::Done)
    } else {
        Command::goto(Route::Tools).update(Agent::update().turns(state.turns + 1))
    }
}

#[node]
fn sync_node(state: &Agent) -> AgentUpdate {
    Agent::update().log(vec![format!("turn {}", state.turns)])
}

#[node]
async fn with_ctx(_state: &Agent, ctx: &Context) -> AgentUpdate {
    Agent::update().log(vec![ctx.node().to_owned()])
}

#[node]
fn owned_ctx(_: &Agent, ctx: Context) -> AgentUpdate {
    Agent::update().log(vec![ctx.task_id().to_owned()])
}

#[node]
fn owned_input(state: Agent) -> AgentUpdate {
    Agent::update().turns(state.turns * 2)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkItem {
    id: u32,
}

/// A payload node, reached only by `send`.
#[node]
pub fn worker(item: WorkItem) -> AgentUpdate {
    Agent::update().log(vec![format!("item {}", item.id)])
}

#[node]
fn by_ref_payload(n: &u32) -> AgentUpdate {
    Agent::update().turns(*n)
}

#[node(state = Agent)]
fn payload_command(item: &WorkItem) -> Command<Route> {
    Command::goto(Route::Agent).update(Agent::update().turns(item.id))
}

#[node]
async fn fallible(state: &Agent) -> Result<Command<Route>, Failed> {
    if state.turns > 10 {
        return Err(Failed);
    }
    Ok(Command::goto(Route::Agent))
}

#[node]
fn many(_state: &Agent) -> Vec<Command<Route>> {
    vec![Command::goto(Route::Agent), Command::goto(Route::Tools)]
}

#[node]
fn maybe(_state: &Agent) -> Option<stategraph::Command<&str>> {
    None
}

#[node]
fn by_name(_state: &Agent) -> Command<&'static str> {
    Command::goto("tools")
}

#[node]
fn explicit_update_type(_state: &Agent) -> Command<Route, AgentUpdate> {
    Command::goto(Route::Done)
}

#[node]
fn sends(state: &Agent) -> Vec<stategraph::Send> {
    (0..state.turns)
        .map(|id| send(worker, WorkItem { id }))
        .collect()
}

#[node]
async fn nothing(_state: &Agent) {}

#[node]
fn updates(_state: &Agent) -> Vec<AgentUpdate> {
    vec![Agent::update().turns(1), Agent::update().log(vec![])]
}

#[node]
#[allow(clippy::unnecessary_wraps)]
fn result_update(_state: &Agent) -> Result<AgentUpdate, NodeError> {
    Ok(Agent::update())
}

#[node]
fn r#loop(_state: &Agent) {}

mod nested {
    use super::*;

    #[node]
    pub(crate) fn inner(_state: &Agent) -> AgentUpdate {
        Agent::update()
    }
}

/// Accepts what `add_node` accepts: the name of a `#[node]` fn.
fn is_node<S: State, M, N: IntoNodeSpec<M>>(_: N)
where
    N::Spec: Node<S>,
{
}

/// The node value behind a `#[node]` fn's name.
fn spec<M, N: IntoNodeSpec<M>>(node: N) -> N::Spec {
    node.into_spec()
}

/// Polls a future that is ready at once (the async nodes here never wait).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut cx) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("the future is not ready"),
    }
}

pub fn main() {
    is_node::<Agent, _, _>(agent);
    is_node::<Agent, _, _>(sync_node);
    is_node::<Agent, _, _>(with_ctx);
    is_node::<Agent, _, _>(owned_ctx);
    is_node::<Agent, _, _>(owned_input);
    is_node::<Agent, _, _>(worker);
    is_node::<Agent, _, _>(by_ref_payload);
    is_node::<Agent, _, _>(payload_command);
    is_node::<Agent, _, _>(fallible);
    is_node::<Agent, _, _>(many);
    is_node::<Agent, _, _>(by_name);
    is_node::<Agent, _, _>(explicit_update_type);
    is_node::<Agent, _, _>(sends);
    is_node::<Agent, _, _>(nothing);
    is_node::<Agent, _, _>(updates);
    is_node::<Agent, _, _>(result_update);
    is_node::<Agent, _, _>(r#loop);
    is_node::<Agent, _, _>(nested::inner);
    let _ = maybe;

    assert_eq!(spec(agent).name(), "agent");
    assert_eq!(spec(r#loop).name(), "loop");
    assert_eq!(spec(nested::inner).name(), "inner");
    let _: <worker as NodeSpec>::Input = WorkItem { id: 1 };
    let _: <by_ref_payload as NodeSpec>::Input = 1u32;
    let _: <agent as NodeSpec>::Input = Agent::default();

    let declared = Targets::Declared(&[
        Destination::Node("agent"),
        Destination::Node("tools"),
        Destination::End,
    ]);
    assert_eq!(Node::<Agent>::targets(&spec(agent)), declared);
    assert_eq!(Node::<Agent>::targets(&spec(fallible)), declared);
    assert_eq!(Node::<Agent>::targets(&spec(many)), declared);
    assert_eq!(Node::<Agent>::targets(&spec(by_name)), Targets::Dynamic);
    assert_eq!(Node::<Agent>::targets(&spec(sends)), Targets::Dynamic);
    assert_eq!(Node::<Agent>::targets(&spec(sync_node)), Targets::None);
    assert_eq!(Node::<Agent>::targets(&spec(nothing)), Targets::None);

    // The body stays callable, e.g. from unit tests.
    let state = Agent {
        turns: 2,
        ..Agent::default()
    };
    let update = sync_node::call(&state);
    assert_eq!(format!("{update:?}"), r#"AgentUpdate { log: ["turn 2"] }"#);
    assert_eq!(
        format!("{:?}", owned_input::call(state.clone())),
        "AgentUpdate { turns: 4 }"
    );
    assert_eq!(
        format!("{:?}", worker::call(WorkItem { id: 7 })),
        r#"AgentUpdate { log: ["item 7"] }"#
    );
    let command = block_on(agent::call(&state));
    assert!(matches!(
        command.routes(),
        [stategraph::Route::To(Route::Done)]
    ));
    let command = payload_command::call(&WorkItem { id: 3 });
    assert_eq!(
        format!("{:?}", command.update_ref()),
        "Some(AgentUpdate { turns: 3 })"
    );

    // The node value behind the name is a Copy struct that prints as the node.
    let copy = spec(agent);
    assert_eq!(format!("{copy:?}"), "agent");
    // The name stays free for local bindings and parameters: the value `agent` is a
    // fn, which bindings may shadow (a unit struct or a const would turn them into
    // patterns and fail to compile).
    let agent = "a local binding";
    let shadow = |worker: u32| worker + 1;
    assert_eq!((agent, shadow(1)), ("a local binding", 2));
    let fan_out: Vec<stategraph::Send> = vec![send(worker, WorkItem { id: 1 })];
    assert_eq!(fan_out[0].node(), "worker");
}
