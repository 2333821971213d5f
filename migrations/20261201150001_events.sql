-- Issue 13: the event stream (CloudEvents 1.0) and webhooks.
--
-- `events` holds one row per state change, written by triggers on the tables that change
-- (jobs, job_events, nodes, cloud_events, leader_lease) inside the transaction that makes
-- the change, so every code path writes its event and a rolled-back change writes none.
-- Reservation start and end are time-based: an api replica writes them when it sees the
-- boundary pass, once each (`dedupe`).
--
-- Readers (`GET /v1/events`, the webhook dispatcher) must never skip an event whose
-- transaction commits after they read past it. Ids (a sequence) are not assigned in
-- commit order, so each event also keeps its writing transaction's 64-bit id (`xid`,
-- `berth_xid()`): readers serve only events whose `xid` is below the oldest transaction
-- still running (`pg_snapshot_xmin(pg_current_snapshot())`), ordered by (xid, id). The
-- set of events below that horizon is final (a transaction that starts later gets a
-- larger xid), so a cursor (xid, id) never passes an event that appears later.
CREATE TABLE events (
    id          bigserial PRIMARY KEY,
    xid         bigint NOT NULL DEFAULT berth_xid(),
    -- CloudEvents attributes
    type        text NOT NULL,
    source      text NOT NULL DEFAULT '/berth',
    subject     text NOT NULL,
    time        timestamptz NOT NULL DEFAULT clock_timestamp(),
    data        jsonb NOT NULL DEFAULT '{}',
    -- who may see it, and filters: a job's events carry its user and account (users see
    -- those of their own jobs and of the accounts they coordinate); other events are
    -- every caller's.
    job_id      bigint,
    user_name   text,
    account     text,
    partition   text,
    node        text,
    -- the key of an event written once whatever writes it (reservation boundaries)
    dedupe      text
);
-- As few indexes as readers need (each costs every submission an insert): the order
-- readers page in, and the keys of the few events that have one.
CREATE INDEX events_order ON events (xid, id);
CREATE UNIQUE INDEX events_dedupe ON events (dedupe) WHERE dedupe IS NOT NULL;

-- Wakes the api's event streams and webhook dispatchers (once per statement; PostgreSQL
-- folds repeats within a transaction).
CREATE FUNCTION berth_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('berth_events', '');
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION berth_events_notify();

-- A job's event: its type and the job row.
-- (plpgsql, whose plans a session keeps: a `LANGUAGE sql` function called from a trigger
-- is planned again on every call, which cost a third of a millisecond per submission.)
CREATE FUNCTION berth_job_event_insert(kind text, j jobs, extra jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (type, subject, data, job_id, user_name, account, partition)
    VALUES ('berth.job.' || kind, 'jobs/' || j.id,
            jsonb_build_object(
                'job_id', j.id, 'name', j.name, 'user', j.user_name, 'account', j.account,
                'partition', j.partition, 'state', j.state, 'reason', j.reason,
                'exit_code', j.exit_code, 'exit_signal', j.exit_signal,
                'restart_count', j.restart_count, 'array_job_id', j.array_job_id,
                'array_task_id', j.array_task_id) || extra,
            j.id, j.user_name, j.account, j.partition);
END $$;

CREATE FUNCTION berth_job_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ended constant text[] := ARRAY['COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED', 'NODE_FAIL',
                                   'PREEMPTED', 'OUT_OF_MEMORY', 'BOOT_FAIL', 'DEADLINE'];
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- An array task split off its master is not a submission.
        IF NEW.array_job_id IS NULL OR NEW.array_job_id = NEW.id THEN
            PERFORM berth_job_event_insert('submitted', NEW, '{}');
            -- Submitted held (`--hold`): held from the start.
            IF NEW.hold THEN
                PERFORM berth_job_event_insert('held', NEW, '{}');
            END IF;
        END IF;
        RETURN NULL;
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state THEN
        IF NEW.state = 'RUNNING' THEN
            PERFORM berth_job_event_insert('started', NEW,
                jsonb_build_object('start_time', NEW.start_time, 'previous_state', OLD.state));
        ELSIF NEW.state = ANY(ended) AND NOT OLD.state = ANY(ended) THEN
            PERFORM berth_job_event_insert('ended', NEW,
                jsonb_build_object('start_time', NEW.start_time, 'end_time', NEW.end_time));
        ELSIF NEW.state = 'PENDING' THEN
            PERFORM berth_job_event_insert('requeued', NEW,
                jsonb_build_object('previous_state', OLD.state));
        END IF;
    END IF;
    IF NEW.hold AND NOT OLD.hold THEN
        PERFORM berth_job_event_insert('held', NEW, '{}');
    ELSIF OLD.hold AND NOT NEW.hold THEN
        PERFORM berth_job_event_insert('released', NEW, '{}');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_event_insert AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION berth_job_event();
CREATE TRIGGER jobs_event_update AFTER UPDATE OF state, hold ON jobs
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.hold IS DISTINCT FROM NEW.hold)
    EXECUTE FUNCTION berth_job_event();

-- Entries of a job's history that are events of their own: a preemption (the job may stay
-- RUNNING through its grace time) and the time limit reached (the job is being stopped).
CREATE FUNCTION berth_job_history_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    j jobs;
BEGIN
    SELECT * INTO j FROM jobs WHERE id = NEW.job_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM berth_job_event_insert(
        CASE NEW.kind WHEN 'preempted' THEN 'preempted' ELSE 'time_limit_warning' END,
        j, jsonb_build_object('run', NEW.run, 'node', NEW.node, 'detail', NEW.detail));
    RETURN NULL;
END $$;
CREATE TRIGGER job_events_event AFTER INSERT ON job_events
    FOR EACH ROW WHEN (NEW.kind IN ('preempted', 'time_limit'))
    EXECUTE FUNCTION berth_job_history_event();

-- A node's event.
CREATE FUNCTION berth_node_event_insert(kind text, n nodes, previous text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (type, subject, data, node)
    VALUES ('berth.node.' || kind, 'nodes/' || n.name,
            jsonb_build_object('node', n.name, 'state', n.state, 'previous_state', previous,
                               'reason', n.reason, 'pool', n.pool),
            n.name);
END $$;

CREATE FUNCTION berth_node_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    drain constant text[] := ARRAY['DRAINING', 'DRAINED'];
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.state = 'UP' THEN
            PERFORM berth_node_event_insert('up', NEW, NULL);
        END IF;
        RETURN NULL;
    END IF;
    IF NEW.state = 'DOWN' THEN
        PERFORM berth_node_event_insert('down', NEW, OLD.state);
    ELSIF NEW.state = ANY(drain) AND NOT OLD.state = ANY(drain) THEN
        PERFORM berth_node_event_insert('drained', NEW, OLD.state);
        -- core's GpuFault::reason (`gpu 3: XID 79`, `gpu 2: lost`, `gpu 1: stuck …`): the
        -- worker reported a faulty GPU and the api drained the node for it.
        IF NEW.reason ~ '^gpu [0-9]+: (XID|lost|stuck)' THEN
            PERFORM berth_node_event_insert('gpu_fault', NEW, OLD.state);
        END IF;
    ELSIF NEW.state = 'UP' AND OLD.state = ANY(drain) THEN
        PERFORM berth_node_event_insert('resumed', NEW, OLD.state);
    ELSIF NEW.state = 'UP' THEN
        PERFORM berth_node_event_insert('up', NEW, OLD.state);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER nodes_event_insert AFTER INSERT ON nodes
    FOR EACH ROW EXECUTE FUNCTION berth_node_event();
CREATE TRIGGER nodes_event_update AFTER UPDATE OF state ON nodes
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION berth_node_event();

-- A node pool's launches, capacity errors and terminations (from its history).
CREATE FUNCTION berth_pool_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (type, subject, data, node, job_id)
    VALUES ('berth.pool.' || CASE
                WHEN NEW.kind = 'launch' THEN 'launch'
                WHEN NEW.kind IN ('capacity_error', 'launch_failed') THEN 'capacity_error'
                ELSE 'terminated' END,
            'pools/' || NEW.pool,
            jsonb_build_object('pool', NEW.pool, 'kind', NEW.kind, 'node', NEW.node_name,
                               'instance_id', NEW.instance_id, 'job_id', NEW.job_id,
                               'reason', NEW.reason),
            NEW.node_name, NULL);
    RETURN NULL;
END $$;
CREATE TRIGGER cloud_events_event AFTER INSERT ON cloud_events
    FOR EACH ROW WHEN (NEW.kind IN ('launch', 'capacity_error', 'launch_failed', 'terminate',
                                    'orphan_terminated', 'reclaim'))
    EXECUTE FUNCTION berth_pool_event();

-- A new scheduler leader (a new fencing term).
CREATE FUNCTION berth_leader_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (type, subject, data)
    VALUES ('berth.scheduler.leader_changed', 'scheduler/' || NEW.role,
            jsonb_build_object('role', NEW.role, 'holder', NEW.holder, 'term', NEW.term));
    RETURN NULL;
END $$;
CREATE TRIGGER leader_lease_event_insert AFTER INSERT ON leader_lease
    FOR EACH ROW EXECUTE FUNCTION berth_leader_event();
CREATE TRIGGER leader_lease_event_update AFTER UPDATE OF term ON leader_lease
    FOR EACH ROW WHEN (OLD.term IS DISTINCT FROM NEW.term)
    EXECUTE FUNCTION berth_leader_event();

-- Webhooks: an HTTPS endpoint that receives the events its owner may see, of the types
-- (`berth.job.ended`, `berth.job.*`, `*`) and for the accounts, partitions, jobs and
-- nodes it names (empty: any), signed with its secret (Standard Webhooks).
CREATE TABLE webhooks (
    id                    bigserial PRIMARY KEY,
    owner                 text NOT NULL,
    -- the owner's role: what it may see. The caller's when it was created; then, while the
    -- owner has a `users` row, that row's role (the dispatcher keeps it in step)
    owner_role            text NOT NULL CHECK (owner_role IN ('admin', 'operator', 'user')),
    -- the owner had a `users` row when it was created: once that row is gone, the webhook
    -- is disabled (its owner was deleted)
    owner_recorded        boolean NOT NULL DEFAULT false,
    url                   text NOT NULL CHECK (url ~ '^https?://'),
    event_types           text[] NOT NULL CHECK (cardinality(event_types) > 0),
    accounts              text[] NOT NULL DEFAULT '{}',
    partitions            text[] NOT NULL DEFAULT '{}',
    job_ids               bigint[] NOT NULL DEFAULT '{}',
    nodes                 text[] NOT NULL DEFAULT '{}',
    description           text NOT NULL DEFAULT '',
    -- `whsec_` and the base64 of the key; never returned after creation
    secret                text NOT NULL,
    enabled               boolean NOT NULL DEFAULT true,
    disabled_reason       text,
    consecutive_failures  integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    -- when the current run of failed attempts began (NULL: the last attempt succeeded)
    failing_since         timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_owner ON webhooks (owner, id);

-- The outbox: one row per (webhook, event), made by the dispatcher, sent by any api
-- replica that claims it (`FOR UPDATE SKIP LOCKED` and a lease), retried with backoff.
CREATE TABLE webhook_deliveries (
    id               bigserial PRIMARY KEY,
    webhook_id       bigint NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    -- NULL for a test delivery
    event_id         bigint,
    event_type       text NOT NULL,
    -- `webhook-id`: the same on every attempt and redelivery
    message_id       text NOT NULL UNIQUE,
    -- the CloudEvent as sent
    payload          jsonb NOT NULL,
    -- pending (to be sent, or retried at next_attempt_at) | delivered | failed (gave up)
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- a failed attempt after this gives up (state failed); a redelivery moves it on
    retry_until      timestamptz NOT NULL,
    -- a sender's claim: another replica takes the delivery over once it expires
    lease_until      timestamptz,
    leased_by        text,
    last_status      integer,
    last_error       text,
    last_attempt_at  timestamptz,
    delivered_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);

-- Every attempt of a delivery: the delivery log.
CREATE TABLE webhook_attempts (
    delivery_id  bigint NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempt      integer NOT NULL CHECK (attempt >= 1),
    at           timestamptz NOT NULL DEFAULT now(),
    -- the HTTP status, NULL when no answer came
    status       integer,
    error        text,
    duration_ms  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (delivery_id, attempt)
);

-- How far the dispatcher has turned events into deliveries: the (xid, id) of the last
-- event it read (one row; dispatchers of every replica take turns on its lock).
CREATE TABLE webhook_dispatch (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_xid bigint NOT NULL,
    last_id  bigint NOT NULL
);
INSERT INTO webhook_dispatch (last_xid, last_id) VALUES (0, 0);
