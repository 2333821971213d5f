-- Partitions are created, changed and deleted through the api (operators and admins).
-- A job keeps the name of the partition it ran in after that partition is deleted (as
-- Slurm's accounting does), so the column is no longer a foreign key; the api refuses to
-- delete a partition that still has pending or running jobs.
ALTER TABLE jobs DROP CONSTRAINT jobs_partition_fkey;
