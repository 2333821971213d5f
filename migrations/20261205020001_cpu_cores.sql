-- Issue 29: CPU cores and hardware threads (--hint=nomultithread). Per CPU id, the core
-- it is on (cores numbered over the node; the threads of a core share a number) and its
-- socket, as the worker reports them; empty: not reported (every CPU a core of its own).
-- The scheduler gives jobs whole cores where cores have several threads; views show
-- Slurm's Sockets, CoresPerSocket and ThreadsPerCore from them.
ALTER TABLE nodes
    ADD COLUMN cpu_cores integer[] NOT NULL DEFAULT '{}'
        CHECK (0 <= ALL (cpu_cores)),
    ADD COLUMN cpu_sockets integer[] NOT NULL DEFAULT '{}'
        CHECK (0 <= ALL (cpu_sockets));
