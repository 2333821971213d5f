-- Issue 27: a job's identity survives a failover to an asynchronous standby.
--
-- `jobs.id` comes from a sequence; PostgreSQL promoted from a standby that lost the last
-- commits hands out ids the lost primary had already given to jobs that ran. Each job
-- gets a random incarnation when it is written, carried by every assignment, run grant,
-- job token, report and output chunk: a message of another incarnation never applies.
ALTER TABLE jobs ADD COLUMN incarnation uuid NOT NULL DEFAULT gen_random_uuid();

-- The highest job id each node's worker said it remembers (its runs and journal): after
-- a failover the job id sequence is moved past it, so that no new job takes the id of a
-- run a worker remembers.
ALTER TABLE node_report_state ADD COLUMN job_id_seen bigint NOT NULL DEFAULT 0;
