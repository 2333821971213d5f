-- How much of each job run's stream the database keeps (the api caps it, `[api]
-- output_cap_mib`) and whether it stopped keeping more. The node's output files are
-- never touched: only what the api stores is capped.
CREATE TABLE job_output_totals (
    job_id    bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run       integer NOT NULL CHECK (run >= 0),
    stream    text NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    bytes     bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    truncated boolean NOT NULL DEFAULT false,
    PRIMARY KEY (job_id, stream, run)
);

INSERT INTO job_output_totals (job_id, run, stream, bytes)
    SELECT job_id, run, stream, sum(length(data)) FROM job_output GROUP BY job_id, run, stream;
