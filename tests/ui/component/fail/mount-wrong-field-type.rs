// The parent marks a field of another type with the component's marker.
use stategraph::prelude::*;
use stategraph::CompiledGraph;

stategraph::field! {
    pub Question: String;
    pub Score: f64;
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
pub struct GradeState {
    #[field(Question)]
    question: String,
    #[field(Score)]
    score: f64,
}

pub struct Grader(CompiledGraph<GradeState>);

impl Component for Grader {
    type State = GradeState;
    type Input = (Question,);
    type Output = (Score,);
    const NAME: &'static str = "grader";

    fn graph(&self) -> &CompiledGraph<GradeState> {
        &self.0
    }
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Exam {
    #[field(Question)]
    question: String,
    #[field(Score)]
    score: u32,
}

fn mount(grader: &Grader) {
    let _node = grader.mount::<Exam>();
}

fn main() {}
