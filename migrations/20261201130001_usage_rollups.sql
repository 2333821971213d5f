-- Issue 13: usage reports rolled up by the hour (sreport's data), per-minute samples of
-- the GPUs' states for cluster utilisation, and what retention (`purge_jobs_after`)
-- needs to delete ended jobs in batches.
--
-- `usage_hourly` holds, per clock hour (UTC) and association × partition × QOS × GPU
-- model, the TRES time the allocations held in that hour (a run that spans hours is split
-- at the hour boundaries). The scheduler leader writes it: each closed hour once (then
-- `usage_rollup_hours.closed`, never rewritten, so it outlives the purged raw rows), and
-- the current hour again every few seconds (replaced whole).

CREATE TABLE usage_hourly (
    -- the hour's start (UTC, on the hour)
    hour             timestamptz NOT NULL,
    -- the job's account, else its user's default account, else `root` (as charging)
    account          text NOT NULL,
    user_name        text NOT NULL,
    partition        text NOT NULL,
    -- the job's QOS, `normal` when it named none
    qos              text NOT NULL,
    -- the model of the GPUs the allocations held; '' for allocations without GPUs
    gpu_model        text NOT NULL,
    -- TRES-seconds within the hour: GPUs, CPUs, memory (MiB × s), nodes, billing
    gpu_seconds      double precision NOT NULL CHECK (gpu_seconds >= 0),
    cpu_seconds      double precision NOT NULL CHECK (cpu_seconds >= 0),
    mem_mib_seconds  double precision NOT NULL CHECK (mem_mib_seconds >= 0),
    node_seconds     double precision NOT NULL CHECK (node_seconds >= 0),
    billing_seconds  double precision NOT NULL CHECK (billing_seconds >= 0),
    -- job runs that ended in the hour (their first node's allocation was released in it)
    jobs             bigint NOT NULL CHECK (jobs >= 0),
    PRIMARY KEY (hour, account, user_name, partition, qos, gpu_model)
);
CREATE INDEX usage_hourly_account ON usage_hourly (account, hour);

-- The same per UTC day (slurmdbd keeps hour, day and month tables): the sum of the day's
-- `usage_hourly` rows, rewritten with every rollup of an hour of that day, so a report over
-- whole days reads one row per day and association instead of 24.
CREATE TABLE usage_daily (
    -- the day's start (UTC, 00:00)
    day              timestamptz NOT NULL,
    account          text NOT NULL,
    user_name        text NOT NULL,
    partition        text NOT NULL,
    qos              text NOT NULL,
    gpu_model        text NOT NULL,
    gpu_seconds      double precision NOT NULL CHECK (gpu_seconds >= 0),
    cpu_seconds      double precision NOT NULL CHECK (cpu_seconds >= 0),
    mem_mib_seconds  double precision NOT NULL CHECK (mem_mib_seconds >= 0),
    node_seconds     double precision NOT NULL CHECK (node_seconds >= 0),
    billing_seconds  double precision NOT NULL CHECK (billing_seconds >= 0),
    jobs             bigint NOT NULL CHECK (jobs >= 0),
    PRIMARY KEY (day, account, user_name, partition, qos, gpu_model)
);
CREATE INDEX usage_daily_account ON usage_daily (account, day);

-- Which hours are rolled up: `closed` once the hour (and a grace period) has passed and
-- it was rolled for good; the term of the leader that wrote it last.
CREATE TABLE usage_rollup_hours (
    hour       timestamptz PRIMARY KEY,
    closed     boolean NOT NULL DEFAULT false,
    rolled_at  timestamptz NOT NULL DEFAULT now(),
    term       bigint NOT NULL
);

-- One sample per minute (UTC, on the minute) and GPU model of the GPUs' states, written
-- by the scheduler leader (at most once per minute: a second write of a minute, by the
-- same or a new leader after a failover, changes nothing). Each sample stands for 60
-- seconds. States, as sreport's: a GPU held by a live allocation is `allocated`;
-- otherwise on a DOWN, DRAINING or DRAINED node `down`; on a powered-down (or
-- powering) cloud node `planned_down`; held by an active reservation `reserved`; else
-- idle.
CREATE TABLE cluster_gpu_samples (
    minute        timestamptz NOT NULL,
    gpu_model     text NOT NULL,
    total         integer NOT NULL CHECK (total >= 0),
    allocated     integer NOT NULL CHECK (allocated >= 0),
    down          integer NOT NULL CHECK (down >= 0),
    planned_down  integer NOT NULL CHECK (planned_down >= 0),
    reserved      integer NOT NULL CHECK (reserved >= 0),
    PRIMARY KEY (minute, gpu_model)
);

-- Cluster utilisation per hour and GPU model, GPU-seconds: `reported` (every GPU for
-- every sampled minute), `down`, `planned_down` and `reserved` from the samples;
-- `allocated` exactly from the allocations (the sum of `usage_hourly.gpu_seconds`).
-- Idle is what remains (as Slurm computes it).
CREATE TABLE cluster_usage_hourly (
    hour                  timestamptz NOT NULL,
    gpu_model             text NOT NULL,
    samples               integer NOT NULL CHECK (samples >= 0),
    reported_seconds      double precision NOT NULL CHECK (reported_seconds >= 0),
    allocated_seconds     double precision NOT NULL CHECK (allocated_seconds >= 0),
    down_seconds          double precision NOT NULL CHECK (down_seconds >= 0),
    planned_down_seconds  double precision NOT NULL CHECK (planned_down_seconds >= 0),
    reserved_seconds      double precision NOT NULL CHECK (reserved_seconds >= 0),
    PRIMARY KEY (hour, gpu_model)
);

-- Retention finds ended jobs by end time; the hourly rollup finds the allocations that
-- overlap an hour by creation time (released ones by `allocations_released`, live ones
-- by `allocations_live`).
CREATE INDEX jobs_ended ON jobs (end_time) WHERE end_time IS NOT NULL;
CREATE INDEX allocations_created ON allocations (created_at);
