-- Issue 13 (metrics): the cluster-wide counters and histograms `/metrics` shows, kept by
-- the scheduler leader so that every api replica reads the same values and a scrape runs
-- no query. One row per series: a counter's value (`jobs_ended` with labels
-- `COMPLETED|gpu`), or one part of a histogram (`queue_wait_seconds:bucket` with labels
-- `<le>`, `queue_wait_seconds:sum`, `queue_wait_seconds:count`). Values only grow: the
-- leader adds what it observed since its last flush (see scheduler/src/metrics.rs).
CREATE TABLE cluster_counters (
    name    text NOT NULL,
    -- The series' label values, joined with `|`, in the order the metric documents.
    labels  text NOT NULL DEFAULT '',
    value   double precision NOT NULL DEFAULT 0 CHECK (value >= 0),
    PRIMARY KEY (name, labels)
);

-- Who last flushed the counters (the leader's term: an older term's flush is refused),
-- and up to when the jobs' starts and ends, and the preemptions, have been counted:
-- every later flush counts (observed_until, now() - lag], so each is counted once,
-- whichever leader flushes.
CREATE TABLE cluster_counters_state (
    role            text PRIMARY KEY,
    term            bigint NOT NULL,
    observed_until  timestamptz NOT NULL,
    flushed_at      timestamptz NOT NULL DEFAULT now()
);

-- The flush's windows read jobs by start and end time and preemptions by time (by end
-- time through `jobs_ended`, made with the usage rollups).
CREATE INDEX jobs_start_time ON jobs (start_time) WHERE start_time IS NOT NULL;
CREATE INDEX job_preemptions_created ON job_preemptions (created_at);
