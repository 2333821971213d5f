#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) each, from its seed corpus, and prints a
# line per target: runs, coverage, and a crash (with the input's path) when one was found.
# cargo fuzz needs nightly rustc flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take
# them. Needs `cargo install cargo-fuzz`.
set -uo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/berth-fuzz-target}
cargo fuzz build -O || exit 1
status=0
for target in $(cargo fuzz list); do
  mkdir -p "corpus/$target"
  log=$(mktemp)
  cargo fuzz run -O "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1
  code=$?
  summary=$(grep -E '^(#[0-9]+|Done)' "$log" | tail -n 1)
  if [ $code -eq 0 ]; then
    echo "$target: ok: $summary"
  else
    status=1
    echo "$target: FAILED (exit $code): $(grep -m1 -E 'panicked|ERROR|SUMMARY' "$log")"
    grep -E 'Test unit written to' "$log" | sed 's/^/  /'
  fi
  rm -f "$log"
done
exit $status
