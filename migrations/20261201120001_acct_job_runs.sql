-- Accounting (issue 13): one record per job run, written once when the run is over, kept
-- after a requeue starts the next run (sacct -D shows every run). A record cascades from
-- its job: the retention purge deletes old `jobs` rows and their records go with them.
--
-- A run is over when its job has moved on (a requeue, node failure or preemption with
-- requeue made a later run) or ended in its current run, and none of its allocations is
-- live. Triggers queue candidate runs in `acct_pending` (an allocation released, a job
-- entering a terminal state), whatever code path does it; the scheduler leader's cycle
-- records the queued runs that are over (`berth_db::accounting::acct_record_pending`),
-- each exactly once (primary key, ON CONFLICT DO NOTHING) and dequeues them in the same
-- statement.
--
-- `acct_run_compute(job, run)` is the one definition of a run's figures: the recorder
-- stores its result, and sacct computes it on the fly for runs not recorded yet (pending,
-- running, or ended since the last cycle).

CREATE TABLE acct_job_runs (
    job_id            bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    run               integer NOT NULL CHECK (run >= 0),
    name              text NOT NULL,
    user_name         text NOT NULL,
    -- the job's account, else its user's default account, else root
    account           text NOT NULL,
    partition         text NOT NULL,
    qos               text NOT NULL,
    array_job_id      bigint,
    array_task_id     integer,
    -- an array master's task indices not started yet (`3-9`), when it had some
    array_pending     text,
    -- the run's state: the job's end state for its last run; REQUEUED, NODE_FAIL or
    -- PREEMPTED for a run a requeue ended
    state             text NOT NULL,
    reason            text,
    -- what ended a requeued run (`node_fail on n1`, `preempted by job 7`, `requeued by alice`)
    requeue_reason    text,
    exit_code         integer,
    exit_signal       integer,
    submit_time       timestamptz NOT NULL,
    eligible_time     timestamptz NOT NULL,
    start_time        timestamptz,
    end_time          timestamptz,
    -- seconds from start to end (0 when it never started)
    elapsed           bigint NOT NULL CHECK (elapsed >= 0),
    -- seconds; NULL unlimited
    time_limit        bigint,
    -- requested TRES: CPUs, memory MiB (NULL: a share of the node), GPUs (or shards), nodes
    req_cpus          bigint NOT NULL,
    req_mem_mib       bigint,
    req_gpus          bigint NOT NULL,
    req_gpu_type      text,
    req_nodes         integer NOT NULL,
    -- allocated TRES over all nodes of the run
    alloc_cpus        bigint NOT NULL,
    alloc_mem_mib     bigint NOT NULL,
    alloc_gpus        bigint NOT NULL,
    -- GPUs held by model (lower case, as Slurm's GRES types): {"h100": 2}
    alloc_gpu_models  jsonb NOT NULL DEFAULT '{}',
    alloc_nodes       integer NOT NULL,
    -- node names, by node index
    nodes             text[] NOT NULL DEFAULT '{}',
    -- Σ GPUs held × seconds held, over the run's allocations
    gpu_seconds       double precision NOT NULL DEFAULT 0,
    -- from job_gpu_stats: average utilisation %, peak memory MiB, energy J
    gpu_util_avg      double precision,
    gpu_mem_peak_mib  bigint,
    energy_j          double precision,
    -- from the run's `exited` report, where the batch node's cgroup reported them: CPU
    -- seconds and peak memory MiB of the run's processes on that node (else NULL)
    cpu_time_s        double precision,
    max_rss_mib       bigint,
    -- cloud cost of the run on pool nodes, in the pools' currency (see acct_run_compute)
    cost              double precision,
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    -- a later run of the job exists (sacct without -D hides this record); set when the
    -- run is recorded after its job moved on, and by a trigger when the job is requeued
    superseded        boolean NOT NULL DEFAULT false,
    PRIMARY KEY (job_id, run)
);
-- sacct's time window (runs that were in [start, end]): a range of end times, read
-- index-only (the columns the window, the latest-run rule and the page order need), then
-- the first page by job id.
CREATE INDEX acct_job_runs_end ON acct_job_runs (end_time)
    INCLUDE (job_id, run, start_time, submit_time, superseded);
CREATE INDEX acct_job_runs_user ON acct_job_runs (user_name, end_time);
CREATE INDEX acct_job_runs_account ON acct_job_runs (account, end_time);

-- Runs that may be over and have no record yet. No foreign key (as usage_pending): queuing
-- must not lock the job row; a row whose job is gone is dropped by the recorder.
CREATE TABLE acct_pending (
    job_id  bigint NOT NULL,
    run     integer NOT NULL CHECK (run >= 0),
    PRIMARY KEY (job_id, run)
);

CREATE FUNCTION berth_acct_pending_allocation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO acct_pending (job_id, run) VALUES (NEW.job_id, NEW.run) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER allocations_acct_pending AFTER UPDATE OF released_at ON allocations
    FOR EACH ROW WHEN (OLD.released_at IS NULL AND NEW.released_at IS NOT NULL)
    EXECUTE FUNCTION berth_acct_pending_allocation();
CREATE TRIGGER allocations_acct_pending_insert AFTER INSERT ON allocations
    FOR EACH ROW WHEN (NEW.released_at IS NOT NULL)
    EXECUTE FUNCTION berth_acct_pending_allocation();

CREATE FUNCTION berth_acct_pending_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO acct_pending (job_id, run) VALUES (NEW.id, NEW.restart_count) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_acct_pending AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
                       AND NEW.state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'))
    EXECUTE FUNCTION berth_acct_pending_job();
-- A requeue (restart_count up) supersedes the records of the job's earlier runs.
CREATE FUNCTION berth_acct_superseded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE acct_job_runs SET superseded = true
    WHERE job_id = NEW.id AND run < NEW.restart_count AND NOT superseded;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_acct_superseded AFTER UPDATE OF restart_count ON jobs
    FOR EACH ROW WHEN (NEW.restart_count > OLD.restart_count)
    EXECUTE FUNCTION berth_acct_superseded();
CREATE TRIGGER jobs_acct_pending_insert AFTER INSERT ON jobs
    FOR EACH ROW WHEN (NEW.state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING'))
    EXECUTE FUNCTION berth_acct_pending_job();

-- A run's accounting figures, as of now (for a run not over: so far).
--
-- * State: the job's for its current run; for a run a requeue left behind, NODE_FAIL
--   (node failure, spot reclaim), PREEMPTED (preemption with requeue) or REQUEUED
--   (scontrol requeue, a batch launch failure).
-- * Start: the job's start for its current run, else the run's first allocation; end: the
--   job's end for its current run, else the event that ended the run (node failure,
--   preemption, reclaim, or the next run's `requeued`), else the last release.
-- * Exit code and signal: the job's for its current run, else the run's `exited` report.
-- * CPU time and peak memory (sacct's TotalCPU, MaxRSS): the run's `exited` report's, as
--   the batch node's cgroup gave them (the api keeps only values that fit).
-- * GPU-seconds: Σ over the run's allocations of GPUs held × (release − creation).
-- * Cost: for each allocation on a pool node, the price per hour of the node's instance
--   type (from the pool's spec) × hours held × the run's share of the node: all of it when
--   exclusive, else GPUs held / the node's GPUs, else CPUs held / the node's CPUs (capped
--   at 1); NULL when no pool node ran the run.
CREATE FUNCTION acct_run_compute(p_job bigint, p_run integer) RETURNS acct_job_runs
LANGUAGE sql STABLE AS $$
SELECT j.id, p_run, j.name, j.user_name,
       COALESCE(j.account, u.default_account, 'root'),
       j.partition, COALESCE(j.qos, 'normal'),
       j.array_job_id, j.array_task_id, j.array_pending,
       CASE WHEN c.cur THEN j.state
            WHEN ev.kind IN ('node_fail', 'reclaimed') THEN 'NODE_FAIL'
            WHEN ev.kind = 'preempted' THEN 'PREEMPTED'
            ELSE 'REQUEUED' END,
       CASE WHEN c.cur THEN j.reason END,
       CASE ev.kind
            WHEN 'node_fail' THEN 'node_fail on ' || COALESCE(ev.node, '?')
            WHEN 'reclaimed' THEN 'reclaimed on ' || COALESCE(ev.node, '?')
            WHEN 'preempted' THEN 'preempted by job ' || COALESCE(ev.detail->>'preemptor', '?')
            WHEN 'requeued' THEN COALESCE('launch failed: ' || (ev.detail->>'launch_failed'),
                                          'requeued by ' || (ev.detail->>'by'), 'requeued')
       END,
       CASE WHEN c.cur THEN j.exit_code ELSE (ex.detail->>'exit_code')::integer END,
       CASE WHEN c.cur THEN j.exit_signal ELSE (ex.detail->>'signal')::integer END,
       j.submit_time,
       GREATEST(j.submit_time, j.begin_time),
       t.start_time,
       t.end_time,
       CASE WHEN t.start_time IS NULL THEN 0
            ELSE GREATEST(0, EXTRACT(EPOCH FROM COALESCE(t.end_time, now()) - t.start_time))::bigint
       END,
       j.time_limit,
       GREATEST(j.num_tasks::bigint * j.cpus_per_task, j.cpus_per_node::bigint * j.num_nodes),
       COALESCE(j.mem_per_node_mib, j.mem_mib) * j.num_nodes,
       j.gpus_per_node::bigint * j.num_nodes,
       j.gpu_type,
       j.num_nodes,
       COALESCE(NULLIF(al.cpus, 0), CASE WHEN al.n > 0 THEN j.num_tasks::bigint * j.cpus_per_task ELSE 0 END),
       COALESCE(NULLIF(al.mem, 0), CASE WHEN al.n > 0 THEN COALESCE(j.mem_per_node_mib, j.mem_mib, 0) * al.n ELSE 0 END),
       COALESCE(al.gpus, 0),
       COALESCE(gm.models, '{}'::jsonb),
       COALESCE(al.n, 0)::integer,
       COALESCE(al.nodes, '{}'::text[]),
       COALESCE(al.gpu_seconds, 0),
       gs.util,
       gs.peak,
       gs.energy,
       ru.cpu_time_s,
       ru.max_rss_mib,
       al.cost,
       now(),
       j.restart_count > p_run
FROM jobs j
LEFT JOIN users u ON u.name = j.user_name
CROSS JOIN LATERAL (SELECT j.restart_count = p_run AS cur) c
LEFT JOIN LATERAL (
    SELECT count(*) AS n,
           array_agg(n.name ORDER BY a.node_index) AS nodes,
           SUM(cardinality(a.cpu_ids))::bigint AS cpus,
           SUM(a.mem_mib)::bigint AS mem,
           SUM(cardinality(a.gpu_indices))::bigint AS gpus,
           MIN(a.created_at) AS created,
           MAX(a.released_at) AS released,
           SUM(cardinality(a.gpu_indices)
               * EXTRACT(EPOCH FROM COALESCE(a.released_at, now()) - a.created_at))::float8 AS gpu_seconds,
           SUM(CASE WHEN n.pool IS NOT NULL THEN
                 COALESCE((SELECT (it->>'price_per_hour')::float8
                           FROM pools pl, jsonb_array_elements(pl.spec->'instance_types') it
                           WHERE pl.name = n.pool AND it->>'name' = n.instance_type LIMIT 1), 0)
                 * EXTRACT(EPOCH FROM COALESCE(a.released_at, now()) - a.created_at)::float8 / 3600.0
                 * CASE WHEN a.exclusive THEN 1.0
                        WHEN cardinality(a.gpu_indices) > 0 THEN
                             LEAST(1.0, cardinality(a.gpu_indices)::float8
                                   / GREATEST(1, (SELECT count(*) FROM gpus g
                                                  WHERE g.node_id = n.id AND g.kind = 'gpu')))
                        WHEN cardinality(a.cpu_ids) > 0 AND n.cpus > 0 THEN
                             LEAST(1.0, cardinality(a.cpu_ids)::float8 / n.cpus)
                        ELSE 1.0 END
               END)::float8 AS cost
    FROM allocations a JOIN nodes n ON n.id = a.node_id
    WHERE a.job_id = p_job AND a.run = p_run
) al ON true
LEFT JOIN LATERAL (
    SELECT jsonb_object_agg(s.model, s.count) AS models
    FROM (SELECT lower(g.model) AS model, count(*) AS count
          FROM allocations a
          JOIN allocation_gpus ag ON ag.allocation_id = a.id
          JOIN gpus g ON g.node_id = ag.node_id AND g.index = ag.gpu_index
          WHERE a.job_id = p_job AND a.run = p_run
          GROUP BY 1) s
) gm ON true
LEFT JOIN LATERAL (
    SELECT CASE WHEN SUM(s.samples) > 0
                THEN SUM(s.utilization_sum)::float8 / SUM(s.samples) END AS util,
           MAX(s.memory_peak_mib) AS peak,
           SUM(s.energy_j)::float8 AS energy
    FROM job_gpu_stats s WHERE s.job_id = p_job AND s.run = p_run
) gs ON true
LEFT JOIN LATERAL (
    SELECT e.kind, e.node, e.detail, e.at FROM job_events e
    WHERE e.job_id = p_job
      AND ((e.run = p_run AND e.kind IN ('node_fail', 'preempted', 'reclaimed'))
           OR (e.run = p_run + 1 AND e.kind = 'requeued'))
    ORDER BY e.id LIMIT 1
) ev ON NOT c.cur
LEFT JOIN LATERAL (
    SELECT e.detail FROM job_events e
    WHERE e.job_id = p_job AND e.run = p_run AND e.kind = 'exited'
    ORDER BY e.id LIMIT 1
) ex ON NOT c.cur
LEFT JOIN LATERAL (
    SELECT (e.detail->>'cpu_time_seconds')::float8 AS cpu_time_s,
           (e.detail->>'max_rss_mib')::bigint AS max_rss_mib
    FROM job_events e
    WHERE e.job_id = p_job AND e.run = p_run AND e.kind = 'exited'
    ORDER BY e.id LIMIT 1
) ru ON true
CROSS JOIN LATERAL (
    SELECT CASE WHEN c.cur THEN j.start_time ELSE al.created END AS start_time,
           CASE WHEN c.cur THEN j.end_time ELSE COALESCE(ev.at, al.released) END AS end_time
) t
WHERE j.id = p_job
$$;

-- Every run that may already be over, so that history before this migration is recorded.
INSERT INTO acct_pending (job_id, run)
SELECT DISTINCT job_id, run FROM allocations WHERE released_at IS NOT NULL
UNION
SELECT id, restart_count FROM jobs
WHERE state NOT IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING')
ON CONFLICT DO NOTHING;
