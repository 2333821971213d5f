// Overview (the landing page): GPUs by state and model, nodes by state and the failing
// ones with their reasons (`GET /v1/nodes`), the queue's depth by pending reason (`GET
// /v1/jobs?state=PENDING`, every page), GPU allocation and utilisation over the last
// day, and the latest events, then new ones as the stream brings them.

import { useCallback, useEffect, useState } from "preact/hooks";
import { api, problemText, type CloudEvent, type Gpu, type Job, type Node } from "./client";
import { events } from "./events";
import { formatReason, plural } from "./format";
import type { Identity } from "./session";
import { Timeline } from "./Timeline";
import { ErrorNote, Time, useLiveRefresh } from "./ui";

const RECENT = 20;
/** Pages read at most (of 1000 each) for the queue and for the event history. */
const MAX_PAGES = 20;

type GpuState = "allocated" | "idle" | "powered down" | "unavailable";
const GPU_STATES: GpuState[] = ["allocated", "idle", "powered down", "unavailable"];

function gpuState(node: Node, gpu: Gpu): GpuState {
  if (gpu.allocated || gpu.job_id != null) return "allocated";
  if (node.state === "IDLE" || node.state === "MIXED" || node.state === "ALLOCATED") return "idle";
  if (node.state.startsWith("POWER")) return "powered down";
  return "unavailable";
}

/** The unit a GPU row counts in: whole GPUs, MIG instances or shards. */
function unitOf(kind: Gpu["kind"]): [string, string] {
  if (kind === "mig") return ["MIG instance", "MIG instances"];
  if (kind === "shard") return ["GPU shard", "GPU shards"];
  return ["GPU", "GPUs"];
}

/** How many indices an array range names: `3-99%4`, `1,5-9:2`. */
export function countIndices(spec: string): number {
  let n = 0;
  for (const part of spec.split("%")[0]!.split(",")) {
    const m = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (!m) continue;
    const a = Number(m[1]);
    const b = m[2] ? Number(m[2]) : a;
    const step = m[3] ? Math.max(1, Number(m[3])) : 1;
    if (b >= a) n += Math.floor((b - a) / step) + 1;
  }
  return n;
}

interface ReasonRow {
  reason: string;
  jobs: number;
  gpus: number;
}

export function OverviewPage({ identity }: { identity: Identity }) {
  const [nodes, setNodes] = useState<Node[] | null>(null);
  const [queue, setQueue] = useState<{ rows: ReasonRow[]; total: number; capped: boolean } | null>(null);
  const [recent, setRecent] = useState<CloudEvent[] | null>(null);
  const [historyCapped, setHistoryCapped] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const loadNodes = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/nodes");
    if (!data) return setError(problemText(problem, response.status));
    setNodes(data.items);
  }, []);

  const loadQueue = useCallback(async () => {
    const jobs: Job[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const { data, error: problem, response } = await api.GET("/v1/jobs", {
        params: { query: { state: "PENDING", limit: 1000, cursor } },
      });
      if (!data) return setError(problemText(problem, response.status));
      jobs.push(...data.items);
      pages += 1;
      if (!data.next_cursor || pages >= MAX_PAGES) {
        cursor = data.next_cursor ?? undefined;
        break;
      }
      cursor = data.next_cursor;
    }
    const by = new Map<string, ReasonRow>();
    for (const job of jobs) {
      const reason = job.reason && job.reason !== "None" ? job.reason : "None";
      const count = job.array_tasks_pending ? Math.max(1, countIndices(job.array_tasks_pending)) : 1;
      const row = by.get(reason) ?? { reason, jobs: 0, gpus: 0 };
      row.jobs += count;
      row.gpus += count * job.num_nodes * job.gpus_per_node;
      by.set(reason, row);
    }
    const rows = [...by.values()].sort((a, b) => b.jobs - a.jobs || a.reason.localeCompare(b.reason));
    setQueue({ rows, total: rows.reduce((n, r) => n + r.jobs, 0), capped: cursor !== undefined });
  }, []);

  const loadEvents = useCallback(async () => {
    // The api lists events oldest first only: read forward, keep the last ones.
    let kept: CloudEvent[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const { data, error: problem, response } = await api.GET("/v1/events", { params: { query: { limit: 1000, after } } });
      if (!data || typeof data !== "object") return setError(problemText(problem, response.status));
      kept = kept.concat(data.items).slice(-RECENT);
      pages += 1;
      if (!data.next_cursor) break;
      after = data.next_cursor;
      if (pages >= MAX_PAGES) {
        setHistoryCapped(true);
        break;
      }
    }
    setRecent((live) => merge(kept, live ?? []));
  }, []);

  useEffect(() => {
    void loadNodes();
    void loadQueue();
    void loadEvents();
    return events.on("berth.", (e) => setRecent((r) => merge(r ?? [], [e])));
  }, []);
  useLiveRefresh("berth.node.", () => void loadNodes());
  // Job events change the queue and which GPUs are held; reading every pending page is
  // not free, so at most every 2 s.
  useLiveRefresh(
    "berth.job.",
    () => {
      void loadQueue();
      void loadNodes();
    },
    2000,
  );

  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      {error && <ErrorNote>{error}</ErrorNote>}
      <div class="columns">
        <section aria-labelledby="gpus-title">
          <h2 id="gpus-title">GPUs</h2>
          {nodes ? <GpuTable nodes={nodes} /> : <p aria-busy="true">Loading nodes…</p>}
          <h2 id="nodes-state-title">Nodes</h2>
          {nodes ? <NodeStates nodes={nodes} /> : null}
          {nodes ? <FailingNodes nodes={nodes} /> : null}
        </section>
        <section aria-labelledby="pending-title">
          <h2 id="pending-title">Queue</h2>
          {queue ? (
            <>
              <p>
                {plural(queue.total, "pending job")}
                {queue.capped ? ` (at least: only the first ${MAX_PAGES * 1000} were read)` : ""}.{" "}
                <a href="/queue?state=PENDING">See them in the queue.</a>
              </p>
              {identity.role === "user" && (
                <p class="hint">The api shows you your own jobs and those of the accounts you coordinate, not the whole queue.</p>
              )}
              {queue.rows.length > 0 && (
                <table class="grid" id="pending-reasons">
                  <thead>
                    <tr>
                      <th scope="col">Pending reason</th>
                      <th scope="col">Jobs</th>
                      <th scope="col">GPUs asked for</th>
                    </tr>
                  </thead>
                  <tbody>
                    {queue.rows.map((r) => (
                      <tr key={r.reason}>
                        <th scope="row">{r.reason === "None" ? "Not yet considered (None)" : formatReason(r.reason)}</th>
                        <td>{plural(r.jobs, "job")}</td>
                        <td>{plural(r.gpus, "GPU")}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </>
          ) : (
            <p aria-busy="true">Loading the queue…</p>
          )}
        </section>
      </div>
      <Timeline />
      <section aria-labelledby="events-title">
        <h2 id="events-title">Recent events</h2>
        {historyCapped && (
          <p class="hint">
            The api lists events oldest first only; these are the latest of the first {MAX_PAGES * 1000}, then new
            ones.
          </p>
        )}
        {recent ? <EventList items={recent} /> : <p aria-busy="true">Loading events…</p>}
      </section>
    </section>
  );
}

/** Nodes down, draining, drained or failing, with their reasons. */
function FailingNodes({ nodes }: { nodes: Node[] }) {
  const failing = nodes.filter((n) => /DOWN|DRAIN|FAIL/.test(n.state));
  if (failing.length === 0) return <p id="failing-nodes">No node is down or drained.</p>;
  return (
    <>
      <h3>Failing or drained nodes</h3>
      <ul id="failing-nodes">
        {failing.map((n) => (
          <li key={n.name}>
            <a href="/nodes">{n.name}</a> {n.state}
            {n.reason ? `: ${n.reason}` : ""}
          </li>
        ))}
      </ul>
    </>
  );
}

/** Newest first, each event once, at most `RECENT`. */
function merge(a: CloudEvent[], b: CloudEvent[]): CloudEvent[] {
  const byId = new Map<string, CloudEvent>();
  for (const e of [...a, ...b]) byId.set(e.id, e);
  return [...byId.values()]
    .sort((x, y) => Date.parse(y.time) - Date.parse(x.time) || Number(y.id) - Number(x.id))
    .slice(0, RECENT);
}

function GpuTable({ nodes }: { nodes: Node[] }) {
  const rows = new Map<string, { kind: Gpu["kind"]; model: string; counts: Record<GpuState, number> }>();
  for (const node of nodes) {
    for (const gpu of node.gpus) {
      const key = `${gpu.kind ?? "gpu"} ${gpu.model}`;
      const row = rows.get(key) ?? {
        kind: gpu.kind,
        model: gpu.model,
        counts: { allocated: 0, idle: 0, "powered down": 0, unavailable: 0 },
      };
      row.counts[gpuState(node, gpu)] += 1;
      rows.set(key, row);
    }
  }
  if (rows.size === 0) return <p class="muted">No GPUs: no node has reported any.</p>;
  const list = [...rows.values()].sort((a, b) => a.model.localeCompare(b.model));
  const states = GPU_STATES.filter((s) => list.some((r) => r.counts[s] > 0) || s === "allocated" || s === "idle");
  return (
    <table class="grid" id="gpu-states">
      <thead>
        <tr>
          <th scope="col">Model</th>
          {states.map((s) => (
            <th scope="col" key={s}>
              {s[0]!.toUpperCase() + s.slice(1)}
            </th>
          ))}
          <th scope="col">Total</th>
        </tr>
      </thead>
      <tbody>
        {list.map((r) => {
          const [one, many] = unitOf(r.kind);
          const total = GPU_STATES.reduce((n, s) => n + r.counts[s], 0);
          return (
            <tr key={`${r.kind} ${r.model}`}>
              <th scope="row" class="name">
                {r.model}
              </th>
              {states.map((s) => (
                <td key={s}>{plural(r.counts[s], one, many)}</td>
              ))}
              <td>{plural(total, one, many)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function NodeStates({ nodes }: { nodes: Node[] }) {
  if (nodes.length === 0) return <p class="muted">No nodes have registered.</p>;
  const by = new Map<string, number>();
  for (const n of nodes) by.set(n.state, (by.get(n.state) ?? 0) + 1);
  return (
    <ul class="counts" id="node-states">
      {[...by.entries()]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([state, n]) => (
          <li key={state}>
            <span class={`state n-${state.toLowerCase()}`}>{state}</span> {plural(n, "node")}
          </li>
        ))}
      <li>
        <a href="/nodes">See the {plural(nodes.length, "node")}.</a>
      </li>
    </ul>
  );
}

function EventList({ items }: { items: CloudEvent[] }) {
  if (items.length === 0) return <p class="muted">No events yet.</p>;
  return (
    <ol class="events" id="recent-events">
      {items.map((e) => (
        <li key={e.id}>
          <Time iso={e.time} /> <span class="etype">{e.type.replace(/^berth\./, "")}</span> <Subject subject={e.subject} />
          {summary(e)}
        </li>
      ))}
    </ol>
  );
}

function Subject({ subject }: { subject: string }) {
  const job = /^jobs\/(\d+)$/.exec(subject);
  if (job) return <a href={`/jobs/${job[1]}`}>job {job[1]}</a>;
  if (subject.startsWith("nodes/")) return <a href="/nodes">node {subject.slice(6)}</a>;
  return <span>{subject}</span>;
}

function summary(e: CloudEvent): string {
  const d = (e.data ?? {}) as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof d["name"] === "string" && e.subject.startsWith("jobs/")) parts.push(d["name"]);
  if (typeof d["user"] === "string") parts.push(`by ${d["user"]}`);
  if (typeof d["state"] === "string") parts.push(d["state"]);
  if (typeof d["reason"] === "string" && d["reason"] !== "None") parts.push(formatReason(d["reason"]));
  if (typeof d["exit_code"] === "number") parts.push(`exit code ${d["exit_code"]}`);
  return parts.length ? `: ${parts.join(", ")}` : "";
}
