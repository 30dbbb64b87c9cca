//! A submitter and worker processes sharing one PostgreSQL database.
//!
//! ```sh
//! STATEGRAPH_PG_URL=postgres://postgres@127.0.0.1:5432/postgres \
//!     cargo run -p stategraph-postgres --example workers
//! ```
//!
//! The submitter queues 3 orders for each of 20 customers (one thread per
//! customer) on a `RunQueue`, then starts 4 worker processes (this program again,
//! with the argument `worker`). Each worker claims runs with `FOR UPDATE SKIP
//! LOCKED`, runs the graph on the run's thread under the thread's lock, and marks
//! the run done. Worker 0 "crashes" on its first run (exits without completing
//! it): once its lease expires another worker claims that run, sees that it had
//! started, and resumes it instead of applying its input again. At the end every
//! customer's thread holds each of its orders exactly once.

use graph_postgres::{PostgresSaver, QueuedRun, RunQueue};
use stategraph::prelude::*;
use std::process::{Command as Process, ExitCode};
use std::time::{Duration, Instant};

const CUSTOMERS: usize = 20;
const ORDERS_PER_CUSTOMER: usize = 3;
const WORKERS: usize = 4;
const LEASE: Duration = Duration::from_secs(2);

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// A customer's thread: every order received, then confirmed.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Customer {
    #[reducer(concat)]
    log: Vec<String>,
}

/// What the submitter queues.
#[derive(Debug, Serialize, Deserialize)]
struct Order {
    item: String,
}

#[node]
async fn confirm(customer: &Customer) -> CustomerUpdate {
    tokio::time::sleep(Duration::from_millis(5)).await;
    let last = customer.log.last().cloned().unwrap_or_default();
    Customer::update().log(vec![format!(
        "confirmed {}",
        last.trim_start_matches("received ")
    )])
}

fn app(saver: &PostgresSaver) -> Result<CompiledGraph<Customer>, GraphError> {
    StateGraph::<Customer>::new()
        .add_node(confirm)
        .add_edge(START, confirm)
        .compile_with(saver.clone())
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Runs `run` on its thread: the first attempt applies the input; a later one
/// whose predecessor had already checkpointed resumes instead.
async fn execute(
    saver: &PostgresSaver,
    app: &CompiledGraph<Customer>,
    run: &QueuedRun,
) -> Result<(), Error> {
    let lock = saver.lock_thread(&run.thread_id).await?;
    let config = run.run_config();
    if run.started(saver).await? {
        app.invoke(None, &config).await?;
    } else {
        let order: Order = serde_json::from_value(run.input.clone())?;
        let input = Customer::update().log(vec![format!("received {}", order.item)]);
        app.invoke(input, &config).await?;
    }
    lock.unlock().await?;
    Ok(())
}

async fn worker(url: &str, id: usize) -> Result<(), Error> {
    let saver = PostgresSaver::connect(url).await?;
    let queue = RunQueue::open(&saver, "orders").await?;
    let app = app(&saver)?;
    let name = format!("worker-{id} (pid {})", std::process::id());
    let mut idle_since = Instant::now();
    let mut done = 0;
    loop {
        let Some(run) = queue.claim(&name, LEASE).await? else {
            // Stop once the queue has stayed empty for a while.
            if queue.open_runs().await? == 0 || idle_since.elapsed() > LEASE * 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        idle_since = Instant::now();
        if id == 0 && done == 0 && run.attempt == 1 {
            // Simulated crash after the run checkpointed, before it was marked done.
            execute(&saver, &app, &run).await?;
            eprintln!(
                "{name}: crashing after run {} without completing it",
                run.id
            );
            std::process::exit(0);
        }
        match execute(&saver, &app, &run).await {
            Ok(()) => {
                queue.complete(&run).await?;
            }
            Err(e) => {
                queue.fail(&run, &e.to_string()).await?;
            }
        }
        done += 1;
    }
    eprintln!("{name}: {done} runs");
    Ok(())
}

async fn submitter(url: &str) -> Result<(), Error> {
    let saver = PostgresSaver::connect(url).await?;
    let queue = RunQueue::open(&saver, "orders").await?;
    let prefix = format!("customer-{}", std::process::id());
    for order in 0..ORDERS_PER_CUSTOMER {
        for customer in 0..CUSTOMERS {
            let item = format!("item-{order}");
            queue
                .submit(&format!("{prefix}-{customer:02}"), &Order { item })
                .await?;
        }
    }
    println!(
        "submitted {} runs on {CUSTOMERS} threads; starting {WORKERS} workers",
        CUSTOMERS * ORDERS_PER_CUSTOMER
    );
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for id in 0..WORKERS {
        children.push(
            Process::new(&exe)
                .arg("worker")
                .arg(id.to_string())
                .spawn()?,
        );
    }
    for mut child in children {
        child.wait()?;
    }
    // Workers may exit while the crashed run still waits for its lease: finish
    // what is left here.
    worker(url, WORKERS).await?;

    let app = app(&saver)?;
    for customer in 0..CUSTOMERS {
        let thread = RunConfig::thread(format!("{prefix}-{customer:02}"));
        let log = app.get_state(&thread).await?.values.log;
        let expected: Vec<String> = (0..ORDERS_PER_CUSTOMER)
            .flat_map(|o| [format!("received item-{o}"), format!("confirmed item-{o}")])
            .collect();
        if log != expected {
            return Err(format!("{prefix}-{customer:02}: {log:?}, expected {expected:?}").into());
        }
    }
    println!("every customer's thread has each order exactly once, in order");
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let Ok(url) = std::env::var("STATEGRAPH_PG_URL") else {
        eprintln!(
            "set STATEGRAPH_PG_URL to a PostgreSQL database, e.g. \
             STATEGRAPH_PG_URL=postgres://postgres@127.0.0.1:5432/postgres"
        );
        return ExitCode::from(2);
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("worker") => {
            let id = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            worker(&url, id).await
        }
        _ => submitter(&url).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
