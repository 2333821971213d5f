-- Advance reservations (issue 11; Slurm's `scontrol create reservation`): a window of
-- time in which some nodes, or some GPUs of some nodes, are held for the jobs that name
-- the reservation (`--reservation`) and whose user or account it allows.
--
-- The nodes (and, for a GPU-count reservation, the GPU indices) are chosen when the
-- reservation is created or updated and stored concretely in `reservation_nodes`.
-- `start_time`/`end_time` are the first window; `DAILY`/`WEEKLY` repeat it every day or
-- week. A non-recurring reservation whose end has passed is no longer shown or planned
-- around; its row is purged at the next reservation write.
CREATE TABLE reservations (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}$'),
    start_time  timestamptz NOT NULL,
    end_time    timestamptz NOT NULL,
    users       text[] NOT NULL DEFAULT '{}',
    accounts    text[] NOT NULL DEFAULT '{}',
    flags       text[] NOT NULL DEFAULT '{}'
                CHECK (flags <@ ARRAY['MAINT', 'IGNORE_JOBS', 'DAILY', 'WEEKLY', 'FLEX']::text[]),
    -- Slurm's PartitionName: the partition the nodes were picked from (information).
    partition   text,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT reservations_window CHECK (end_time > start_time),
    CONSTRAINT reservations_access CHECK (cardinality(users) + cardinality(accounts) > 0),
    CONSTRAINT reservations_one_recurrence CHECK (NOT flags @> ARRAY['DAILY', 'WEEKLY']::text[])
);

CREATE TABLE reservation_nodes (
    reservation  text NOT NULL REFERENCES reservations(name) ON DELETE CASCADE ON UPDATE CASCADE,
    node_id      bigint NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    -- The GPU indices held on the node (a GPU-count reservation); NULL: the whole node.
    gpu_indices  integer[] CHECK (gpu_indices IS NULL OR cardinality(gpu_indices) > 0),
    PRIMARY KEY (reservation, node_id)
);
CREATE INDEX reservation_nodes_node ON reservation_nodes (node_id);

-- The scheduler re-reads both tables whole when either changed (a small table).
INSERT INTO change_marks (table_name) VALUES ('reservations');
CREATE TRIGGER reservations_mark AFTER INSERT OR UPDATE OR DELETE ON reservations
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('reservations');
CREATE TRIGGER reservation_nodes_mark AFTER INSERT OR UPDATE OR DELETE ON reservation_nodes
    FOR EACH ROW EXECUTE FUNCTION berth_mark_table('reservations');
CREATE TRIGGER reservations_mark_truncate AFTER TRUNCATE ON reservations
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
CREATE TRIGGER reservation_nodes_mark_truncate AFTER TRUNCATE ON reservation_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION berth_mark_truncate();
