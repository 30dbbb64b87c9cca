// A component declaring an output field its own state does not have.
use stategraph::prelude::*;
use stategraph::CompiledGraph;

stategraph::field! {
    pub Question: String;
    pub Sources: Vec<String>;
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
pub struct ResearchState {
    #[field(Question)]
    question: String,
    sources: Vec<String>,
}

pub struct Research(CompiledGraph<ResearchState>);

impl Component for Research {
    type State = ResearchState;
    type Input = (Question,);
    type Output = (Sources,);
    const NAME: &'static str = "research";

    fn graph(&self) -> &CompiledGraph<ResearchState> {
        &self.0
    }
}

fn main() {}
