use stategraph::func::task;

#[task]
fn borrowed(text: &str) -> usize {
    text.len()
}

#[task]
fn generic<T: serde::Serialize>(value: T) -> u32 {
    let _ = value;
    1
}

#[task]
fn pattern((a, b): (u32, u32)) -> u32 {
    a + b
}

#[task(retries = 3)]
fn unknown_option(n: u32) -> u32 {
    n
}

fn main() {}
