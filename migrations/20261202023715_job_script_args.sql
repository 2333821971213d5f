-- `sbatch job.sh a b`: the batch script's arguments ($1, $2 …), passed to it as argv by
-- the worker. Array tasks copy them from their array's job.
ALTER TABLE jobs ADD COLUMN script_args text[] NOT NULL DEFAULT '{}';
