#!/usr/bin/env bash
# Drives our server with the official Python `langgraph-sdk` (and `RemoteGraph`
# used as a node of a Python graph): builds and starts graph-server's
# sdk_server example on a free port with a fresh database, runs test_sdk.py
# against it, stops the server. Installs the Python packages with pip (network),
# so it is not part of `cargo test`; CI calls it from .ci/run.
#
# The same suite passes against LangGraph's own server: in this directory,
# `langgraph dev --port 2097` (pip install "langgraph-cli[inmem]"), then
# `python3 test_sdk.py http://127.0.0.1:2097`.
set -euo pipefail
cd "$(dirname "$0")/../../.."

python3 -m pip install --quiet --disable-pip-version-check \
    "langgraph==1.2.22" "langgraph-sdk==0.4.14" "openapi-spec-validator==0.9.0"

cargo build --quiet -p stategraph-server --example sdk_server
target="${CARGO_TARGET_DIR:-target}"
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$target/debug/examples/sdk_server" "127.0.0.1:$port" "$work/server.db" >"$work/server.log" 2>&1 &
server=$!
cleanup() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$port/ok" >/dev/null && break
    sleep 0.2
done
# /openapi.json is a valid OpenAPI document.
python3 -c 'import json, sys, urllib.request
from openapi_spec_validator import validate
validate(json.load(urllib.request.urlopen(sys.argv[1] + "/openapi.json")))' "http://127.0.0.1:$port"
python3 graph-server/tests/sdk/test_sdk.py "http://127.0.0.1:$port" || {
    echo "--- server log" >&2
    cat "$work/server.log" >&2
    exit 1
}
kill "$server"
wait "$server" 2>/dev/null || true
# Tenancy: a server with API keys; one user's thread is 404 to another.
"$target/debug/examples/sdk_server" "127.0.0.1:$port" "$work/auth.db" auth >"$work/auth.log" 2>&1 &
server=$!
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$port/ok" >/dev/null && break
    sleep 0.2
done
python3 graph-server/tests/sdk/test_auth.py "http://127.0.0.1:$port"
kill "$server"
wait "$server" 2>/dev/null || true
# Durable runs: SIGKILL mid-run, restart on the same database.
python3 graph-server/tests/sdk/restart.py "$target/debug/examples/sdk_server" "$port" "$work"
