-- Node credentials (issue 6): a worker joins with a bootstrap token (one-time, or reusable
-- until it expires, for autoscaled pools) and receives a credential that works only for
-- its own node's routes. Both are stored as SHA-256 hashes.

CREATE TABLE node_bootstrap_tokens (
    id           bigserial PRIMARY KEY,
    token_hash   text NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    one_time     boolean NOT NULL,
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    CHECK (expires_at > created_at)
);

CREATE TABLE node_credentials (
    id            bigserial PRIMARY KEY,
    token_hash    text NOT NULL UNIQUE CHECK (length(token_hash) = 64),
    node_name     text NOT NULL CHECK (node_name ~ '^[A-Za-z0-9_.-]+$'),
    bootstrap_id  bigint REFERENCES node_bootstrap_tokens(id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);
CREATE INDEX node_credentials_node ON node_credentials (node_name) WHERE revoked_at IS NULL;
