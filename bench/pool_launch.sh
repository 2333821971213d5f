#!/usr/bin/env bash
# On-demand benchmark (never a test): how fast a local pool reacts.
#
# 1. Pending job → launch call: N jobs of 8 GPUs each, submitted 0.5 s apart to an empty
#    pool of N slots whose instances boot for an hour (they never join, so every job needs
#    a launch of its own). For each job: the time from its submission to its launch being
#    written (the planner's decision) and to the provider's answer (the `launch` event).
# 2. Submit → running on a cold pool with no boot delay: one slot, idle_timeout 1 s; a job
#    is submitted only once the pool is back at 0 nodes, T times.
#
# Usage: bench/pool_launch.sh [N] [T]   (BERTH: the binary, default target/release/berth;
# DATABASE_URL: a server where it may create the database berth_bench_pool)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-50}
T=${2:-10}
BERTH=${BERTH:-${CARGO_TARGET_DIR:-target}/release/berth}
base=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
base=${base%/*}
db=berth_bench_pool
work=$(mktemp -d)
trap 'pkill -TERM -f "$work" 2>/dev/null || true; sleep 8; rm -rf "$work"' EXIT
psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null

run_dev() { # config file
  DATABASE_URL="$base/$db" setsid "$BERTH" dev --workers 0 --config "$1" \
    --data-dir "$work/dev" --listen 127.0.0.1:18790 >"$work/dev.log" 2>&1 &
  for _ in $(seq 120); do grep -q 'berth dev is running' "$work/dev.log" && return; sleep 0.5; done
  cat "$work/dev.log"; exit 1
}
stop_dev() {
  pkill -TERM -f "$work/dev" || true
  while pgrep -f "berth dev.*$work" >/dev/null; do sleep 0.5; done
}
q() { psql -qtA "$base/$db" -c "$1"; }

cat >"$work/launch.toml" <<EOF
[pools.bench]
provider = "local"
max_nodes = $N
idle_timeout = 600
boot_timeout = 7200
expected_boot = 60
launch_rate_per_minute = 100000
[pools.bench.local]
boot_delay = 3600
[[pools.bench.instance_types]]
name = "sim-8xh100"
gpus = "8xH100"
cpus = 32
memory = "256G"
EOF
run_dev "$work/launch.toml"
for _ in $(seq "$N"); do "$BERTH" submit --gpus-per-node=8 --wrap 'sleep 1' >/dev/null; sleep 0.5; done
for _ in $(seq 120); do
  [ "$(q "SELECT count(*) FROM cloud_events WHERE kind = 'launch'")" -ge "$N" ] && break; sleep 0.5
done
echo "== pending job → launch ($N jobs, one new node each)"
q "WITH l AS (
     SELECT j.id, extract(epoch FROM c.created_at - j.submit_time) AS decided,
            extract(epoch FROM (SELECT min(e.at) FROM cloud_events e
                                WHERE e.kind = 'launch' AND e.job_id = j.id) - j.submit_time)
              AS answered
     FROM jobs j JOIN cloud_launches c ON c.job_id = j.id)
   SELECT format('launches %s; written after submit: p50 %s s, p99 %s s, max %s s; provider answered: p50 %s s, p99 %s s, max %s s',
     count(*),
     round(percentile_cont(0.5) WITHIN GROUP (ORDER BY decided)::numeric, 3),
     round(percentile_cont(0.99) WITHIN GROUP (ORDER BY decided)::numeric, 3),
     round(max(decided)::numeric, 3),
     round(percentile_cont(0.5) WITHIN GROUP (ORDER BY answered)::numeric, 3),
     round(percentile_cont(0.99) WITHIN GROUP (ORDER BY answered)::numeric, 3),
     round(max(answered)::numeric, 3)) FROM l"
stop_dev

psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
rm -rf "$work/dev"
cat >"$work/cold.toml" <<EOF
[pools.cold]
provider = "local"
max_nodes = 1
idle_timeout = 1
boot_timeout = 120
[[pools.cold.instance_types]]
name = "sim-1xh100"
gpus = "1xH100"
cpus = 16
memory = "64G"
EOF
run_dev "$work/cold.toml"
for _ in $(seq "$T"); do
  until [ "$(q "SELECT count(*) FROM nodes WHERE pool = 'cold' AND state <> 'POWERED_DOWN'")" = 0 ]; do sleep 0.2; done
  id=$("$BERTH" submit --parsable --gpus-per-node=1 --wrap 'true')
  until [ -n "$(q "SELECT start_time FROM jobs WHERE id = $id AND start_time IS NOT NULL")" ]; do sleep 0.1; done
  until [ "$(q "SELECT state FROM jobs WHERE id = $id")" = COMPLETED ]; do sleep 0.2; done
done
echo "== submit → running on a cold pool, no boot delay ($T jobs)"
q "WITH s AS (SELECT extract(epoch FROM start_time - submit_time) AS w FROM jobs WHERE start_time IS NOT NULL)
   SELECT format('jobs %s; submit → running: p50 %s s, p99 %s s, max %s s', count(*),
     round(percentile_cont(0.5) WITHIN GROUP (ORDER BY w)::numeric, 3),
     round(percentile_cont(0.99) WITHIN GROUP (ORDER BY w)::numeric, 3),
     round(max(w)::numeric, 3)) FROM s"
stop_dev
psql -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
