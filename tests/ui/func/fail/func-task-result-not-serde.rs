use stategraph::func::task;

struct Handle;

#[task]
fn open() -> Handle {
    Handle
}

fn main() {}
