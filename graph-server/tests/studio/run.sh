#!/usr/bin/env bash
# The Studio's browser test: Chromium from the distribution's packages, driven
# by Playwright for Python (pointed at that Chromium: no browser is downloaded).
#
#   graph-server/tests/studio/run.sh                      # against `langgraph dev`
#   graph-server/tests/studio/run.sh --graph-server        # against our graph-server
#   graph-server/tests/studio/run.sh --server URL [--studio URL]
#
# Without --server it starts LangGraph's own local server (`langgraph dev`,
# in-memory) on a free port, serving graphs.py, and points the page at it; the
# page's files are served by studio_test.py. Screenshots go to
# target/studio-screenshots/. Installs with apt-get and pip (network), so it is
# not part of `cargo test`; CI calls it from .ci/run. Any failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=graph-server/tests/studio

if ! command -v chromium >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
fi
python3 -m pip install --quiet --disable-pip-version-check \
    "playwright==1.65.2" "langgraph==1.2.22" "langgraph-sdk==0.4.14" \
    "langgraph-cli[inmem]==0.4.40" "langgraph-api==0.16.7" "langgraph-runtime-inmem==0.36.7"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_ok() { # PORT PID LOG
    for _ in $(seq 1 120); do
        curl -fsS "http://127.0.0.1:$1/ok" >/dev/null 2>&1 && return 0
        kill -0 "$2" 2>/dev/null || { cat "$3" >&2; exit 1; }
        sleep 0.5
    done
    curl -fsS "http://127.0.0.1:$1/ok" >/dev/null || { tail -40 "$3" >&2; exit 1; }
}

args=()
graph_server=0
for a in "$@"; do
    if [ "$a" = --graph-server ]; then graph_server=1; else args+=("$a"); fi
done
if [ "$graph_server" = 1 ]; then
    # graph-server serves the page itself (/studio/) and the Rust twins of
    # graphs.py (studio_server.rs), from a scratch database.
    cargo build --quiet -p stategraph-server --example studio_server
    bin="${CARGO_TARGET_DIR:-target}/debug/examples/studio_server"
    work="$(mktemp -d)"
    port="$(free_port)"
    "$bin" "127.0.0.1:$port" "$work/studio.db" >"$work/server.log" 2>&1 &
    server_pid=$!
    trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
    wait_ok "$port" "$server_pid" "$work/server.log"
    args+=(--server "http://127.0.0.1:$port" --studio "http://127.0.0.1:$port/studio/")
elif [[ " ${args[*]} " != *" --server "* ]]; then
    # langgraph dev reads langgraph.json and the graphs relative to its working
    # directory and writes its state there: a scratch copy.
    work="$(mktemp -d)"
    cp "$here/graphs.py" "$here/langgraph.json" "$work/"
    port="$(free_port)"
    (cd "$work" && exec langgraph dev --no-browser --no-reload --port "$port" >"$work/server.log" 2>&1) &
    server_pid=$!
    trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
    wait_ok "$port" "$server_pid" "$work/server.log"
    args+=(--server "http://127.0.0.1:$port")
fi

python3 "$here/studio_test.py" --screenshots target/studio-screenshots "${args[@]}"
