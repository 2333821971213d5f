"""dask-jobqueue (a Dask cluster manager) against Berth's Slurm names, unmodified.

`SLURMCluster` writes a batch script (`#SBATCH -J/-e/-o/-n/--cpus-per-task/--mem/-t`)
that starts a Dask worker connecting back to this process, submits it with `sbatch`
once per worker job, and cancels jobs with `scancel` when it scales down or closes.
Checks: two worker jobs join and compute, scaling down to one ends a job, closing ends
the rest, and a worker job whose command fails ends FAILED with its exit code in sacct.
Prints one `ok:` line per check and exits 1 on the first failure.
"""

import subprocess
import sys
import time

from dask.distributed import Client
from dask_jobqueue import SLURMCluster


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def sacct(job_id):
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "JobID,State,ExitCode", "-j", str(job_id)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for line in out.splitlines():
        fields = line.split("|")
        if fields[0] == str(job_id):
            return fields[1], fields[2]
    fail(f"sacct knows no job {job_id}: {out!r}")


def ended(job_id, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state, code = sacct(job_id)
        if state not in ("PENDING", "RUNNING", "COMPLETING"):
            return state, code
        time.sleep(0.5)
    fail(f"job {job_id} did not end within {timeout} s")


def cluster(scratch, **kwargs):
    return SLURMCluster(
        cores=1,
        processes=1,
        memory="1GB",
        walltime="00:10:00",
        log_directory=f"{scratch}/logs",
        local_directory=f"{scratch}/tmp",
        scheduler_options={"host": "127.0.0.1"},
        **kwargs,
    )


def main(scratch):
    with cluster(scratch) as c, Client(c) as client:
        c.scale(jobs=2)
        client.wait_for_workers(2, timeout=120)
        jobs = sorted(c.workers.keys())
        ids = [c.workers[name].job_id for name in jobs]
        total = sum(client.gather(client.map(lambda x: x * x, range(10))))
        if total != 285:
            fail(f"the workers computed {total}, not 285")
        print(f"ok: dask-jobqueue started worker jobs {', '.join(ids)}; they computed sum(x*x) = 285")
        c.scale(jobs=1)
        deadline = time.time() + 60
        while len(client.scheduler_info()["workers"]) > 1:
            if time.time() > deadline:
                fail("scaling down to one job left two workers")
            time.sleep(0.5)
        gone = [i for i in ids if i not in [w.job_id for w in c.workers.values()]]
        if len(gone) != 1:
            fail(f"after scaling down the cluster still tracks {list(c.workers)}")
        state, _ = ended(gone[0])
        if state != "CANCELLED" and not state.startswith("CANCELLED"):
            fail(f"worker job {gone[0]} ended {state} after scaling down, expected CANCELLED")
        print(f"ok: scaling down to one job cancelled worker job {gone[0]}")
    for job_id in ids:
        state, _ = ended(job_id)
        if not state.startswith("CANCELLED") and state != "COMPLETED":
            fail(f"worker job {job_id} ended {state} after close")
    queued = subprocess.run(
        ["squeue", "-h", "--me", "-n", "dask-worker"], check=True, capture_output=True, text=True
    ).stdout
    if queued.strip():
        fail(f"worker jobs left in the queue after close:\n{queued}")
    print("ok: closing the cluster left no worker job in the queue")

    with cluster(scratch, python="/bin/false") as c:
        c.scale(jobs=1)
        deadline = time.time() + 30
        while not c.workers:
            if time.time() > deadline:
                fail("the failing cluster submitted no job")
            time.sleep(0.2)
        job_id = next(iter(c.workers.values())).job_id
        state, code = ended(job_id)
        if (state, code) != ("FAILED", "1:0"):
            fail(f"a worker job whose command exits 1 ended {state} {code}, expected FAILED 1:0")
        print(f"ok: a worker job whose command fails (job {job_id}) ended FAILED with ExitCode 1:0")


if __name__ == "__main__":
    main(sys.argv[1])
