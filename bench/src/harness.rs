//! The harness rules of WORKLOADS.md: untimed build, timed runs, checks on every
//! run, RSS before and after, one JSON line per workload.
//!
//! Rule 1 (everything a run needs, inputs included, is created before timing
//! starts) for inputs a run consumes: a workload built with
//! [`Workload::prepared`] builds each run's inputs untimed, just before that
//! run (bench/anchor.py's `measure` does the same for its 3-tuple workloads).

use std::time::Instant;

/// The output of one run, handed to the check.
type RunOutput = Box<dyn std::any::Any>;

/// The inputs of one run, built by `prepare` before its timing starts.
type RunInput = Box<dyn std::any::Any>;

/// A built workload: `prepare` builds what one run consumes, untimed; `run`
/// does one timed run with it; `check` validates its output, untimed.
pub struct Workload {
    pub prepare: Box<dyn FnMut() -> RunInput>,
    pub run: Box<dyn FnMut(RunInput) -> Result<RunOutput, String>>,
    pub check: Box<dyn Fn(RunOutput) -> Result<(), String>>,
    /// For a workload with a saver: the bytes the run just finished stored
    /// (called after each run, untimed).
    pub stored: Option<Box<dyn FnMut() -> u64>>,
}

impl Workload {
    /// A workload from a typed run and check.
    pub fn new<T: 'static>(
        mut run: impl FnMut() -> Result<T, String> + 'static,
        check: impl Fn(T) -> Result<(), String> + 'static,
    ) -> Self {
        Workload::prepared(|| (), move |()| run(), check)
    }

    /// A workload whose runs consume inputs (values a run moves into a store,
    /// say): `prepare` builds one run's inputs before its timing starts
    /// (harness rule 1), `run` is timed from receiving them to its result.
    pub fn prepared<I: 'static, T: 'static>(
        mut prepare: impl FnMut() -> I + 'static,
        mut run: impl FnMut(I) -> Result<T, String> + 'static,
        check: impl Fn(T) -> Result<(), String> + 'static,
    ) -> Self {
        Workload {
            prepare: Box::new(move || Box::new(prepare()) as RunInput),
            run: Box::new(move |input| match input.downcast::<I>() {
                Ok(input) => run(*input).map(|t| Box::new(t) as RunOutput),
                Err(_) => Err("the run was prepared with an unexpected type".to_owned()),
            }),
            check: Box::new(move |out| match out.downcast::<T>() {
                Ok(t) => check(*t),
                Err(_) => Err("the run returned an unexpected type".to_owned()),
            }),
            stored: None,
        }
    }

    /// The same workload, reporting the bytes each run stores (`stored` is
    /// called after each run and returns what that run stored).
    pub fn with_stored(mut self, stored: impl FnMut() -> u64 + 'static) -> Self {
        self.stored = Some(Box::new(stored));
        self
    }
}

/// The bytes an in-memory saver stored since the last call (its first call
/// counts from empty).
pub fn memory_stored(
    saver: std::sync::Arc<stategraph::checkpoint::InMemorySaver>,
) -> impl FnMut() -> u64 + 'static {
    let mut before = 0;
    move || {
        let now = saver.stored_bytes() as u64;
        let run = now.saturating_sub(before);
        before = now;
        run
    }
}

/// The bytes a SQLite database (with its log) grew by since the last call.
pub fn sqlite_stored(db: std::path::PathBuf) -> impl FnMut() -> u64 + 'static {
    let mut before = 0;
    move || {
        let now = sqlite_file_bytes(&db);
        let run = now.saturating_sub(before);
        before = now;
        run
    }
}

/// The size of a SQLite database with its write-ahead log, in bytes.
pub fn sqlite_file_bytes(db: &std::path::Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    [db.as_os_str().to_owned(), wal]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// The floor of storing `bytes`: the median time, in milliseconds, to write
/// that many bytes into fresh memory (what a saver that keeps its values pays
/// at least). Each round allocates a new zeroed buffer (from pages not yet
/// touched, when the allocator maps them fresh) and writes every byte; the
/// buffers are kept until the end so that no round reuses another's memory.
pub fn floor_ms(bytes: u64) -> f64 {
    let Ok(n) = usize::try_from(bytes) else {
        return f64::NAN;
    };
    // Five rounds, or one for a large size (five copies would not fit).
    let rounds = if n > 400 << 20 { 1 } else { 5 };
    let mut kept = Vec::with_capacity(rounds);
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let t0 = Instant::now();
            let mut buf = vec![0u8; n];
            buf.fill(0x5a);
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            kept.push(std::hint::black_box(buf));
            ms
        })
        .collect();
    drop(kept);
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The peak resident set size of this process, in KiB (`ru_maxrss` on Linux).
pub fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse().ok())
        })
        .unwrap_or(0)
}

/// Times the runs of one workload and renders the result line.
pub fn measure(name: &str, mut workload: Workload, quick: bool) -> (String, bool) {
    let base_rss = peak_rss_kb();
    let mut times = Vec::new();
    let mut failures = Vec::new();
    let mut stored = Vec::new();
    let mut target = if quick { 1 } else { 5 };
    // A profiler's run: many runs, so the first (cold) one does not dominate.
    let fixed = std::env::var("STATEGRAPH_BENCH_RUNS").ok().and_then(|n| {
        let runs = n.trim().parse::<usize>().ok().filter(|&r| r > 0);
        if runs.is_none() {
            eprintln!(
                "STATEGRAPH_BENCH_RUNS must be a whole number of runs above 0, not {n:?}; \
                 running the usual number"
            );
        }
        runs
    });
    if let Some(n) = fixed {
        target = n;
    }
    let mut i = 0;
    while i < target {
        let input = (workload.prepare)();
        let t0 = Instant::now();
        let output = (workload.run)(input);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        times.push(ms);
        if let Some(stored_by_run) = workload.stored.as_mut() {
            stored.push(stored_by_run());
        }
        let outcome = output.and_then(|out| (workload.check)(out));
        if let Err(reason) = outcome {
            eprintln!("FAIL {name} run {i}: {reason}");
            failures.push(format!("run {i}: {reason}"));
        }
        if i == 0 && !quick && fixed.is_none() && ms > 10_000.0 {
            target = if ms > 60_000.0 { 1 } else { 3 };
        }
        i += 1;
    }
    if std::env::var_os("STATEGRAPH_BENCH_TIMES").is_some() {
        eprintln!("{name} runs: {times:?}");
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let check = if failures.is_empty() {
        "ok".to_owned()
    } else {
        format!("FAIL: {}", failures.join("; "))
    };
    // The bytes stored per run (the median run's, when runs differ) and the
    // time this machine takes to write that many bytes into fresh memory.
    stored.sort_unstable();
    let stored_bytes = stored.get(stored.len() / 2).copied();
    let mut line = serde_json::json!({
        "workload": name,
        "median_ms": round3(median),
        "min_ms": round3(sorted[0]),
        "max_ms": round3(sorted[sorted.len() - 1]),
        "runs": times.len(),
        "check": check,
        "peak_rss_kb": peak_rss_kb(),
        "base_rss_kb": base_rss,
    });
    if let Some(bytes) = stored_bytes {
        line["stored_bytes"] = bytes.into();
        line["floor_ms"] = round3(floor_ms(bytes)).into();
    }
    (line.to_string(), failures.is_empty())
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Turns a failed expectation into a check failure.
pub fn expect(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}
