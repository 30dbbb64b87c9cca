//! Benchmark binary: LangGraph's own benchmark workloads and ours (each described
//! in `workloads/`), run against Python LangGraph by `bench/compare.sh`.
//!
//! `stategraph-bench [--only NAME[,NAME...]] [--quick] [--list]`: one JSON line per
//! workload on stdout; without `--only`, each workload runs in its own child process.

#![forbid(unsafe_code)]

mod harness;
mod postgres;
mod workloads;

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut only: Vec<String> = Vec::new();
    let mut quick = false;
    let mut list = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--list" => list = true,
            "--only" => match args.next() {
                Some(names) => only.extend(
                    names
                        .split(',')
                        .filter(|n| !n.is_empty())
                        .map(str::to_owned),
                ),
                None => {
                    eprintln!("--only needs a workload name");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!(
                    "unknown argument {other:?}; usage: [--only NAME[,NAME...]] [--quick] [--list]"
                );
                return ExitCode::from(2);
            }
        }
    }
    // Workloads that need a server run only when named with --only.
    let known: Vec<&str> = workloads::NAMES
        .iter()
        .chain(postgres::NAMES)
        .copied()
        .collect();
    if list {
        for name in &known {
            println!("{name}");
        }
        return ExitCode::SUCCESS;
    }
    let names: Vec<String> = if only.is_empty() {
        workloads::NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        only
    };
    if let Some(bad) = names
        .iter()
        .find(|n| !known.contains(&n.as_str()) && !workloads::is_sized(n))
    {
        eprintln!("unknown workload {bad:?}; known: {known:?}");
        return ExitCode::from(2);
    }

    if names.len() == 1 {
        let Some(workload) = workloads::build(&names[0]).or_else(|| postgres::build(&names[0]))
        else {
            return ExitCode::from(2);
        };
        let (line, ok) = harness::measure(&names[0], workload, quick);
        workloads::remove_scratch();
        println!("{line}");
        return if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }

    // One child process per workload, so each reports its own peak RSS.
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("cannot find the bench binary to re-run it: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut all_ok = true;
    for name in &names {
        let mut cmd = Command::new(&exe);
        cmd.args(["--only", name]);
        if quick {
            cmd.arg("--quick");
        }
        let output = cmd.stderr(std::process::Stdio::inherit()).output();
        let line = output
            .as_ref()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .last()
                    .map(str::to_owned)
            })
            .filter(|l| l.starts_with('{'));
        match (line, output) {
            (Some(line), Ok(out)) => {
                println!("{line}");
                all_ok &= out.status.success();
            }
            (_, out) => {
                all_ok = false;
                let code = out
                    .map(|o| o.status.to_string())
                    .unwrap_or_else(|e| e.to_string());
                println!(
                    "{}",
                    serde_json::json!({"workload": name, "median_ms": null, "min_ms": null,
                        "max_ms": null, "runs": 0, "check": format!("FAIL: child exited {code}")})
                );
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
