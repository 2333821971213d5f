-- `srun --pty`: task 0 of such a step runs in a pseudo-terminal on its node; what the
-- user types (and the terminal's size) arrives through `POST .../steps/{step}/input`,
-- kept here in arrival order until the node has applied it and the step has ended.
ALTER TABLE job_steps ADD COLUMN pty boolean NOT NULL DEFAULT false;

CREATE TABLE step_input (
    -- arrival order: the node applies input in this order, each row once
    seq      bigserial PRIMARY KEY,
    job_id   bigint NOT NULL,
    run      integer NOT NULL,
    step_id  integer NOT NULL,
    -- the bytes typed (may be empty when only the size changed)
    data     bytea NOT NULL,
    -- the terminal's new size, when it changed
    rows     integer CHECK (rows BETWEEN 1 AND 65535),
    cols     integer CHECK (cols BETWEEN 1 AND 65535),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((rows IS NULL) = (cols IS NULL)),
    FOREIGN KEY (job_id, run, step_id) REFERENCES job_steps(job_id, run, step_id) ON DELETE CASCADE
);
CREATE INDEX step_input_step ON step_input (job_id, run, step_id, seq);
