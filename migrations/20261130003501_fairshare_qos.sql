-- Fairshare and QOS (issue 3): decayed usage per association, the ledger of charged job
-- runs (each run charged once), the QOS table with its priority, usage factor, limits
-- and preemption settings, partition limits, and the factors of each pending job's last
-- computed priority (as `sprio` shows them).

-- Decayed usage (billing-seconds) of an association (account, user) as of `updated_at`.
CREATE TABLE usage (
    account     text NOT NULL,
    user_name   text NOT NULL,
    raw_usage   double precision NOT NULL DEFAULT 0 CHECK (raw_usage >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, user_name)
);

-- One row per charged job run: what it was charged and why.
CREATE TABLE usage_charges (
    job_id        bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run           integer NOT NULL CHECK (run >= 0),
    account       text NOT NULL,
    user_name     text NOT NULL,
    -- seconds the run held its allocation
    elapsed       bigint NOT NULL CHECK (elapsed >= 0),
    -- Σ TRES × billing weight (per second)
    billing       double precision NOT NULL CHECK (billing >= 0),
    usage_factor  double precision NOT NULL CHECK (usage_factor >= 0),
    -- elapsed × billing × usage_factor
    amount        double precision NOT NULL CHECK (amount >= 0),
    charged_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, run)
);

CREATE TABLE qos (
    name                      text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]+$'),
    description               text NOT NULL DEFAULT '',
    priority                  integer NOT NULL DEFAULT 0 CHECK (priority >= 0),
    usage_factor              double precision NOT NULL DEFAULT 1 CHECK (usage_factor >= 0),
    -- TRES limits as {"cpu": n, "gpu": n, "node": n}; an absent key is no limit
    max_tres_per_user         jsonb NOT NULL DEFAULT '{}',
    max_tres_per_account      jsonb NOT NULL DEFAULT '{}',
    grp_tres                  jsonb NOT NULL DEFAULT '{}',
    max_jobs_per_user         integer CHECK (max_jobs_per_user >= 0),
    max_submit_jobs_per_user  integer CHECK (max_submit_jobs_per_user >= 0),
    -- seconds
    max_wall                  bigint CHECK (max_wall > 0),
    -- the QOS whose jobs this one's jobs may preempt
    preempt                   text[] NOT NULL DEFAULT '{}',
    -- what happens to this QOS's jobs when preempted
    preempt_mode              text NOT NULL DEFAULT 'CANCEL' CHECK (preempt_mode IN ('CANCEL', 'REQUEUE')),
    -- seconds between SIGTERM and the kill of a preempted job
    grace_time                bigint NOT NULL DEFAULT 0 CHECK (grace_time >= 0),
    -- seconds after its start during which a job of this QOS cannot be preempted
    preempt_exempt_time       bigint NOT NULL DEFAULT 0 CHECK (preempt_exempt_time >= 0),
    created_at                timestamptz NOT NULL DEFAULT now()
);
INSERT INTO qos (name, description) VALUES ('normal', 'the default QOS');

ALTER TABLE partitions
    ADD COLUMN max_nodes         integer CHECK (max_nodes >= 1),
    -- empty = every account / QOS
    ADD COLUMN allowed_accounts  text[] NOT NULL DEFAULT '{}',
    ADD COLUMN allowed_qos       text[] NOT NULL DEFAULT '{}';

-- The factors of a pending job's last computed priority (as `sprio` shows them), kept
-- beside the job row so the scheduler rewrites them without touching `jobs`.
CREATE TABLE job_priority (
    job_id      bigint PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
    factors     jsonb NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now()
);

-- Preemptions decided by the scheduler: the victim's run, the job it makes room for, and
-- when the victim's grace time ends (SIGTERM at `created_at`, killed at `kill_at`).
CREATE TABLE job_preemptions (
    job_id      bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run         integer NOT NULL CHECK (run >= 0),
    preemptor   bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    mode        text NOT NULL CHECK (mode IN ('CANCEL', 'REQUEUE')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    kill_at     timestamptz NOT NULL,
    done_at     timestamptz,
    PRIMARY KEY (job_id, run)
);

-- The scheduler charges runs released in the last week that have no charge yet.
CREATE INDEX allocations_released ON allocations (released_at) WHERE released_at IS NOT NULL;
