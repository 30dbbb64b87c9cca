#!/usr/bin/env bash
# The server benchmark: the quickstart agent served by graph-server
# (examples/serve.rs, SQLite file) and by LangGraph's own local server
# (`langgraph dev`, in memory, on bench/server/agent.py), driven by one load
# generator (bench/src/bin/server_load.rs) with the same requests; prints a
# table of the medians over the rounds.
#
#   bench/server.sh [--quick] [--rounds N] [--clients N] [--runs N] [--streams N]
#                   [--jobs N] [--json FILE] [--only ours|langgraph --add FILE]
#
# Each round starts each server afresh (new database, new port), ours first,
# and measures: one client's latency on runs/wait; runs/s and latency at
# --clients clients (default 50), --runs runs each (default 20) on runs/wait
# and runs/stream; --streams (default 1000) streams started at once; the
# server's peak RSS (VmHWM of its processes). --jobs is langgraph dev's
# --n-jobs-per-worker (default: the larger of its default, 10, and --clients;
# with 10 it runs 10 runs at a time and queues the rest). --quick: one round
# of a few runs each (a smoke test, no numbers to quote). --json FILE keeps
# every round's measurements. --only measures one side; --add takes the other
# side's rounds from an earlier run's --json file (LangGraph's 1 000 streams
# take it minutes a round: after a change to graph-server, measure ours only).
#
# Needs python3 with pip (installs langgraph-cli[inmem] if missing) and
# curl; builds in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3
clients=50
runs=20
single=50
streams=1000
jobs=""
json_out=""
only="ours langgraph"
add=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) rounds=1 runs=2 single=10 streams=100 ;;
        --rounds | --clients | --runs | --streams | --jobs | --json | --only | --add)
            if [ $# -lt 2 ]; then
                echo "$1 needs a value" >&2
                exit 2
            fi
            case "$1" in
                --rounds) rounds="$2" ;;
                --clients) clients="$2" ;;
                --runs) runs="$2" ;;
                --streams) streams="$2" ;;
                --jobs) jobs="$2" ;;
                --json) json_out="$2" ;;
                --only) only="$2" ;;
                --add) add="$2" ;;
            esac
            shift
            ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
for n in "$rounds" "$clients" "$runs" "$streams" ${jobs:+"$jobs"}; do
    if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
        echo "a count must be a positive whole number, not $n" >&2
        exit 2
    fi
done
case "$only" in
    ours | langgraph | "ours langgraph") ;;
    *) echo "--only takes ours or langgraph, not $only" >&2; exit 2 ;;
esac
if [ "$only" != "ours langgraph" ] && [ ! -f "$add" ]; then
    echo "--only $only needs --add FILE: the other side's rounds (an earlier --json)" >&2
    exit 2
fi
jobs="${jobs:-$((clients > 10 ? clients : 10))}"

python3 -c "import langgraph_api, langgraph_runtime_inmem" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check "langgraph==1.2.22" \
        "langgraph-cli[inmem]==0.4.40" "langgraph-api==0.16.7" "langgraph-runtime-inmem==0.36.7"

cargo build --quiet --release --example serve --features server
cargo build --quiet --release -p stategraph-bench --bin server_load
target="${CARGO_TARGET_DIR:-target}/release"

work="$(mktemp -d)"
server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
trap 'stop_server; rm -rf "$work"' EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_ok() { # PORT LOG
    for _ in $(seq 1 240); do
        curl -fsS "http://127.0.0.1:$1/ok" >/dev/null 2>&1 && return 0
        if ! kill -0 "$server_pid" 2>/dev/null; then
            tail -40 "$2" >&2
            exit 1
        fi
        sleep 0.5
    done
    echo "the server did not answer /ok in 2 minutes" >&2
    tail -40 "$2" >&2
    exit 1
}

results="$work/results.jsonl"
for round in $(seq 1 "$rounds"); do
    for side in $only; do
        dir="$work/$side-$round"
        mkdir -p "$dir"
        port="$(free_port)"
        if [ "$side" = ours ]; then
            "$target/examples/serve" "127.0.0.1:$port" "$dir/serve.db" >"$dir/server.log" 2>&1 &
        else
            # langgraph dev reads langgraph.json and the graph from its working
            # directory and writes its state there: a scratch copy. Its
            # per-run info logs go (LOG_LEVEL), as ours log nothing per run.
            cp bench/server/agent.py bench/server/langgraph.json "$dir/"
            (cd "$dir" && LOG_LEVEL=WARNING LANGGRAPH_CLI_NO_ANALYTICS=1 exec langgraph dev \
                --no-browser --no-reload --port "$port" --n-jobs-per-worker "$jobs" \
                --server-log-level WARNING >"$dir/server.log" 2>&1) &
        fi
        server_pid=$!
        wait_ok "$port" "$dir/server.log"
        echo "round $round/$rounds: $side (pid $server_pid, port $port)" >&2
        line="$("$target/server_load" --url "http://127.0.0.1:$port" --pid "$server_pid" \
            --clients "$clients" --runs "$runs" --single "$single" --streams "$streams")"
        echo "{\"server\": \"$side\", \"round\": $round, \"m\": $line}" >>"$results"
        stop_server
    done
done
if [ -n "$json_out" ]; then
    cp "$results" "$json_out"
fi
if [ "$only" != "ours langgraph" ]; then
    grep -v "\"server\": \"$only\"" "$add" >>"$results"
fi

python3 - "$results" "$clients" "$streams" <<'EOF'
import json, statistics, sys

rows = [json.loads(line) for line in open(sys.argv[1])]
clients, streams = sys.argv[2], sys.argv[3]
by = {"ours": [], "langgraph": []}
for row in rows:
    by[row["server"]].append(row["m"])

def med(side, *path):
    values = []
    for m in by[side]:
        for key in path:
            m = m[key]
        values.append(m)
    return statistics.median(values), values

metrics = [
    (f"runs/wait, {clients} clients: runs/s", ("wait", "runs_per_s"), "higher"),
    (f"runs/stream, {clients} clients: runs/s", ("stream", "runs_per_s"), "higher"),
    ("runs/wait, 1 client: p50 ms", ("single", "p50_ms"), "lower"),
    ("runs/wait, 1 client: p99 ms", ("single", "p99_ms"), "lower"),
    (f"runs/wait, {clients} clients: p50 ms", ("wait", "p50_ms"), "lower"),
    (f"runs/wait, {clients} clients: p99 ms", ("wait", "p99_ms"), "lower"),
    (f"runs/stream, {clients} clients: p50 ms", ("stream", "p50_ms"), "lower"),
    (f"runs/stream, {clients} clients: p99 ms", ("stream", "p99_ms"), "lower"),
    (f"{streams} streams at once: most open at once", ("streams", "max_open"), "higher"),
    (f"{streams} streams at once: ended with the answer", ("streams", "ok"), "higher"),
    (f"{streams} streams at once: seconds until all ended", ("streams", "wall_s"), "lower"),
    (f"{streams} streams at once: peak RSS MB", ("streams", "peak_rss_mb"), "lower"),
    ("peak RSS MB (VmHWM, whole benchmark)", ("vm_hwm_mb",), "lower"),
]
for side in by:
    for m in by[side]:
        m["streams"]["ok"] = m["streams"]["runs"] - m["streams"]["errors"]
errors = {side: sum(m[p]["errors"] for m in by[side] for p in ("single", "wait", "stream", "streams")) for side in by}

def fmt(x):
    return f"{x:,.0f}".replace(",", " ") if abs(x) >= 100 else f"{x:.3g}"

print(f"| measure (median of {len(by['ours'])} / {len(by['langgraph'])} rounds) | graph-server | langgraph dev | ratio |")
print("|---|---:|---:|---:|")
for name, path, better in metrics:
    ours, ours_all = med("ours", *path)
    theirs, theirs_all = med("langgraph", *path)
    if ours == 0 or theirs == 0:
        ratio = "–"
    elif better == "higher":
        ratio = f"{ours / theirs:.1f}×"
    else:
        ratio = f"1/{theirs / ours:.1f}"
    print(f"| {name} | {fmt(ours)} | {fmt(theirs)} | {ratio} |")
print(f"\nfailed runs (all rounds): graph-server {errors['ours']}, langgraph dev {errors['langgraph']}")
for side in by:
    print(f"{side} by round: wait runs/s {[m['wait']['runs_per_s'] for m in by[side]]}, "
          f"stream runs/s {[m['stream']['runs_per_s'] for m in by[side]]}, "
          f"VmHWM MB {[round(m['vm_hwm_mb'], 1) for m in by[side]]}")
EOF
