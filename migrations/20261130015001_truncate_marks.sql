-- A TRUNCATE of a table the scheduler reads (row triggers do not see one) makes its
-- leader re-read everything at its next cycle, as a deletion does.
CREATE FUNCTION berth_mark_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_marks SET change_xid = berth_xid() WHERE table_name = 'deleted';
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_mark_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER nodes_mark_truncate AFTER TRUNCATE ON nodes
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER gpus_mark_truncate AFTER TRUNCATE ON gpus
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER allocations_mark_truncate AFTER TRUNCATE ON allocations
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER job_preemptions_mark_truncate AFTER TRUNCATE ON job_preemptions
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER partitions_mark_truncate AFTER TRUNCATE ON partitions
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER qos_mark_truncate AFTER TRUNCATE ON qos
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER accounts_mark_truncate AFTER TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER users_mark_truncate AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER usage_mark_truncate AFTER TRUNCATE ON usage
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
