// A pattern as the input is one error, at the pattern: not a second one saying the
// entrypoint takes no input.
use stategraph::func::entrypoint;

#[entrypoint]
async fn pair((a, b): (u32, u32)) -> u32 {
    a + b
}

fn main() {}
