// A component whose output field the parent does not provide.
use stategraph::prelude::*;
use stategraph::CompiledGraph;

stategraph::field! {
    pub Question: String;
    pub Answer: String;
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
pub struct ResearchState {
    #[field(Question)]
    question: String,
    #[field(Answer)]
    answer: String,
}

pub struct Research(CompiledGraph<ResearchState>);

impl Component for Research {
    type State = ResearchState;
    type Input = (Question,);
    type Output = (Answer,);
    const NAME: &'static str = "research";

    fn graph(&self) -> &CompiledGraph<ResearchState> {
        &self.0
    }
}

// `Desk` has a question, and a `reply` it does not mark as the `Answer`.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Desk {
    #[field(Question)]
    ticket: String,
    reply: String,
}

fn mount(research: &Research) {
    let _node = research.mount::<Desk>();
}

fn main() {}
