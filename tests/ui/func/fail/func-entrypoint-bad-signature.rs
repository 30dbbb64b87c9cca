use stategraph::func::entrypoint;

#[entrypoint]
fn not_async(n: u32) -> u32 {
    n
}

#[entrypoint]
async fn previous_not_option(n: u32, previous: u32) -> u32 {
    n + previous
}

#[entrypoint]
async fn two_inputs(a: u32, b: u32) -> u32 {
    a + b
}

fn main() {}
