use stategraph::agents::tool;

struct Point {
    x: f64,
    y: f64,
}

/// Distance to the origin.
#[tool]
fn norm(p: Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

fn main() {}
