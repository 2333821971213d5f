-- squeue's list (`GET /v1/queue`, berth_db::job::job_queue_list): the jobs not ended, by
-- id, read along one index whatever the size of the history beside them.
CREATE INDEX jobs_active ON jobs (id)
    WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING');
