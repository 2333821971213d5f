-- Slurm's association limit GrpTRES on accounts: what all running jobs charged to the
-- account and its sub-accounts may hold together (a serialized TresLimits: cpu, gpu,
-- node; an absent key is no limit).
ALTER TABLE accounts ADD COLUMN grp_tres jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(grp_tres) = 'object');
