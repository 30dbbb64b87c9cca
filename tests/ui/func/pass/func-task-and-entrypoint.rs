use stategraph::func::{entrypoint, interrupt, task, Entrypoint, Final};
use stategraph::prelude::*;

#[task]
async fn fetch(url: String) -> Result<String, NodeError> {
    Ok(url)
}

#[task(name = "count", retry = stategraph::RetryPolicy::new(), timeout = std::time::Duration::from_secs(1))]
fn count(text: String) -> usize {
    text.len()
}

#[task]
fn nothing() {}

#[entrypoint]
async fn workflow(
    urls: Vec<String>,
    previous: Option<usize>,
    ctx: &Context,
) -> Result<Final<usize, usize>, NodeError> {
    let _ = ctx.thread_id();
    nothing().await?;
    let pages = futures::future::try_join_all(urls.into_iter().map(fetch)).await?;
    let mut total = previous.unwrap_or(0);
    for page in pages {
        total += count(page).await?;
    }
    let ok: bool = interrupt("keep?")?;
    Ok(Final {
        value: total,
        save: if ok { total } else { 0 },
    })
}

pub fn main() {
    let _ = Entrypoint::new(workflow).compile();
}
