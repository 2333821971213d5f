-- Issue 11: what a job asks for, as the scheduler places it.
--
-- Jobs: the CPUs and memory each of its nodes must give it (computed at submission by
-- Slurm's rules, with its partition's defaults), the nodes it must (-w) or must not (-x)
-- be given, the partitions it may start in when -p listed several (`partition` holds the
-- first until it starts, then the one it started in), and --time-min.
ALTER TABLE jobs
    ADD COLUMN cpus_per_node integer NOT NULL DEFAULT 1 CHECK (cpus_per_node >= 1),
    -- MiB; NULL: a share of each node's memory in proportion to its CPUs there
    ADD COLUMN mem_per_node_mib bigint CHECK (mem_per_node_mib >= 0),
    ADD COLUMN nodelist text[] NOT NULL DEFAULT '{}',
    ADD COLUMN exclude text[] NOT NULL DEFAULT '{}',
    -- every partition -p named, in order, when it named more than one; else empty
    ADD COLUMN partitions text[] NOT NULL DEFAULT '{}',
    -- seconds
    ADD COLUMN time_min bigint CHECK (time_min > 0);

-- Jobs not ended keep asking what they asked: -c × tasks per node, --mem per node.
UPDATE jobs
SET cpus_per_node = GREATEST(1, LEAST(2147483647,
        cpus_per_task::bigint * ((num_tasks + num_nodes - 1) / GREATEST(num_nodes, 1)))),
    mem_per_node_mib = NULLIF(mem_mib, 0)
WHERE state IN ('PENDING', 'RUNNING', 'SUSPENDED', 'COMPLETING');

-- Partitions: slurm.conf's CPU and memory defaults and cap (MiB; NULL = none).
ALTER TABLE partitions
    ADD COLUMN def_cpu_per_gpu integer CHECK (def_cpu_per_gpu >= 1),
    ADD COLUMN def_mem_per_gpu bigint CHECK (def_mem_per_gpu >= 1),
    ADD COLUMN def_mem_per_cpu bigint CHECK (def_mem_per_cpu >= 1),
    ADD COLUMN max_mem_per_node bigint CHECK (max_mem_per_node >= 1);
