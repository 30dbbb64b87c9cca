#!/usr/bin/env bash
# The whole test suite, against a real PostgreSQL server.
#
# Starts a throwaway PostgreSQL (a fresh data directory in a temporary directory,
# listening on 127.0.0.1 at a free port and on a unix socket in that directory),
# points the Postgres saver's tests at it through STATEGRAPH_TEST_PG_URL, runs
# `cargo test --workspace` with this script's arguments, then stops the server and
# removes the directory, whatever happened. With no arguments the doctests run
# beside the other tests (below); with arguments it is one `cargo test`.
#
# Needs PostgreSQL's server programs (initdb, pg_ctl, postgres), found on PATH or
# in /usr/lib/postgresql/*/bin. When they are missing, the script installs them
# with apt-get if it can (as root, or with passwordless sudo); otherwise it says
# what to install. initdb refuses to run as root, so when run as root the server
# runs as the `postgres` user (created by the Debian package), or as a system user
# made for the purpose.
#
# Plain `cargo test --workspace` also works once the programs are installed: the
# Postgres tests then start a throwaway server per test binary. This script starts
# one for all of them, which is faster.
#
# To run only some tests against a server of your own instead:
#   STATEGRAPH_TEST_PG_URL=postgres://user@127.0.0.1:5432/db cargo test -p stategraph-postgres
set -euo pipefail
cd "$(dirname "$0")/.."

have_pg() {
    { command -v initdb && command -v pg_ctl; } >/dev/null 2>&1 ||
        ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
if ! have_pg && command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            SUDO="sudo -n"
        else
            SUDO=none
        fi
    fi
    if [ "$SUDO" != none ]; then
        echo "scripts/test.sh: installing PostgreSQL's server programs (apt-get install postgresql)"
        $SUDO apt-get update -qq
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
fi

pg_bin() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return
    fi
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return
        fi
    done
    echo "scripts/test.sh: PostgreSQL's initdb/pg_ctl not found (on PATH or in" \
        "/usr/lib/postgresql/*/bin); install them, e.g. \`apt-get install postgresql\`" >&2
    exit 1
}
BIN="$(pg_bin)"

# As root, the server runs as an unprivileged user; `as_pg` runs a command as it.
PG_USER="$(id -un)"
if [ "$(id -u)" -eq 0 ]; then
    PG_USER=postgres
    if ! id -u "$PG_USER" >/dev/null 2>&1; then
        PG_USER=stategraph-pg
        id -u "$PG_USER" >/dev/null 2>&1 ||
            useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER"
    fi
fi
# It runs from the temporary directory, which that user can enter (from the
# repository it would warn "could not change directory ...: Permission denied").
as_pg() {
    (
        cd "$TMP"
        if [ "$(id -un)" = "$PG_USER" ]; then
            "$@"
        elif command -v runuser >/dev/null 2>&1; then
            runuser -u "$PG_USER" -- "$@"
        else
            su -s /bin/sh "$PG_USER" -c "$(printf '%q ' "$@")"
        fi
    )
}

TMP="$(mktemp -d "${TMPDIR:-/tmp}/stategraph-pg.XXXXXX")"
DATA="$TMP/data"
STARTED=""
DOCTESTS=""
cleanup() {
    local status=$?
    if [ -n "$DOCTESTS" ]; then
        kill -- "-$DOCTESTS" 2>/dev/null || kill "$DOCTESTS" 2>/dev/null || true
        wait "$DOCTESTS" 2>/dev/null || true
    fi
    if [ -n "$STARTED" ]; then
        as_pg "$BIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$TMP"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

chmod 700 "$TMP"
[ "$(id -u)" -eq 0 ] && chown "$PG_USER" "$TMP"
as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C \
    --no-sync >"$TMP/initdb.log" 2>&1 || {
    cat "$TMP/initdb.log" >&2
    echo "scripts/test.sh: initdb failed" >&2
    exit 1
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A free port: try a few random ones (another process may take one between the
# check and the start, so a failed start tries the next).
PORT=""
for _ in $(seq 1 20); do
    candidate=$((20000 + RANDOM % 30000))
    port_in_use "$candidate" && continue
    # Durability settings are off: the server lives for one test run.
    if as_pg "$BIN/pg_ctl" -D "$DATA" -l "$TMP/server.log" -w -t 60 start -o \
        "-c listen_addresses=127.0.0.1 -p $candidate -k $TMP -c max_connections=300 \
         -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null; then
        PORT="$candidate"
        STARTED=1
        break
    fi
done
if [ -z "$PORT" ]; then
    cat "$TMP/server.log" >&2 || true
    echo "scripts/test.sh: could not start PostgreSQL" >&2
    exit 1
fi

export STATEGRAPH_TEST_PG_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
echo "scripts/test.sh: $("$BIN/pg_ctl" --version) on $STATEGRAPH_TEST_PG_URL (socket in $TMP)"
# Tests that mostly wait (timeouts, leases, child processes) would hold the
# default one thread per core; more threads let them overlap.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}"

if [ "$#" -gt 0 ]; then
    cargo test --workspace "$@"
    exit
fi

# The whole suite: the doctests run beside the other tests rather than after
# them. Compiling the doctests keeps about one core busy for a minute while
# most test binaries wait on timers, servers and child processes, so on two
# cores this takes ~90 s warm instead of ~150 s (docs/performance.md, "The
# test suite"). Both `cargo test` runs select the whole workspace, so they
# share one build (a narrower selection would unify features differently
# and rebuild). The doctests' output follows the other tests' output.
cargo test --workspace --no-run
# In a process group of its own (setsid), so that an interrupted run stops
# rustdoc and the doctests too, not only cargo.
if command -v setsid >/dev/null 2>&1; then
    setsid cargo test --workspace --doc >"$TMP/doctests.log" 2>&1 &
else
    cargo test --workspace --doc >"$TMP/doctests.log" 2>&1 &
fi
DOCTESTS=$!
status=0
cargo test --workspace --tests || status=$?
wait "$DOCTESTS" || status=$?
DOCTESTS=""
cat "$TMP/doctests.log"
if [ "$status" -ne 0 ]; then
    echo "scripts/test.sh: some tests failed (see above)" >&2
fi
exit "$status"
