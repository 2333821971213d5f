-- Scheduling state of jobs (issue 3): priority inputs and outputs, --begin, --dependency,
-- and job arrays kept as one master row whose not-yet-started task indices are a compact
-- range list (`array_pending`), split into task rows only as tasks start.
ALTER TABLE jobs
    ADD COLUMN nice              integer NOT NULL DEFAULT 0,
    -- an administrator's priority adjustment (added to the multifactor priority)
    ADD COLUMN priority_adjust   bigint NOT NULL DEFAULT 0,
    -- the priority the scheduler computed last
    ADD COLUMN priority          bigint,
    ADD COLUMN begin_time        timestamptz,
    -- the start of the job's backfill reservation, set by the scheduler
    ADD COLUMN expected_start    timestamptz,
    ADD COLUMN dependency        text,
    -- array master: task indices not started yet (`0-15:4,20`); NULL once all started
    ADD COLUMN array_pending     text,
    ADD COLUMN array_max_running integer CHECK (array_max_running >= 1),
    ADD COLUMN array_task_count  integer CHECK (array_task_count >= 1);
CREATE INDEX jobs_array ON jobs (array_job_id, array_task_id) WHERE array_job_id IS NOT NULL;
