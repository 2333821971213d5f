#!/usr/bin/env bash
# Replays the shared traces through `berth sim` (release build) for each policy and prints
# the Markdown tables of bench/README.md. Run on demand:
#   cargo build --release -p berth && bash bench/sim_traces.sh [TRACES_DIR]
set -euo pipefail
traces=${1:-$(dirname "$0")/../../../shared/traces}
berth=${BERTH:-$(dirname "$0")/../target/release/berth}
row() { # label, then berth sim arguments
  local label=$1; shift
  for policy in fifo fifo-backfill default; do
    "$berth" sim "$@" --policy "$policy" --json | python3 -c '
import json, sys
r = json.load(sys.stdin); s = r["summary"]; label = sys.argv[1]
share = s.get("alloc_share_at_first_block")
blocked = "—" if share is None else "%.1f%% at %.0f s" % (share * 100, s["first_blocked_at"])
print("| %s | %s | %d/%d | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f%% | %s | %d | %.0f | %.0f | %.0f |" % (
  label, r["policy"], s["jobs"], r["trace_jobs"], s["avg_jct"], s["p95_jct"], s["avg_wait"], s["p95_wait"],
  s["makespan"], s["gpu_utilization"] * 100, blocked, s["passes"], s["pass_mean_us"], s["pass_p99_us"], s["pass_max_us"]))
' "$label"
  done
}
echo "| trace, cluster | policy | jobs done/read | avg JCT s | p95 JCT s | avg wait s | p95 wait s | makespan s | GPU util | GPUs allocated at first block | passes | pass mean µs | pass p99 µs | pass max µs |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
row "tiresias 60, 3×4" --trace "$traces/tiresias/60_job.csv" --format tiresias --cluster 3x4
row "tiresias 60, 15×4" --trace "$traces/tiresias/60_job.csv" --format tiresias --cluster 15x4
row "alibaba default, openb nodes" --trace "$traces/alibaba-gpu-v2023/openb_pod_list_default.csv" --format alibaba
row "alibaba multigpu50, openb nodes" --trace "$traces/alibaba-gpu-v2023/openb_pod_list_multigpu50.csv" --format alibaba
row "alibaba multigpu50, openb nodes, GPUs only" --trace "$traces/alibaba-gpu-v2023/openb_pod_list_multigpu50.csv" --format alibaba --gpus-only
row "alibaba multigpu50, openb nodes, fragmentation fit" --trace "$traces/alibaba-gpu-v2023/openb_pod_list_multigpu50.csv" --format alibaba --fit fragmentation
