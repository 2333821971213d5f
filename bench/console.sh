#!/usr/bin/env bash
# The web console's benchmarks (issue 14), on demand only: the bundle's gzipped size, the
# Queue page's first meaningful paint with 100,000 jobs in the database, and the Nodes
# page with 1,000 GPUs whose utilisation changes (long tasks and frame gaps).
#
#   cargo build --release -p berth && bash bench/console.sh [bundle|queue|nodes|all]
#
# Starts a fresh `berth dev` (release build, its own PostgreSQL in a scratch data
# directory, no rate limits, one worker) on a free port, seeds it through the REST api
# (bench/console.mjs seed-jobs: JOBS=100000 submitted, all but the newest ACTIVE=10000
# cancelled), registers NODES=125 nodes of GPUS_PER_NODE=8 GPUs that sync samples like
# workers, and drives Debian's /usr/bin/chromium with playwright-core from
# console/node_modules (`npm ci` there first). DATA=DIR keeps the cluster's data in DIR
# and seeds the jobs only once there (later runs reuse them).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/berth-target}
berth=${BERTH_BIN:-$CARGO_TARGET_DIR/release/berth}
[ -d console/node_modules/playwright-core ] || (cd console && npm ci --no-audit --no-fund)

echo "== $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs: $(lscpu | sed -n 's/^Model name: *//p')"
if [ "$what" = bundle ] || [ "$what" = all ]; then
  echo "== bundle"
  node bench/console.mjs bundle
fi
[ "$what" = bundle ] && exit 0
case $what in queue | nodes | all) ;; *) echo "usage: bench/console.sh [bundle|queue|nodes|all]"; exit 2 ;; esac

[ -x "$berth" ] || { echo "console.sh: build first: cargo build --release -p berth ($berth missing)"; exit 1; }
work=$(mktemp -d /tmp/berth-bench-console-XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data=${DATA:-$work/data}
HOME=$work "$berth" dev --data-dir "$data" --listen "127.0.0.1:$port" --workers 1 \
  --rate-limit-per-user 0 --rate-limit-per-address 0 >"$work/dev.log" 2>&1 &
dev=$!
stop() {
  kill "$dev" 2>/dev/null || true
  wait "$dev" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT
for _ in $(seq 240); do
  grep -q 'berth dev is running' "$work/dev.log" && break
  kill -0 "$dev" 2>/dev/null || { cat "$work/dev.log"; exit 1; }
  sleep 0.5
done
grep -q 'berth dev is running' "$work/dev.log" || { cat "$work/dev.log"; exit 1; }
export BERTH_URL="http://127.0.0.1:$port"
BERTH_TOKEN=$(sed -n 's/^  token: *//p' "$work/dev.log" | head -n 1)
export BERTH_TOKEN
# The dev cluster's admin is the user running it ($USER, else the uid's name).
BENCH_USER=${USER:-$(id -un)}
export BENCH_USER

if [ "$what" = queue ] || [ "$what" = all ]; then
  if [ -e "$data/bench-seeded" ]; then
    echo "== jobs seeded before in $data: $(cat "$data/bench-seeded")"
  else
    echo "== seeding ${JOBS:-100000} jobs"
    node bench/console.mjs seed-jobs | tee "$work/seed.out"
    tail -n 1 "$work/seed.out" >"$data/bench-seeded"
  fi
  echo "== queue (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  node bench/console.mjs queue
fi
if [ "$what" = nodes ] || [ "$what" = all ]; then
  echo "== nodes (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  node bench/console.mjs nodes
fi
