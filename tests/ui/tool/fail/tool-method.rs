use stategraph::agents::tool;

struct Client;

impl Client {
    /// Searches.
    #[tool]
    fn search(&self, query: String) -> String {
        query
    }
}

fn main() {}
