-- Issue 15: account names may hold `@` (Slurm accepts `ml@corp`, as e-mail-like group
-- names make them), as user names already may.
ALTER TABLE accounts DROP CONSTRAINT accounts_name_format;
ALTER TABLE accounts ADD CONSTRAINT accounts_name_format CHECK (name ~ '^[A-Za-z0-9_.@-]+$');
