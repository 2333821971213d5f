-- Issue 12: cloud node pools. A pool is declared by an admin (`PUT /v1/pools/{name}` or
-- `[pools.NAME]` in the server config); its spec is core's `PoolSpec` as JSON. Its nodes
-- are rows of `nodes` like any other, with `pool` set: up to `max_nodes` slots named
-- `<pool>-<n>`, POWERED_DOWN until the scheduler leader's scaling reconciler launches an
-- instance for one (POWERING_UP), UP once its worker joins, POWERING_DOWN while its
-- instance is terminated, POWERED_DOWN again after.
CREATE TABLE pools (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,30}$'),
    spec        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- Repeated launch failures back the whole pool off until then (never DOWN for good).
    backoff_until         timestamptz,
    consecutive_failures  integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    last_error            text,
    last_error_at         timestamptz
);

ALTER TABLE nodes
    ADD COLUMN pool             text REFERENCES pools(name) ON DELETE RESTRICT,
    -- The provider's instance id of the node's current instance (NULL: none).
    ADD COLUMN instance_id      text,
    ADD COLUMN instance_type    text,
    -- on_demand | spot
    ADD COLUMN market           text CHECK (market IN ('on_demand', 'spot')),
    ADD COLUMN zone             text,
    -- The launch (cloud_launches.id) that powers the node up, while it does.
    ADD COLUMN launch_id        uuid,
    -- When its instance was requested (POWERING_UP since), and when it last became idle.
    ADD COLUMN launched_at      timestamptz,
    ADD COLUMN idle_since       timestamptz,
    -- When the state last changed to POWERING_UP / POWERING_DOWN / POWERED_DOWN.
    ADD COLUMN power_changed_at timestamptz,
    -- An operator's request (`scontrol update State=POWER_UP|POWER_DOWN|POWER_DOWN_FORCE`),
    -- carried out by the scaling reconciler: up | down | down_force.
    ADD COLUMN power_request    text CHECK (power_request IN ('up', 'down', 'down_force'));

CREATE UNIQUE INDEX nodes_instance_id ON nodes (instance_id) WHERE instance_id IS NOT NULL;
CREATE INDEX nodes_pool ON nodes (pool) WHERE pool IS NOT NULL;

-- A bootstrap token minted for one cloud instance: it joins only as that node.
ALTER TABLE node_bootstrap_tokens ADD COLUMN node_name text;

-- One launch request to a provider: written (and committed) before the provider is
-- called, its id is the provider's idempotency token (EC2 ClientToken), so a scheduler
-- that dies mid-call is followed by one that finds the launch, asks the provider about
-- it, and neither loses nor doubles it.
CREATE TABLE cloud_launches (
    id            uuid PRIMARY KEY,
    pool          text NOT NULL REFERENCES pools(name) ON DELETE CASCADE,
    node_names    text[] NOT NULL,
    instance_type text NOT NULL,
    zone          text,
    market        text NOT NULL CHECK (market IN ('on_demand', 'spot')),
    -- requested: the provider call may or may not have happened; launched: instances
    -- exist; failed: the provider refused (error says why).
    state         text NOT NULL DEFAULT 'requested' CHECK (state IN ('requested', 'launched', 'failed')),
    error         text,
    -- The job whose planned start asked for it (informational).
    job_id        bigint,
    -- The leader term that wrote it.
    term          bigint NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
CREATE INDEX cloud_launches_open ON cloud_launches (pool) WHERE state = 'requested';

-- An (instance type, zone) set aside after a capacity error, until `until`.
CREATE TABLE pool_cooldowns (
    pool          text NOT NULL REFERENCES pools(name) ON DELETE CASCADE,
    instance_type text NOT NULL,
    zone          text NOT NULL DEFAULT '',
    until         timestamptz NOT NULL,
    error         text NOT NULL,
    PRIMARY KEY (pool, instance_type, zone)
);

-- What happened to a pool's nodes and instances: launches, capacity errors, joins, boot
-- timeouts, reclaims, terminations, orphans. Shown by `GET /v1/pools/{name}`.
CREATE TABLE cloud_events (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    pool        text NOT NULL,
    node_name   text,
    instance_id text,
    job_id      bigint,
    -- launch | launch_failed | capacity_error | joined | boot_timeout | reclaim |
    -- terminate | orphan_terminated | instance_gone | power_up | power_down
    kind        text NOT NULL,
    reason      text NOT NULL
);
CREATE INDEX cloud_events_pool_at ON cloud_events (pool, at);
