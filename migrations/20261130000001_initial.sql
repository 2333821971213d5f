-- Berth's initial schema: users and accounts, partitions, nodes and their GPUs, jobs and
-- their events and output, allocations (one row per job and node) with per-GPU claims,
-- idempotency keys, and the scheduler's leader lease.

CREATE TABLE accounts (
    name        text PRIMARY KEY CHECK (name <> ''),
    parent      text REFERENCES accounts(name),
    shares      integer NOT NULL DEFAULT 1 CHECK (shares >= 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO accounts (name) VALUES ('root');

CREATE TABLE users (
    name             text PRIMARY KEY CHECK (name <> ''),
    role             text NOT NULL DEFAULT 'user' CHECK (role IN ('admin', 'operator', 'user')),
    default_account  text REFERENCES accounts(name),
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE partitions (
    name          text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]+$'),
    is_default    boolean NOT NULL DEFAULT false,
    -- seconds; NULL = unlimited
    default_time  bigint CHECK (default_time > 0),
    max_time      bigint CHECK (max_time > 0),
    -- member node names; empty = every node
    nodes         text[] NOT NULL DEFAULT '{}',
    priority_tier integer NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (default_time IS NULL OR max_time IS NULL OR default_time <= max_time)
);
CREATE UNIQUE INDEX partitions_one_default ON partitions (is_default) WHERE is_default;
INSERT INTO partitions (name, is_default, default_time) VALUES ('gpu', true, 3600);

CREATE TABLE nodes (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.-]+$'),
    hostname        text NOT NULL,
    -- IDLE/MIXED/ALLOCATED are derived from allocations; this column holds the
    -- administrative or failure state (UP = available).
    state           text NOT NULL DEFAULT 'UP'
                    CHECK (state IN ('UP', 'DRAINING', 'DRAINED', 'DOWN', 'POWERED_DOWN', 'POWERING_UP', 'POWERING_DOWN')),
    reason          text,
    cpus            integer NOT NULL CHECK (cpus >= 0),
    memory_mib      bigint NOT NULL CHECK (memory_mib >= 0),
    features        text[] NOT NULL DEFAULT '{}',
    inventory       jsonb NOT NULL DEFAULT '{}',
    registered_at   timestamptz NOT NULL DEFAULT now(),
    last_heartbeat  timestamptz
);

CREATE TABLE gpus (
    node_id          bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    index            integer NOT NULL CHECK (index >= 0),
    uuid             text NOT NULL,
    model            text NOT NULL,
    memory_mib       bigint NOT NULL CHECK (memory_mib >= 0),
    present          boolean NOT NULL DEFAULT true,
    utilization_pct  integer CHECK (utilization_pct BETWEEN 0 AND 100),
    memory_used_mib  bigint CHECK (memory_used_mib >= 0),
    power_w          double precision,
    temperature_c    integer,
    sampled_at       timestamptz,
    PRIMARY KEY (node_id, index)
);

CREATE TABLE jobs (
    id               bigserial PRIMARY KEY,
    name             text NOT NULL,
    user_name        text NOT NULL,
    account          text,
    partition        text NOT NULL REFERENCES partitions(name),
    qos              text,
    state            text NOT NULL DEFAULT 'PENDING' CHECK (state IN (
                        'PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING', 'COMPLETED', 'FAILED',
                        'TIMEOUT', 'CANCELLED', 'NODE_FAIL', 'PREEMPTED', 'OUT_OF_MEMORY',
                        'BOOT_FAIL', 'DEADLINE')),
    reason           text,
    -- what the job asks for (typed columns the scheduler reads)
    num_nodes        integer NOT NULL CHECK (num_nodes >= 1),
    num_tasks        integer NOT NULL CHECK (num_tasks >= 1),
    cpus_per_task    integer NOT NULL DEFAULT 1 CHECK (cpus_per_task >= 1),
    gpus_per_node    integer NOT NULL DEFAULT 0 CHECK (gpus_per_node >= 0),
    gpu_type         text,
    exclusive        boolean NOT NULL DEFAULT false,
    whole_node       boolean NOT NULL DEFAULT false,
    mem_mib          bigint CHECK (mem_mib >= 0),
    time_limit       bigint CHECK (time_limit > 0),   -- seconds; NULL = unlimited
    hold             boolean NOT NULL DEFAULT false,
    -- how to run it
    script           text NOT NULL,
    submit_dir       text,
    work_dir         text,
    stdout_pattern   text NOT NULL,
    stderr_pattern   text,
    environment      jsonb NOT NULL DEFAULT '{}',
    -- the whole spec as submitted (the remainder the typed columns do not hold)
    spec             jsonb NOT NULL,
    array_job_id     bigint,
    array_task_id    integer,
    restart_count    integer NOT NULL DEFAULT 0 CHECK (restart_count >= 0),
    submit_time      timestamptz NOT NULL DEFAULT now(),
    start_time       timestamptz,
    end_time         timestamptz,
    exit_code        integer,
    exit_signal      integer,
    CHECK (state <> 'PENDING' OR end_time IS NULL),
    CHECK (state NOT IN ('COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED', 'NODE_FAIL', 'PREEMPTED',
                         'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE') OR end_time IS NOT NULL),
    CHECK (state <> 'RUNNING' OR start_time IS NOT NULL),
    CHECK (end_time IS NULL OR end_time >= submit_time)
);
CREATE INDEX jobs_pending ON jobs (id) WHERE state = 'PENDING';
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_user ON jobs (user_name, id);

CREATE TABLE job_events (
    id        bigserial PRIMARY KEY,
    job_id    bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    at        timestamptz NOT NULL DEFAULT now(),
    kind      text NOT NULL,
    -- the job's restart count when it happened
    run       integer NOT NULL DEFAULT 0,
    node      text,
    detail    jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX job_events_job ON job_events (job_id, id);
-- a worker report is applied once per (job, run, kind, node)
CREATE UNIQUE INDEX job_events_report_once ON job_events (job_id, run, kind, node)
    WHERE kind IN ('started', 'exited', 'launch_failed');

CREATE TABLE job_output (
    job_id   bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run      integer NOT NULL CHECK (run >= 0),
    stream   text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    data     bytea NOT NULL,
    PRIMARY KEY (job_id, stream, run, "offset")
);

CREATE TABLE allocations (
    id           bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run          integer NOT NULL CHECK (run >= 0),
    node_id      bigint NOT NULL REFERENCES nodes(id),
    -- position of the node in the job's node list (SLURM_NODEID); 0 runs the batch script
    node_index   integer NOT NULL CHECK (node_index >= 0),
    gpu_indices  integer[] NOT NULL DEFAULT '{}',
    exclusive    boolean NOT NULL DEFAULT false,
    -- the leader term that made it
    term         bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz,
    UNIQUE (job_id, run, node_index),
    UNIQUE (job_id, run, node_id),
    CHECK (released_at IS NULL OR released_at >= created_at)
);
CREATE INDEX allocations_live ON allocations (node_id) WHERE released_at IS NULL;

-- One row per GPU held by an allocation. The partial unique index makes it impossible for
-- two live allocations to hold the same GPU, whatever the scheduler believes.
CREATE TABLE allocation_gpus (
    allocation_id  bigint NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
    node_id        bigint NOT NULL,
    gpu_index      integer NOT NULL,
    released_at    timestamptz,
    PRIMARY KEY (allocation_id, gpu_index),
    FOREIGN KEY (node_id, gpu_index) REFERENCES gpus(node_id, index)
);
CREATE UNIQUE INDEX allocation_gpus_one_live_holder
    ON allocation_gpus (node_id, gpu_index) WHERE released_at IS NULL;

CREATE TABLE idempotency_keys (
    user_name     text NOT NULL,
    key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    request_hash  text NOT NULL,
    job_id        bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_name, key)
);

-- The scheduler's leader lease (river-style): one row per elected role, with a fencing
-- term that every leader write checks.
CREATE TABLE leader_lease (
    role        text PRIMARY KEY,
    holder      text NOT NULL,
    term        bigint NOT NULL CHECK (term >= 1),
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
