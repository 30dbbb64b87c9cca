use stategraph::func::task;

struct Conn;

#[task]
fn query(conn: Conn) -> u32 {
    let _ = conn;
    1
}

fn main() {}
