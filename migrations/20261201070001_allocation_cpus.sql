-- Issue 11: the database refuses double allocation of CPUs as it does GPUs. One row per
-- logical CPU held by an allocation (the ids in allocations.cpu_ids), written with the
-- allocation and released with it; the partial unique index makes it impossible for two
-- live allocations to hold one CPU of a node, whatever the scheduler believes.
CREATE TABLE allocation_cpus (
    allocation_id  bigint NOT NULL REFERENCES allocations(id) ON DELETE CASCADE,
    node_id        bigint NOT NULL,
    cpu_id         integer NOT NULL CHECK (cpu_id >= 0),
    released_at    timestamptz,
    PRIMARY KEY (allocation_id, cpu_id)
);
CREATE UNIQUE INDEX allocation_cpus_one_live_holder
    ON allocation_cpus (node_id, cpu_id) WHERE released_at IS NULL;
