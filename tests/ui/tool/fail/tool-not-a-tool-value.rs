use stategraph::agents::Toolbox;

struct Search;

fn main() {
    let _tools = Toolbox::new(Search);
}
