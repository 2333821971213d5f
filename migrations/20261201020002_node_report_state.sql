-- What the api remembers of each node's report stream (issue 10), apart from `nodes`
-- (whose updates the scheduler's change tracking watches): the highest report sequence
-- number applied (a worker that was acknowledged more than this knows the database forgot
-- reports, as after a failover with asynchronous replication, and sends them again), and
-- how many batch launches in a row failed for a reason of the node (three drain it).
CREATE TABLE node_report_state (
    node_id          bigint PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
    report_seq       bigint NOT NULL DEFAULT 0 CHECK (report_seq >= 0),
    launch_failures  integer NOT NULL DEFAULT 0 CHECK (launch_failures >= 0)
);
