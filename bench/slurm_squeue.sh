#!/usr/bin/env bash
# Slurm's reference figure for `squeue_list.rs` (run on demand, as root, never in tests):
# how long Slurm's own `squeue` takes on this machine with RUNNING running and PENDING
# pending jobs, for bench/README.md's issue 15 section.
#
#   apt-get install -y slurm-wlm hyperfine   # Debian 12: Slurm 22.05
#   bash bench/slurm_squeue.sh [PENDING RUNNING RUNS]   # defaults 10000 200 30
#
# It writes a one-node cluster's slurm.conf into a scratch directory (the node declares
# RUNNING CPUs, `SlurmdParameters=config_overrides`, so that RUNNING one-CPU `sleep` jobs
# run and the rest pend on Resources/Priority, as Berth's benchmark has them), starts
# munged when no credential can be made, then slurmctld and slurmd on that file
# (`SLURM_CONF`), submits the jobs with `sbatch`, times `squeue` (default format, output
# to a pipe) with hyperfine three times, and prints each run's median, fastest and
# slowest in ms. The jobs are cancelled and both daemons stopped on exit.
set -euo pipefail
pending=${1:-10000}
running=${2:-200}
runs=${3:-30}
for tool in slurmctld slurmd sbatch squeue munge hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "slurm_squeue.sh: $tool is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm_squeue.sh: run as root (it starts slurmd)" >&2; exit 1; }

dir=$(mktemp -d /tmp/berth-slurm-bench.XXXXXX)
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
host=$(hostname -s)
cat >"$dir/slurm.conf" <<EOF
ClusterName=bench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MaxJobCount=$((pending + running + 1000))
ReturnToService=2
NodeName=$host CPUs=$running RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf

if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown -R munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge
  su -s /bin/sh munge -c munged
fi

stop() {
  scancel --quiet --user root 2>/dev/null || true
  # The jobs' step daemons end once their jobs are gone.
  for _ in $(seq 100); do
    [ -z "$(squeue -h 2>/dev/null)" ] && ! pgrep -x slurmstepd >/dev/null && break
    sleep 0.2
  done
  for daemon in slurmd slurmctld; do
    [ -f "$dir/$daemon.pid" ] || continue
    local pid
    pid=$(cat "$dir/$daemon.pid")
    kill "$pid" 2>/dev/null || continue
    # Each saves its state before it exits.
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  done
}
trap stop EXIT
slurmctld -c
slurmd
for _ in $(seq 50); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done

for i in $(seq "$running"); do sbatch -Q -n1 -J "run$i" -o /dev/null --wrap 'sleep 3600'; done
for i in $(seq "$pending"); do sbatch -Q -n1 -J "train$((i % 50))" -o /dev/null --wrap 'sleep 60'; done
for _ in $(seq 100); do
  [ "$(squeue -h -t R | wc -l)" -ge "$running" ] && break
  sleep 0.5
done
echo "squeue lists $(squeue -h | wc -l) jobs, $(squeue -h -t R | wc -l) running ($(sinfo -V))"

for round in 1 2 3; do
  hyperfine -N -w 3 -r "$runs" --output=pipe --export-json "$dir/run$round.json" squeue >/dev/null
  python3 - "$dir/run$round.json" <<'EOF'
import json, statistics, sys
times = json.load(open(sys.argv[1]))["results"][0]["times"]
print("Slurm squeue: median %.1f ms, fastest %.1f ms, slowest %.1f ms (%d runs)"
      % (statistics.median(times) * 1e3, min(times) * 1e3, max(times) * 1e3, len(times)))
EOF
done
