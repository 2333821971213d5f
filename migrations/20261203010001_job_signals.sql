-- Signals for running jobs' processes (`scancel --signal`, `POST /v1/jobs/{id}/signal`):
-- one row per node that runs the signalled part of a job run, handed to that node's
-- worker in its sync answer until the worker acknowledges it (then the row goes). A row
-- whose run no longer holds the node is never handed out and goes at the node's next
-- acknowledgement.
CREATE TABLE job_signals (
    id            bigserial PRIMARY KEY,
    job_id        bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run           integer NOT NULL CHECK (run >= 0),
    node_id       bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    -- Linux numbering, 1 (HUP) to 64 (RTMAX)
    signal        integer NOT NULL CHECK (signal BETWEEN 1 AND 64),
    -- steps: every step's tasks; batch: the batch shell alone; full: the batch shell's
    -- process group and every step's tasks; step: the tasks of step_id
    target        text NOT NULL CHECK (target IN ('steps', 'batch', 'full', 'step')),
    step_id       integer CHECK (step_id >= 0),
    requested_by  text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((target = 'step') = (step_id IS NOT NULL))
);
CREATE INDEX job_signals_node ON job_signals (node_id, id);
