-- Issue 11: CPUs and memory are placed like GPUs. Each node's share of a job holds
-- concrete logical CPU ids (as the node reported them, 0 .. cpus-1) and an amount of
-- memory (MiB); both are filled by the scheduler's commit.
ALTER TABLE allocations
    ADD COLUMN cpu_ids integer[] NOT NULL DEFAULT '{}',
    ADD COLUMN mem_mib bigint NOT NULL DEFAULT 0 CHECK (mem_mib >= 0);
