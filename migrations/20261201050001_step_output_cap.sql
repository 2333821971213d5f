-- How much of each step task's stream the database keeps (capped as the batch output is,
-- `[api] output_cap_mib`) and whether it stopped keeping more. The node's files are never
-- touched.
CREATE TABLE step_output_totals (
    job_id    bigint NOT NULL,
    run       integer NOT NULL,
    step_id   integer NOT NULL,
    task_id   integer NOT NULL,
    stream    text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    bytes     bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    truncated boolean NOT NULL DEFAULT false,
    PRIMARY KEY (job_id, run, step_id, task_id, stream),
    FOREIGN KEY (job_id, run, step_id, task_id)
        REFERENCES step_tasks(job_id, run, step_id, task_id) ON DELETE CASCADE
);

INSERT INTO step_output_totals (job_id, run, step_id, task_id, stream, bytes)
    SELECT job_id, run, step_id, task_id, stream, sum(length(data))
    FROM step_output GROUP BY job_id, run, step_id, task_id, stream;
