-- Issue 11: CPU topology. Each CPU id's domain as the worker reports it (the NUMA node of
-- the real CPU, numbered as GPU domains are: the NUMA node of a GPU's PCI device; for
-- simulated nodes, the simulated GPU domains split evenly over the CPU ids). Empty: not
-- reported. The commit gives a job CPUs of its GPUs' domains first.
ALTER TABLE nodes ADD COLUMN cpu_domains integer[] NOT NULL DEFAULT '{}';
