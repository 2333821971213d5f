-- Change tracking for the scheduler's incremental snapshot refresh (issue 3).
--
-- The leader keeps its snapshot in memory and, each cycle, reads only what changed since
-- its last read. A change is recognised by the writing transaction's id: the rows the
-- scheduler reads carry `change_xid`, the id of the last transaction that changed
-- something the scheduler reads in them, and the leader asks for the rows whose
-- `change_xid` its previous snapshot (`pg_current_snapshot()`) could not see. That is
-- exact under concurrency: a transaction still running at the previous read is invisible
-- to that snapshot, so its rows are read once it has committed, whatever order
-- transactions commit in.
--
-- Columns only the scheduler itself writes back (a pending job's reason, expected start
-- and priority) or that only carry monitoring samples (heartbeats, GPU utilisation) do
-- not count as changes, so a cycle does not re-read every pending job it has just
-- annotated, nor every node that synced.
--
-- `change_xid` is the 64-bit transaction id (`xid8`, epoch and xid, which never wraps)
-- stored as bigint, `berth_xid()`.
--
-- Small tables (partitions, QOS, accounts, users, usage) are re-read whole
-- when one of their rows changed; their marks live in `change_marks`, as does the mark of
-- a deletion from a tracked table (which makes the leader re-read everything).

-- This transaction's 64-bit id (assigning one if it has none yet).
CREATE FUNCTION berth_xid() RETURNS bigint LANGUAGE sql VOLATILE
    AS $$ SELECT pg_current_xact_id()::text::bigint $$;

CREATE TABLE change_marks (
    table_name  text PRIMARY KEY,
    change_xid  bigint NOT NULL DEFAULT berth_xid()
);
INSERT INTO change_marks (table_name)
VALUES ('partitions'), ('qos'), ('accounts'), ('users'), ('usage'),
       ('deleted');

-- Bumps the mark of TG_ARGV[0] (default: the trigger's table) to this transaction, once
-- per transaction.
CREATE FUNCTION berth_mark_table() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_marks SET change_xid = berth_xid()
    WHERE table_name = COALESCE(TG_ARGV[0], TG_TABLE_NAME)
      AND change_xid <> berth_xid();
    RETURN NULL;
END $$;

CREATE TRIGGER partitions_mark AFTER INSERT OR UPDATE OR DELETE ON partitions
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table();
CREATE TRIGGER qos_mark AFTER INSERT OR UPDATE OR DELETE ON qos
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table();
CREATE TRIGGER accounts_mark AFTER INSERT OR UPDATE OR DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table();
CREATE TRIGGER users_mark AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table();
CREATE TRIGGER usage_mark AFTER INSERT OR UPDATE OR DELETE ON usage
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table();

-- Row-level marks. Each function copies the columns that do not count from OLD, and
-- stamps the row only when something else differs (new columns count by default).
CREATE FUNCTION berth_stamp_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.change_xid := berth_xid();
    RETURN NEW;
END $$;

CREATE FUNCTION berth_stamp_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    probe jobs;
BEGIN
    probe := NEW;
    probe.reason := OLD.reason;
    probe.expected_start := OLD.expected_start;
    probe.priority := OLD.priority;
    probe.change_xid := OLD.change_xid;
    IF probe IS DISTINCT FROM OLD THEN
        NEW.change_xid := berth_xid();
    ELSE
        NEW.change_xid := OLD.change_xid;
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION berth_stamp_node() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    probe nodes;
BEGIN
    probe := NEW;
    probe.last_heartbeat := OLD.last_heartbeat;
    probe.change_xid := OLD.change_xid;
    IF probe IS DISTINCT FROM OLD THEN
        NEW.change_xid := berth_xid();
    ELSE
        NEW.change_xid := OLD.change_xid;
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION berth_stamp_gpu() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    probe gpus;
BEGIN
    probe := NEW;
    probe.utilization_pct := OLD.utilization_pct;
    probe.memory_used_mib := OLD.memory_used_mib;
    probe.power_w := OLD.power_w;
    probe.temperature_c := OLD.temperature_c;
    probe.sampled_at := OLD.sampled_at;
    probe.change_xid := OLD.change_xid;
    IF probe IS DISTINCT FROM OLD THEN
        NEW.change_xid := berth_xid();
    ELSE
        NEW.change_xid := OLD.change_xid;
    END IF;
    RETURN NEW;
END $$;

ALTER TABLE jobs ADD COLUMN change_xid bigint NOT NULL DEFAULT berth_xid();
ALTER TABLE nodes ADD COLUMN change_xid bigint NOT NULL DEFAULT berth_xid();
ALTER TABLE gpus ADD COLUMN change_xid bigint NOT NULL DEFAULT berth_xid();
ALTER TABLE allocations ADD COLUMN change_xid bigint NOT NULL DEFAULT berth_xid();
ALTER TABLE job_preemptions ADD COLUMN change_xid bigint NOT NULL DEFAULT berth_xid();
CREATE INDEX jobs_change ON jobs (change_xid);
CREATE INDEX nodes_change ON nodes (change_xid);
CREATE INDEX gpus_change ON gpus (change_xid);
CREATE INDEX allocations_change ON allocations (change_xid);
CREATE INDEX job_preemptions_change ON job_preemptions (change_xid);

CREATE TRIGGER jobs_stamp_insert BEFORE INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_row();
CREATE TRIGGER jobs_stamp BEFORE UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_job();
CREATE TRIGGER nodes_stamp_insert BEFORE INSERT ON nodes
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_row();
CREATE TRIGGER nodes_stamp BEFORE UPDATE ON nodes
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_node();
CREATE TRIGGER gpus_stamp_insert BEFORE INSERT ON gpus
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_row();
CREATE TRIGGER gpus_stamp BEFORE UPDATE ON gpus
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_gpu();
CREATE TRIGGER allocations_stamp BEFORE INSERT OR UPDATE ON allocations
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_row();
CREATE TRIGGER job_preemptions_stamp BEFORE INSERT OR UPDATE ON job_preemptions
    FOR EACH ROW EXECUTE FUNCTION berth_stamp_row();

-- A deletion from a tracked table (none of Berth's own code deletes from them; an
-- operator's manual clean-up might) makes the leader re-read everything.
CREATE TRIGGER jobs_mark_delete AFTER DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('deleted');
CREATE TRIGGER nodes_mark_delete AFTER DELETE ON nodes
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('deleted');
CREATE TRIGGER gpus_mark_delete AFTER DELETE ON gpus
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('deleted');
CREATE TRIGGER allocations_mark_delete AFTER DELETE ON allocations
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('deleted');
CREATE TRIGGER job_preemptions_mark_delete AFTER DELETE ON job_preemptions
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('deleted');
