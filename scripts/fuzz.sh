#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ for a bounded time each (default 60 s):
#   update_json        the JSON form of a state update, applied to a state
#   checkpoint_decode  a stored value's bytes under each type tag (json, msgpack,
#                      ...), decoded by graph-sqlite and restored into a field
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Works on the stable toolchain: libFuzzer's coverage instrumentation is stable;
# only the sanitizers need nightly, so the targets are built with
# `--sanitizer none` (a panic is what they look for). Each run starts from the
# committed seeds (fuzz/seeds/TARGET) plus the inputs earlier runs kept
# (fuzz/corpus/TARGET, not committed). A finding is written to
# fuzz/artifacts/TARGET/ and the script fails; replay it with
#   cargo fuzz run --sanitizer none TARGET fuzz/artifacts/TARGET/crash-...
# then commit the input under fuzz/seeds/TARGET/ (replayed by every later run)
# and add the case to tests/it/fuzz_decoding.rs, which CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(update_json checkpoint_decode)

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked

for target in "${targets[@]}"; do
    corpus="fuzz/corpus/$target"
    mkdir -p "$corpus"
    echo "== fuzzing $target for ${seconds}s"
    cargo fuzz run --sanitizer none "$target" "$corpus" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1
done
echo "fuzz: ${targets[*]} ran ${seconds}s each without a finding"
