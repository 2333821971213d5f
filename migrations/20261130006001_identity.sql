-- Identity and access (issue 6): memberships of users in accounts (Slurm's user
-- associations, with the coordinator flag), long-lived API tokens stored as hashes, and
-- the audit log of state-changing calls.

-- Deleting an account clears the default of users who had it, instead of failing.
ALTER TABLE users DROP CONSTRAINT users_default_account_fkey;
ALTER TABLE users ADD CONSTRAINT users_default_account_fkey
    FOREIGN KEY (default_account) REFERENCES accounts(name) ON DELETE SET NULL;
ALTER TABLE users ADD CONSTRAINT users_name_format CHECK (name ~ '^[A-Za-z0-9_.@-]+$');
ALTER TABLE accounts ADD CONSTRAINT accounts_name_format CHECK (name ~ '^[A-Za-z0-9_.-]+$');

CREATE TABLE memberships (
    account      text NOT NULL REFERENCES accounts(name) ON DELETE CASCADE,
    user_name    text NOT NULL REFERENCES users(name) ON DELETE CASCADE,
    -- a coordinator sees and manages the jobs of the account and its sub-accounts
    coordinator  boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account, user_name)
);
CREATE INDEX memberships_user ON memberships (user_name);

CREATE TABLE api_tokens (
    id            bigserial PRIMARY KEY,
    -- the SHA-256 of the whole token (hex); the token itself is never stored
    token_hash    text NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    -- the first characters of the token, shown in lists to recognise it
    prefix        text NOT NULL,
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    user_name     text NOT NULL,
    -- the owner's role when the token was created
    role          text NOT NULL CHECK (role IN ('admin', 'operator', 'user')),
    scope         text NOT NULL CHECK (scope IN ('read-only', 'submit', 'admin')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    CHECK (expires_at > created_at)
);
CREATE INDEX api_tokens_user ON api_tokens (user_name, id);

CREATE TABLE audit_log (
    id           bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    -- the caller's name, NULL when the credentials did not verify
    actor        text,
    role         text,
    -- the API token used, when one was
    token_id     bigint,
    method       text NOT NULL,
    path         text NOT NULL,
    status       integer NOT NULL,
    remote_addr  text,
    request_id   text
);
CREATE INDEX audit_log_at ON audit_log (at);
