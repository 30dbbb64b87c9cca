// The README's compile_fail example ("A reducer of the wrong shape does not
// compile"), kept here so that the message the README quotes is rustc's.
use stategraph::prelude::*;

fn count(a: u32) -> u32 { a + 1 }

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Bad {
    #[reducer(count)]
    n: u32,
}
fn main() {}
