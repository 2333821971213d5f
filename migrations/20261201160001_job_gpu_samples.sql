-- Issue 14 (console): per-GPU time series of a job run, for the Job page's utilisation,
-- memory and power charts (`GET /v1/jobs/{id}/gpu-samples`). Written with the aggregates
-- of `job_gpu_stats` from the samples each worker sync carries, at most one row per GPU
-- per `SERIES_INTERVAL_SECONDS` (db/src/gpu_stats.rs), and kept with the job (deleted
-- with it when accounting's retention purges it).
CREATE TABLE job_gpu_samples (
    job_id           bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run              integer NOT NULL CHECK (run >= 0),
    node_id          bigint NOT NULL REFERENCES nodes(id),
    gpu_index        integer NOT NULL CHECK (gpu_index >= 0),
    sampled_at       timestamptz NOT NULL DEFAULT now(),
    utilization_pct  integer NOT NULL CHECK (utilization_pct BETWEEN 0 AND 100),
    memory_used_mib  bigint NOT NULL CHECK (memory_used_mib >= 0),
    power_w          double precision CHECK (power_w >= 0),
    PRIMARY KEY (job_id, run, node_id, gpu_index, sampled_at)
);

-- The cluster timeline (`GET /v1/usage/cluster/timeline`) averages every job's samples
-- of a window.
CREATE INDEX job_gpu_samples_time ON job_gpu_samples (sampled_at);
