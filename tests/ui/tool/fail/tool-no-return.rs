use stategraph::agents::tool;

/// Logs a line.
#[tool]
fn log(line: String) {
    println!("{line}");
}

fn main() {}
