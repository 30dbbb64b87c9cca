#!/usr/bin/env bash
# The store conformance tests against a PostgreSQL server that has pgvector.
#
# Debian's PostgreSQL packages (what scripts/test.sh and the tests install) have
# no pgvector, so `cargo test` checks PostgresStore's fallback (vectors in a
# real[] column, scored in Rust). This script checks the pgvector path: it
# installs the `pgserver` Python package, whose wheel ships a PostgreSQL 16 with
# pgvector 0.6, copies its programs where the server's user can run them, and
# runs the store_conformance tests (graph-sqlite's and graph-postgres's) through
# scripts/test.sh with those programs first on PATH. There the indexed store
# must use pgvector (tests/store_conformance.rs asserts which path it took).
# Installs with pip (network), so it is not part of `cargo test`; CI calls it
# from .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check "pgserver==0.1.4"
site="$(python3 -c 'import os, pgserver; print(os.path.dirname(os.path.dirname(pgserver.__file__)))' 2>/dev/null)"

# The programs find their libraries at ../../../pgserver.libs: keep that layout.
PGV="$(mktemp -d "${TMPDIR:-/tmp}/stategraph-pgvector.XXXXXX")"
trap 'rm -rf "$PGV"' EXIT
mkdir -p "$PGV/pgserver"
cp -a "$site/pgserver/pginstall" "$PGV/pgserver/"
cp -a "$site/pgserver.libs" "$PGV/"
chmod -R a+rX "$PGV"
chmod a+x "$PGV"

PATH="$PGV/pgserver/pginstall/bin:$PATH" bash scripts/test.sh --test store_conformance
