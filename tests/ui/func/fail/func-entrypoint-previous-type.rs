use stategraph::func::{entrypoint, Final};

// `previous` is what the last run saved: a `u32` here, not a `String`.
#[entrypoint]
async fn counts(n: u32, previous: Option<String>) -> Final<String, u32> {
    let _ = previous;
    Final { value: n.to_string(), save: n }
}

fn main() {}
