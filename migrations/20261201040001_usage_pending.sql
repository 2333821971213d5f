-- Incremental usage charging (issue 10, item 20).
--
-- Each scheduler cycle charges the job runs whose allocations are all released and that
-- have no charge yet. It used to find them by scanning every allocation released in the
-- last 7 days against the ledger (`usage_charges`): a cost that grows with history.
-- Now a release records its run here (a trigger, whatever code path releases), the
-- cycle reads only these rows, and charging a run deletes its row in the same
-- transaction that writes the ledger.

-- No foreign key: queuing a run must not lock its job row (a release may come from a
-- path that has not locked it); a row whose job is gone is dropped by the next prune.
CREATE TABLE usage_pending (
    job_id  bigint NOT NULL,
    run     integer NOT NULL CHECK (run >= 0),
    PRIMARY KEY (job_id, run)
);

CREATE FUNCTION berth_usage_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_pending (job_id, run) VALUES (NEW.job_id, NEW.run)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER allocations_usage_pending AFTER UPDATE OF released_at ON allocations
    FOR EACH ROW WHEN (OLD.released_at IS NULL AND NEW.released_at IS NOT NULL)
    EXECUTE FUNCTION berth_usage_pending();
CREATE TRIGGER allocations_usage_pending_insert AFTER INSERT ON allocations
    FOR EACH ROW WHEN (NEW.released_at IS NOT NULL)
    EXECUTE FUNCTION berth_usage_pending();

-- The runs the previous query would still charge.
INSERT INTO usage_pending (job_id, run)
SELECT DISTINCT r.job_id, r.run FROM allocations r
WHERE r.released_at IS NOT NULL AND r.released_at > now() - interval '7 days'
  AND NOT EXISTS (SELECT 1 FROM usage_charges c WHERE c.job_id = r.job_id AND c.run = r.run)
ON CONFLICT DO NOTHING;
