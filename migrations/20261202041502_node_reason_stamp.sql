-- Who set a node's reason and when (Slurm's REASON_UID and REASON_TIME: sinfo -R's USER and
-- TIMESTAMP columns, %u/%U/%H). Every statement that changes a reason (an operator's
-- drain, the scheduler's reconcilers, the worker protocol, the cloud module) has them
-- filled by the trigger below: the time of the change, and who: the transaction's
-- `berth.reason_user` setting (the api sets it to the operator who drains), else `slurm`,
-- Slurm's name for the reasons its controller sets. A cleared reason clears both.
ALTER TABLE nodes ADD COLUMN reason_user text, ADD COLUMN reason_time timestamptz;

CREATE FUNCTION berth_node_reason_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.reason IS NOT DISTINCT FROM OLD.reason THEN
        RETURN NEW;
    END IF;
    IF NEW.reason IS NULL THEN
        NEW.reason_user := NULL;
        NEW.reason_time := NULL;
    ELSE
        NEW.reason_user := COALESCE(NULLIF(current_setting('berth.reason_user', true), ''), 'slurm');
        NEW.reason_time := now();
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER nodes_reason_stamp BEFORE INSERT OR UPDATE OF reason ON nodes
    FOR EACH ROW EXECUTE FUNCTION berth_node_reason_stamp();
