-- Issue 11: a node's resources, as slurm.conf's node lines give them. The worker reports
-- what it sees (reported_*); operators configure values (node_config, by node name, so a
-- `[nodes.NAME]` section of the server config can name a node before it first registers);
-- the effective value (nodes.cpus, memory_mib, features, weight) is the configured one,
-- else the reported one. Registration and `berth node set` keep them so; readers of
-- nodes.cpus etc. always see the effective values.
CREATE TABLE node_config (
    name               text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9_.-]+$'),
    -- Slurm's CPUs.
    cpus               integer CHECK (cpus >= 1),
    -- Slurm's RealMemory, MiB.
    memory_mib         bigint CHECK (memory_mib >= 1),
    -- Slurm's Features.
    features           text[],
    -- Slurm's Weight: lower weights are placed first.
    weight             integer CHECK (weight >= 0),
    -- Slurm's CoreSpecCount: CPUs kept for the system.
    core_spec_count    integer CHECK (core_spec_count >= 0),
    -- Slurm's MemSpecLimit, MiB: memory kept for the system.
    mem_spec_limit_mib bigint CHECK (mem_spec_limit_mib >= 0),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE nodes
    ADD COLUMN reported_cpus       integer CHECK (reported_cpus >= 0),
    ADD COLUMN reported_memory_mib bigint CHECK (reported_memory_mib >= 0),
    ADD COLUMN reported_features   text[],
    ADD COLUMN reported_weight     integer CHECK (reported_weight >= 0),
    ADD COLUMN weight              integer NOT NULL DEFAULT 1 CHECK (weight >= 0),
    ADD COLUMN core_spec_count     integer NOT NULL DEFAULT 0 CHECK (core_spec_count >= 0),
    ADD COLUMN mem_spec_limit_mib  bigint NOT NULL DEFAULT 0 CHECK (mem_spec_limit_mib >= 0);

UPDATE nodes SET reported_cpus = cpus, reported_memory_mib = memory_mib,
                 reported_features = features;

-- What jobs may use: CPUs less CoreSpecCount, memory less MemSpecLimit (never below one
-- while the node has any: 0 means "not counted" to the planner).
ALTER TABLE nodes
    ADD COLUMN usable_cpus integer NOT NULL
        GENERATED ALWAYS AS (GREATEST(cpus - core_spec_count, LEAST(cpus, 1))) STORED,
    ADD COLUMN usable_memory_mib bigint NOT NULL
        GENERATED ALWAYS AS (GREATEST(memory_mib - mem_spec_limit_mib, LEAST(memory_mib, 1))) STORED;

-- A BEFORE UPDATE trigger sees generated columns not yet computed (NULL in NEW): the
-- change stamp compares them as they were (they follow the columns it does compare), so
-- a heartbeat stays a non-change and a change of CPUs or reserves still stamps the row.
CREATE OR REPLACE FUNCTION berth_stamp_node() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    probe nodes;
BEGIN
    probe := NEW;
    probe.last_heartbeat := OLD.last_heartbeat;
    probe.change_xid := OLD.change_xid;
    probe.usable_cpus := OLD.usable_cpus;
    probe.usable_memory_mib := OLD.usable_memory_mib;
    IF probe IS DISTINCT FROM OLD THEN
        NEW.change_xid := berth_xid();
    ELSE
        NEW.change_xid := OLD.change_xid;
    END IF;
    RETURN NEW;
END $$;
