#!/usr/bin/env bash
# Proves that LangGraph's Python SqliteStore (langgraph-checkpoint-sqlite) reads
# and searches a store database written by graph-sqlite, with the same results
# and scores, sweeps its expired items, and writes next to them; and that
# graph-sqlite then reads and searches what Python wrote the same way. (The
# other direction on a file written by Python alone is store_python_fixture.rs,
# part of `cargo test`.) Installs the Python packages with pip (network), so it
# is not part of `cargo test`; CI calls it from .ci/run. Any failure exits
# non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 -m pip install --quiet --disable-pip-version-check \
    "langgraph==1.2.22" "langgraph-checkpoint-sqlite==3.1.2" "sqlite-vec==0.1.9" xxhash
# LangGraph's SqliteStore loads the sqlite-vec extension; a Python whose sqlite3
# module cannot load extensions gets pysqlite3 (store_common.py swaps it in).
if ! python3 -c 'import sqlite3; sqlite3.connect(":memory:").enable_load_extension' 2>/dev/null; then
    python3 -m pip install --quiet --disable-pip-version-check pysqlite3-binary
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
interop() { cargo run --quiet -p stategraph-sqlite --example store_interop -- "$@"; }
py() { python3 graph-sqlite/tests/store_python_reads_rust.py "$@"; }

py specs "$work/specs.json"
interop write "$work/store.sqlite"
interop dump "$work/store.sqlite" "$work/specs.json" "$work/rust-1.json"
py read "$work/store.sqlite" "$work/rust-1.json"
interop dump "$work/store.sqlite" "$work/specs.json" "$work/rust-2.json"
py check "$work/store.sqlite" "$work/rust-2.json"

echo "store_python_reads_rust: 2 passed, 0 failed"
