-- Job steps (`srun` inside an allocation): one row per step of a job run, one row per task
-- (where it runs, its GPUs, how it ended), and the tasks' output, in arrival order.

CREATE TABLE job_steps (
    job_id            bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    -- the job's restart count when the step was made
    run               integer NOT NULL CHECK (run >= 0),
    -- SLURM_STEP_ID: 0, 1, 2 … within the run
    step_id           integer NOT NULL CHECK (step_id >= 0),
    state             text NOT NULL DEFAULT 'RUNNING'
                      CHECK (state IN ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED')),
    -- the argv to run, the environment and working directory of every task
    command           text[] NOT NULL CHECK (cardinality(command) >= 1),
    environment       jsonb NOT NULL DEFAULT '{}',
    work_dir          text,
    cpus_per_task     integer CHECK (cpus_per_task >= 1),
    gpus_per_task     integer CHECK (gpus_per_task >= 1),
    kill_on_bad_exit  boolean NOT NULL DEFAULT false,
    overlap           boolean NOT NULL DEFAULT false,
    -- set when the remaining tasks must be stopped (a task failed under
    -- --kill-on-bad-exit, or the step was cancelled)
    kill_reason       text,
    -- the highest task exit code (128 + signal for a task ended by a signal)
    exit_code         integer,
    created_at        timestamptz NOT NULL DEFAULT now(),
    end_time          timestamptz,
    PRIMARY KEY (job_id, run, step_id),
    CHECK (state = 'RUNNING' OR end_time IS NOT NULL)
);

CREATE TABLE step_tasks (
    job_id      bigint NOT NULL,
    run         integer NOT NULL,
    step_id     integer NOT NULL,
    -- SLURM_PROCID
    task_id     integer NOT NULL CHECK (task_id >= 0),
    node_id     bigint NOT NULL REFERENCES nodes(id),
    -- SLURM_NODEID: the node's index in the job's allocation
    node_index  integer NOT NULL CHECK (node_index >= 0),
    -- SLURM_LOCALID: the task's index on its node
    local_id    integer NOT NULL CHECK (local_id >= 0),
    -- physical GPU indices the task sees (CUDA_VISIBLE_DEVICES)
    gpu_indices integer[] NOT NULL DEFAULT '{}',
    started_at  timestamptz,
    ended_at    timestamptz,
    exit_code   integer,
    exit_signal integer,
    message     text,
    PRIMARY KEY (job_id, run, step_id, task_id),
    FOREIGN KEY (job_id, run, step_id) REFERENCES job_steps(job_id, run, step_id) ON DELETE CASCADE
);
CREATE INDEX step_tasks_live ON step_tasks (node_id) WHERE ended_at IS NULL;

CREATE TABLE step_output (
    -- arrival order, what srun follows
    seq      bigserial PRIMARY KEY,
    job_id   bigint NOT NULL,
    run      integer NOT NULL,
    step_id  integer NOT NULL,
    task_id  integer NOT NULL,
    stream   text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    "offset" bigint NOT NULL CHECK ("offset" >= 0),
    data     bytea NOT NULL,
    UNIQUE (job_id, run, step_id, task_id, stream, "offset"),
    FOREIGN KEY (job_id, run, step_id, task_id)
        REFERENCES step_tasks(job_id, run, step_id, task_id) ON DELETE CASCADE
);
CREATE INDEX step_output_step ON step_output (job_id, run, step_id, seq);
