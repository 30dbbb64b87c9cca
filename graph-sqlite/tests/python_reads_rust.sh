#!/usr/bin/env bash
# Proves that LangGraph's Python `langgraph-checkpoint-sqlite` lists, reads, writes
# and deletes threads in a database written by graph-sqlite, that graph-sqlite
# reads what Python wrote there, and that Python still reads one of its own
# databases after graph-sqlite migrated it, and that a run paused by an interrupt
# in one language is resumed by the other. Installs the Python packages with pip
# (network), so it is not part of `cargo test`; CI calls it from .ci/run.
# Any failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 -m pip install --quiet --disable-pip-version-check \
    "langgraph==1.2.22" "langgraph-checkpoint-sqlite==3.1.2"
python3 -c "import langgraph.checkpoint.sqlite"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
interop() { cargo run --quiet -p stategraph-sqlite --example python_interop -- "$@"; }

interop write "$work/rust.sqlite" "$work/rust.expected.json"
python3 graph-sqlite/tests/python_reads_rust.py \
    "$work/rust.sqlite" "$work/rust.expected.json" "$work/python.expected.json"
interop check "$work/rust.sqlite" "$work/python.expected.json"

cp graph-sqlite/tests/fixtures/python_written.sqlite "$work/migrated.sqlite"
interop open "$work/migrated.sqlite"
python3 graph-sqlite/tests/python_reads_rust.py --fixture \
    "$work/migrated.sqlite" graph-sqlite/tests/fixtures/python_written.expected.json

# Human in the loop across languages: stategraph pauses, Python resumes; Python
# pauses, stategraph resumes.
resume() { cargo run --quiet -p stategraph-sqlite --example python_resume -- "$@"; }
asked="$(resume pause "$work/hitl.sqlite" rust-paused)"
python3 graph-sqlite/tests/python_resume.py resume "$work/hitl.sqlite" rust-paused "$asked"
resume show "$work/hitl.sqlite" rust-paused | grep -F '"log":["drafted","approved"]' >/dev/null
python3 graph-sqlite/tests/python_resume.py pause "$work/hitl.sqlite" python-paused >/dev/null
resume show "$work/hitl.sqlite" python-paused | grep -F '"next":["review"]' >/dev/null
resume resume "$work/hitl.sqlite" python-paused false | grep -Fx '["drafted","rejected"]' >/dev/null

echo "python_reads_rust: 5 passed, 0 failed"
