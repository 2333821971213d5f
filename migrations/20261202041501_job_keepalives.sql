-- Allocation keep-alives (Slurm's InactiveLimit): salloc, and srun outside an allocation,
-- say every so often that they are still there (POST /v1/jobs/{id}/keepalive). A job with
-- a row here whose `expires_at` has passed is ended by the scheduler's reconciler (a
-- pending one CANCELLED, a running one TIMEOUT, reason InactiveLimit). Jobs without a row
-- (sbatch's) are never affected.
CREATE TABLE job_keepalives (
    job_id     bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    last_at    timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX job_keepalives_expires_at ON job_keepalives (expires_at);
