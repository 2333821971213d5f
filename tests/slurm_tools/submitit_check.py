"""submitit (Meta's job-submission library) against Berth's Slurm names, unmodified.

It submits with `sbatch --parsable`, polls with `sacct -o JobID,State,NodeList
--parsable2 -j ...`, cancels with `scancel` and runs arrays with `--array`; the job
runs `python -m submitit.core._submit` on the node, which pickles the function's result
(or its exception) into the folder. Prints one `ok:` line per check and exits 1 on the
first failure.
"""

import sys
import time

import submitit


def add(a, b):
    return a + b


def boom():
    raise ValueError("the loss is NaN")


def sleepy():
    time.sleep(600)


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def final_state(job, timeout=60):
    """The job's state as sacct says once it has ended (submitit caches sacct's answer)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = job.get_info(mode="force").get("State", "")
        if state and state not in ("PENDING", "RUNNING", "REQUEUED", "COMPLETING"):
            return state
        time.sleep(0.5)
    fail(f"job {job.job_id} did not end within {timeout} s")


def main(folder):
    executor = submitit.AutoExecutor(folder=folder)
    if executor.cluster != "slurm":
        fail(f"submitit saw cluster {executor.cluster!r}, not slurm (sbatch not on PATH?)")
    executor.update_parameters(timeout_min=5, slurm_job_name="submitit-check")

    job = executor.submit(add, 2, 3)
    if job.result() != 5:
        fail(f"add(2, 3) in job {job.job_id} returned {job.result()!r}")
    state = final_state(job)
    if state != "COMPLETED":
        fail(f"job {job.job_id} ended {state}, expected COMPLETED")
    print(f"ok: submitit job {job.job_id} returned add(2, 3) = 5 and sacct says COMPLETED")

    failing = executor.submit(boom)
    try:
        failing.result()
        fail(f"job {failing.job_id} raised nothing")
    except submitit.core.utils.FailedJobError as e:
        if "the loss is NaN" not in str(e):
            fail(f"job {failing.job_id}'s error lost the exception: {e}")
    state = final_state(failing)
    if state != "FAILED":
        fail(f"job {failing.job_id} raised but ended {state}, expected FAILED")
    print(f"ok: submitit job {failing.job_id} raised ValueError back to the caller and sacct says FAILED")

    long = executor.submit(sleepy)
    deadline = time.time() + 60
    while long.get_info(mode="force").get("State") != "RUNNING":
        if time.time() > deadline:
            fail(f"job {long.job_id} never ran")
        time.sleep(0.5)
    long.cancel()
    state = final_state(long)
    if not state.startswith("CANCELLED"):
        fail(f"job {long.job_id} ended {state} after scancel, expected CANCELLED")
    print(f"ok: submitit cancelled running job {long.job_id} (sacct: {state})")

    jobs = executor.map_array(add, [1, 2, 3], [10, 20, 30])
    results = [j.result() for j in jobs]
    if results != [11, 22, 33]:
        fail(f"array {[j.job_id for j in jobs]} returned {results}")
    ids = [j.job_id for j in jobs]
    master = ids[0].split("_")[0]
    if ids != [f"{master}_{i}" for i in range(3)]:
        fail(f"array task ids are {ids}")
    states = [final_state(j) for j in jobs]
    if states != ["COMPLETED"] * 3:
        fail(f"array {master} tasks ended {states}")
    print(f"ok: submitit array {master} (tasks {', '.join(ids)}) returned [11, 22, 33], all COMPLETED")


if __name__ == "__main__":
    main(sys.argv[1])
