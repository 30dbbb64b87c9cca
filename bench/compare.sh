#!/usr/bin/env bash
# Runs the workloads of shared/bench/WORKLOADS.md on Python LangGraph (the anchor)
# and on stategraph, interleaved workload by workload on the same machine, and
# prints a table: median of each, the ratio, and peak RSS of each.
#
#   bench/compare.sh [--quick] [--only NAME[,NAME...]]
#
# Without --only: every workload the anchor has. Workloads only we have (see
# `stategraph-bench --list`) run with --only; the postgres_* ones need a server
# named in STATEGRAPH_BENCH_PG_URL.
#
# Needs python3; installs langgraph==1.2.22 with pip if it is missing. The anchor
# script is looked up in $PYTHON_ANCHOR, then ../shared/bench/python_anchor.py.
set -euo pipefail
cd "$(dirname "$0")/.."

anchor="${PYTHON_ANCHOR:-../shared/bench/python_anchor.py}"
if [ ! -f "$anchor" ]; then
    echo "python anchor not found at $anchor (set PYTHON_ANCHOR)" >&2
    exit 2
fi
python3 -c "import langgraph" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check "langgraph==1.2.22"

args=()
only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) args+=(--quick) ;;
        --only) only="$2"; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

cargo build --quiet --release -p stategraph-bench
ours=target/release/stategraph-bench
python_names=$(python3 "$anchor" --list)
if [ -n "$only" ]; then
    names=$(echo "$only" | tr ',' '\n')
else
    # The workloads both sides have. Ours alone (checkpoint_cost_*, and postgres_*,
    # which need STATEGRAPH_BENCH_PG_URL) run with --only.
    names=$("$ours" --list | grep -Fx -f <(echo "$python_names"))
fi

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for name in $names; do
    echo "-- $name" >&2
    if grep -qx "$name" <<<"$python_names"; then
        python3 "$anchor" --only "$name" "${args[@]}" | tail -n 1 | sed 's/^/python /' >>"$results" ||
            echo "python {\"workload\": \"$name\", \"check\": \"FAIL: anchor exited non-zero\"}" >>"$results"
    fi
    "$ours" --only "$name" "${args[@]}" | tail -n 1 | sed 's/^/ours /' >>"$results" ||
        echo "ours {\"workload\": \"$name\", \"check\": \"FAIL: bench exited non-zero\"}" >>"$results"
done

python3 - "$results" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    who, _, payload = line.partition(" ")
    data = json.loads(payload)
    rows.setdefault(data["workload"], {})[who] = data
def ms(d):
    return f"{d['median_ms']:.3f}" if d and d.get("median_ms") is not None else "-"
def kb(d):
    return str(d.get("peak_rss_kb", "-")) if d else "-"
print(f"| workload | python ms | ours ms | ratio | python peak RSS KiB | ours peak RSS KiB | checks |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, r in rows.items():
    p, o = r.get("python"), r.get("ours")
    ratio = "-"
    if p and o and p.get("median_ms") and o.get("median_ms"):
        r = p["median_ms"] / o["median_ms"]
        ratio = f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"
    checks = " / ".join(d.get("check", "?") for d in (p, o) if d)
    print(f"| {name} | {ms(p)} | {ms(o)} | {ratio} | {kb(p)} | {kb(o)} | {checks} |")
PY
