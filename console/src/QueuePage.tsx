// The queue (squeue): a server-paged table of jobs, filters in the URL, each pending
// job's place in the scheduler's order and expected start, row selection with
// Cancel/Hold/Release/Top, refreshed by `berth.job.*` events.

import { useCallback, useEffect, useState } from "preact/hooks";
import { api, problemText, type Job, type JobBatchItem } from "./client";
import { ENDED_STATES, formatDuration, formatReason, plural } from "./format";
import { navigate } from "./router";
import type { Identity } from "./session";
import { ErrorNote, Time, useLiveRefresh, useNow } from "./ui";

/** squeue's default: jobs not yet over. */
const ACTIVE = "PENDING,RUNNING,SUSPENDED,COMPLETING";
const FILTERS = ["user", "account", "partition", "state", "qos", "name"] as const;
type Filter = (typeof FILTERS)[number];
const PAGE_SIZE = 50;

export function QueuePage({ query, identity }: { query: URLSearchParams; identity: Identity }) {
  const filters = Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? ""])) as Record<Filter, string>;
  const cursor = query.get("cursor") ?? undefined;
  const stateParam = filters.state === "" ? ACTIVE : filters.state === "all" ? undefined : filters.state;
  const key = query.toString();

  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [outcome, setOutcome] = useState<string | null>(null);

  const load = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/jobs", {
      params: {
        query: {
          state: stateParam,
          user: filters.user || undefined,
          account: filters.account || undefined,
          qos: filters.qos || undefined,
          partition: filters.partition || undefined,
          name: filters.name || undefined,
          limit: PAGE_SIZE,
          cursor,
        },
      },
    });
    if (!data) {
      setError(problemText(problem, response.status));
      return;
    }
    setError(null);
    setJobs(data.items);
    setNext(data.next_cursor ?? null);
    setSelected((s) => new Set(data.items.filter((j) => s.has(j.id)).map((j) => j.id)));
  }, [key]);

  useEffect(() => {
    setJobs(null);
    setSelected(new Set());
    void load();
  }, [key]);
  useLiveRefresh("berth.job.", () => void load());

  const shown = jobs ?? [];

  const setFilters = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const q = new URLSearchParams();
    for (const f of FILTERS) {
      const v = String(form.get(f) ?? "").trim();
      if (v) q.set(f, v);
    }
    navigate(`/queue${q.size ? `?${q}` : ""}`);
  };

  const act = async (action: "cancel" | "hold" | "release" | "top") => {
    const ids = [...selected].sort((a, b) => a - b);
    if (ids.length === 0) return;
    if (action === "top") {
      // scontrol top: one call per job, in the order selected.
      const items: JobBatchItem[] = [];
      for (const id of ids) {
        const r = await api.POST("/v1/jobs/{id}/top", { params: { path: { id } } });
        items.push({ job: String(id), status: r.response.status, problem: r.error ?? null });
      }
      setOutcome(summarise(action, items));
      setSelected(new Set());
      void load();
      return;
    }
    if (action === "cancel" && !confirm(`Cancel ${plural(ids.length, "job")}: ${ids.join(", ")}?`)) return;
    const path = `/v1/jobs/${action}` as const;
    const { data, error: problem, response } = await api.POST(path, { body: { jobs: ids.map(String) } });
    if (!data) {
      setOutcome(problemText(problem, response.status));
      return;
    }
    setOutcome(summarise(action, data.items));
    setSelected(new Set());
    void load();
  };

  const pageIds = shown.map((j) => j.id);
  const allSelected = pageIds.length > 0 && pageIds.every((id) => selected.has(id));
  const toggle = (id: number) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const withCursor = (c: string | null) => {
    const q = new URLSearchParams(query);
    if (c) q.set("cursor", c);
    else q.delete("cursor");
    return `/queue${q.size ? `?${q}` : ""}`;
  };

  return (
    <section aria-labelledby="queue-title">
      <h1 id="queue-title">Queue</h1>
      <form class="filters" onSubmit={setFilters} key={key}>
        {FILTERS.map((f) => (
          <label key={f}>
            {f === "qos" ? "QOS" : f[0]!.toUpperCase() + f.slice(1)}
            <input
              name={f}
              defaultValue={filters[f]}
              placeholder={f === "state" ? "active (or all, PENDING,…)" : f === "user" && identity.user ? identity.user : ""}
              list={f === "state" ? "job-states" : undefined}
              spellcheck={false}
            />
          </label>
        ))}
        <datalist id="job-states">
          <option value="all" />
          <option value={ACTIVE} />
          <option value="PENDING" />
          <option value="RUNNING" />
          <option value="COMPLETED" />
          <option value="FAILED" />
          <option value="CANCELLED" />
          <option value="TIMEOUT" />
        </datalist>
        <button type="submit">Filter</button>
        <a href="/queue">Clear</a>
      </form>

      <div class="actions" role="toolbar" aria-label="Actions on selected jobs" hidden={identity.readOnly}>
        <span>{plural(selected.size, "job")} selected</span>
        <button type="button" disabled={selected.size === 0} onClick={() => void act("cancel")}>
          Cancel
        </button>
        <button type="button" disabled={selected.size === 0} onClick={() => void act("hold")}>
          Hold
        </button>
        <button type="button" disabled={selected.size === 0} onClick={() => void act("release")}>
          Release
        </button>
        <button
          type="button"
          disabled={selected.size === 0}
          title="Move to the top of their user's pending jobs (scontrol top)"
          onClick={() => void act("top")}
        >
          Top
        </button>
      </div>
      {outcome && <p role="status">{outcome}</p>}
      {error && <ErrorNote>{error}</ErrorNote>}

      {jobs === null && !error ? (
        <p aria-busy="true">Loading…</p>
      ) : (
        <table class="grid" id="queue">
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select every job on this page"
                  checked={allSelected}
                  onChange={() => setSelected(allSelected ? new Set() : new Set(pageIds))}
                />
              </th>
              <th scope="col">Job ID</th>
              <th scope="col">Name</th>
              <th scope="col">User</th>
              <th scope="col">Account</th>
              <th scope="col">Partition</th>
              <th scope="col">State</th>
              <th scope="col">Reason</th>
              <th scope="col" title="Place in the scheduler's order: priority, then submit time">
                Position
              </th>
              <th scope="col">Time (used / limit)</th>
              <th scope="col">Nodes / GPUs</th>
            </tr>
          </thead>
          <tbody>
            {shown.length === 0 && (
              <tr>
                <td colSpan={11} class="muted">
                  No jobs match.
                </td>
              </tr>
            )}
            {shown.map((job) => (
              <JobRow key={job.id} job={job} selected={selected.has(job.id)} onToggle={() => toggle(job.id)} />
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of jobs">
        {cursor && <a href={withCursor(null)}>First page</a>}
        {next && <a href={withCursor(next)}>Next page</a>}
      </nav>
    </section>
  );
}

function JobRow({ job, selected, onToggle }: { job: Job; selected: boolean; onToggle: () => void }) {
  const now = useNow(5000);
  const label = job.array_task_id != null && job.array_job_id != null ? `${job.array_job_id}_${job.array_task_id}` : String(job.id);
  return (
    <tr class={selected ? "selected" : undefined}>
      <td>
        <input type="checkbox" aria-label={`Select job ${label}`} checked={selected} onChange={onToggle} />
      </td>
      <td>
        <a href={`/jobs/${job.id}`}>{label}</a>
      </td>
      <td class="name">{job.name}</td>
      <td>{job.user}</td>
      <td>{job.account ?? ""}</td>
      <td>{job.partition}</td>
      <td>
        <span class={`state s-${job.state.toLowerCase()}`}>{job.state}</span>
      </td>
      <td>{formatReason(job.reason)}</td>
      <td>{job.queue_position != null ? `#${job.queue_position}` : ""}</td>
      <td>
        <JobTime job={job} now={now} />
      </td>
      <td>
        {plural(job.num_nodes, "node")}, {plural(job.num_nodes * job.gpus_per_node, "GPU")}
        {job.nodelist ? <span class="muted"> on {job.nodelist}</span> : null}
      </td>
    </tr>
  );
}

function JobTime({ job, now }: { job: Job; now: number }) {
  const limit = job.time_limit == null ? "unlimited" : formatDuration(job.time_limit);
  if (job.start_time) {
    const end = job.end_time ? Date.parse(job.end_time) : now;
    return (
      <span>
        {formatDuration((end - Date.parse(job.start_time)) / 1000)} / {limit}
      </span>
    );
  }
  if (ENDED_STATES.has(job.state)) return <span class="muted">never ran / {limit}</span>;
  return (
    <span>
      waiting {formatDuration((now - Date.parse(job.submit_time)) / 1000)}
      {job.expected_start ? (
        <>
          , starts <Time iso={job.expected_start} />
        </>
      ) : null}{" "}
      / {limit}
    </span>
  );
}

function summarise(action: string, items: JobBatchItem[]): string {
  const ok = items.filter((i) => i.status < 300).length;
  const failed = items.filter((i) => i.status >= 300);
  const verb = { cancel: "Cancelled", hold: "Held", release: "Released", top: "Moved to the top" }[action] ?? action;
  const parts = [`${verb} ${plural(ok, "job")}.`];
  for (const f of failed) parts.push(`Job ${f.job}: ${problemText(f.problem, f.status)}`);
  return parts.join(" ");
}
