-- MIG instances and GPU shards as devices (issue 3). A node offers whole GPUs, MIG
-- instances of GPUs in MIG mode, or shares of GPUs (Slurm's `shard` GRES); MIG instances
-- and shards name the physical GPU they are part of. A job asks for GPUs (whole GPUs or
-- MIG instances, `--gres=gpu:…`) or for shards (`--gres=shard:N`).
ALTER TABLE gpus
    ADD COLUMN kind text NOT NULL DEFAULT 'gpu' CHECK (kind IN ('gpu', 'mig', 'shard')),
    ADD COLUMN parent integer CHECK (parent >= 0),
    ADD CHECK ((kind = 'gpu') = (parent IS NULL));
ALTER TABLE jobs
    ADD COLUMN gres text NOT NULL DEFAULT 'gpu' CHECK (gres IN ('gpu', 'shard'));
