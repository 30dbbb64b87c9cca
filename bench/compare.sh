#!/usr/bin/env bash
# Runs the benchmark workloads on Python LangGraph (the anchor)
# and on stategraph, interleaved workload by workload on the same machine, and
# prints a table: median of each, the ratio, and peak RSS of each; for a
# workload with a saver, the bytes our run stored and the floor: the time this
# machine takes to write that many bytes into fresh memory.
#
#   bench/compare.sh [--quick] [--only NAME[,NAME...]] [--rounds N]
#
# --rounds N runs the whole set N times, each workload interleaved with the
# anchor in every round; the table then gives the median of the rounds' medians,
# each round's ratio, and the largest peak RSS. On a machine whose timings drift
# from one minute to the next, a ratio is a range: read the rounds.
#
# Without --only: every workload the anchor has. Workloads only we have (see
# `stategraph-bench --list`) run with --only; the postgres_* ones need a server
# named in STATEGRAPH_BENCH_PG_URL.
#
# Needs python3; installs langgraph==1.2.22 with pip if it is missing. The anchor
# script is looked up in $PYTHON_ANCHOR, then ../shared/bench/python_anchor.py;
# the Python side of the workloads added here since (chain_*, functional_*) is
# bench/anchor.py.
set -euo pipefail
cd "$(dirname "$0")/.."

anchor="${PYTHON_ANCHOR:-../shared/bench/python_anchor.py}"
if [ ! -f "$anchor" ]; then
    echo "python anchor not found at $anchor (set PYTHON_ANCHOR)" >&2
    exit 2
fi
python3 -c "import langgraph.checkpoint.sqlite, sqlite_vec" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check "langgraph==1.2.22" \
        "langgraph-checkpoint-sqlite==3.1.2" "sqlite-vec==0.1.9"
# LangGraph's SqliteStore (store_*_sqlite) loads the sqlite-vec extension; a
# Python whose sqlite3 cannot load extensions gets pysqlite3 (bench/anchor.py).
python3 -c 'import sqlite3; sqlite3.connect(":memory:").enable_load_extension' 2>/dev/null ||
    python3 -c "import pysqlite3" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check pysqlite3-binary
# The store_* workloads: LangGraph's InMemoryStore computes similarities with
# numpy when it is installed (and warns that it is slow without it).
python3 -c "import numpy" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check numpy
own_anchor=bench/anchor.py

args=()
only=""
rounds=1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) args+=(--quick) ;;
        --only | --rounds)
            if [ $# -lt 2 ]; then
                echo "$1 needs a value" >&2
                exit 2
            fi
            if [ "$1" = --only ]; then only="$2"; else rounds="$2"; fi
            shift
            ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
    echo "--rounds needs a positive whole number, not $rounds" >&2
    exit 2
fi

cargo build --quiet --release -p stategraph-bench
# Where cargo put it: $CARGO_TARGET_DIR (relative to the repository) or target/.
ours="${CARGO_TARGET_DIR:-target}/release/stategraph-bench"
shared_names=$(python3 "$anchor" --list)
python_names=$(printf '%s\n%s\n' "$shared_names" "$(python3 "$own_anchor" --list)")
if [ -n "$only" ]; then
    names=$(echo "$only" | tr ',' '\n')
else
    # The workloads both sides have. Ours alone (checkpoint_cost_*, and postgres_*,
    # which need STATEGRAPH_BENCH_PG_URL) run with --only.
    # The chain_* workloads run with --only too: LangGraph's own cost grows with
    # the square of the chain (chain_10000_ckpt_memory ran over 15 minutes).
    # So do the store_* ones (LangGraph's store_put_10k_sqlite takes ~90 s a run):
    #   bench/compare.sh --only store_put_10k_memory,store_put_10k_sqlite,store_search_10k_memory,store_search_10k_sqlite
    names=$("$ours" --list | grep -Fx -f <(echo "$shared_names"))
fi

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
    for name in $names; do
        echo "-- $name (round $round of $rounds)" >&2
        # chat_<n>_turns_sync_*: any number of turns, on bench/anchor.py.
        # LangGraph has one SQLite layout: our opt-in append layout
        # (`_sqlite_append`) is compared with it, under our name.
        py_name="$name"
        [[ "$name" =~ ^(chat_[1-9][0-9]*_turns_sync_sqlite)_append$ ]] && py_name="${BASH_REMATCH[1]}"
        if grep -qx "$py_name" <<<"$python_names" ||
            [[ "$py_name" =~ ^chat_[1-9][0-9]*_turns_sync_(memory|sqlite)$ ]]; then
            side="$anchor"
            grep -qx "$py_name" <<<"$shared_names" || side="$own_anchor"
            python3 "$side" --only "$py_name" "${args[@]}" | tail -n 1 |
                sed -E "s/\"workload\": *\"$py_name\"/\"workload\": \"$name\"/; s/^/python /" >>"$results" ||
                echo "python {\"workload\": \"$name\", \"check\": \"FAIL: anchor exited non-zero\"}" >>"$results"
        fi
        "$ours" --only "$name" "${args[@]}" | tail -n 1 | sed 's/^/ours /' >>"$results" ||
            echo "ours {\"workload\": \"$name\", \"check\": \"FAIL: bench exited non-zero\"}" >>"$results"
    done
done

python3 - "$results" <<'PY'
import json, statistics, sys

# workload -> side -> one result per round, in order.
rows = {}
for line in open(sys.argv[1]):
    who, _, payload = line.partition(" ")
    data = json.loads(payload)
    rows.setdefault(data["workload"], {}).setdefault(who, []).append(data)

def median_ms(runs):
    ms = [d["median_ms"] for d in runs if d.get("median_ms") is not None]
    return statistics.median(ms) if ms else None

def fmt_ratio(r):
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"

def peak_kb(runs):
    kb = [d["peak_rss_kb"] for d in runs if d.get("peak_rss_kb") is not None]
    return str(max(kb)) if kb else "-"

def checks(runs):
    seen = [d.get("check", "?") for d in runs]
    bad = [c for c in seen if c != "ok"]
    return bad[0] if bad else ("ok" if seen else "-")

def stored(runs):
    kb = [d["stored_bytes"] for d in runs if d.get("stored_bytes") is not None]
    return f"{statistics.median(kb) / 1e6:.2f}" if kb else "-"

def floor(runs):
    ms = [d["floor_ms"] for d in runs if d.get("floor_ms") is not None]
    return f"{statistics.median(ms):.3f}" if ms else "-"

several = max((len(v) for r in rows.values() for v in r.values()), default=1) > 1
head = "| workload | python ms | ours ms | ratio |"
rule = "|---|---:|---:|---:|"
if several:
    head += " ratio per round |"
    rule += "---:|"
print(head + " python peak RSS KiB | ours peak RSS KiB | ours stored MB/run | floor ms | checks |")
print(rule + "---:|---:|---:|---:|---|")
for name, r in rows.items():
    p, o = r.get("python", []), r.get("ours", [])
    pm, om = median_ms(p), median_ms(o)
    ratio = fmt_ratio(pm / om) if pm and om else "-"
    cells = [name, f"{pm:.3f}" if pm else "-", f"{om:.3f}" if om else "-", ratio]
    if several:
        per_round = [
            fmt_ratio(a["median_ms"] / b["median_ms"])
            for a, b in zip(p, o)
            if a.get("median_ms") and b.get("median_ms")
        ]
        cells.append(", ".join(per_round) or "-")
    sides = " / ".join(checks(v) for v in (p, o) if v)
    cells += [peak_kb(p), peak_kb(o), stored(o), floor(o), sides]
    print("| " + " | ".join(cells) + " |")
PY
