-- A step stopped by `scancel JOB.STEP` or `srun --wait`/`--time` ends CANCELLED (not
-- FAILED) once its tasks have gone.
ALTER TABLE job_steps ADD COLUMN cancelled boolean NOT NULL DEFAULT false;
