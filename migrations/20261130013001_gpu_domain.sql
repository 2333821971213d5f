-- GPU topology (issue 3): the domain a GPU belongs to on its node (GPUs with the same
-- number are close: one NUMA node, one NVLink island). The scheduler gives a job GPUs of
-- one domain when it can. NULL when the node does not report it.
ALTER TABLE gpus ADD COLUMN domain integer CHECK (domain >= 0);
