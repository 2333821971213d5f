-- GPU samples aggregated per job run and GPU, kept with the job for accounting: sample
-- count, utilisation sum (for the average), peak memory, energy (power integrated over
-- the time between samples) and the latest sample.

CREATE TABLE job_gpu_stats (
    job_id           bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run              integer NOT NULL CHECK (run >= 0),
    node_id          bigint NOT NULL REFERENCES nodes(id),
    gpu_index        integer NOT NULL CHECK (gpu_index >= 0),
    samples          bigint NOT NULL DEFAULT 0 CHECK (samples >= 0),
    utilization_sum  bigint NOT NULL DEFAULT 0 CHECK (utilization_sum >= 0),
    memory_peak_mib  bigint NOT NULL DEFAULT 0 CHECK (memory_peak_mib >= 0),
    energy_j         double precision NOT NULL DEFAULT 0 CHECK (energy_j >= 0),
    last_utilization_pct  integer,
    last_memory_used_mib  bigint,
    last_power_w          double precision,
    last_temperature_c    integer,
    first_sampled_at timestamptz NOT NULL DEFAULT now(),
    last_sampled_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, run, node_id, gpu_index)
);
