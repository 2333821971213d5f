// Partitions (sinfo -s / scontrol show partition), QOS (sacctmgr show qos) and
// reservations (scontrol show reservation): read-only tables. Their changes raise no
// events; partitions are re-read on node events (their node and GPU counts follow them).

import { useCallback, useEffect, useState } from "preact/hooks";
import { api, problemText, type Partition, type Qos, type Reservation } from "./client";
import { formatDuration, formatMiB, plural } from "./format";
import { ErrorNote, Time, useLiveRefresh } from "./ui";

/** Loads `fetch` once, and again on events of `prefix` when given. */
function useList<T>(fetch: () => Promise<{ items: T[] } | string>, prefix = "none."): { items: T[] | null; error: string | null } {
  const [items, setItems] = useState<T[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(async () => {
    const r = await fetch();
    if (typeof r === "string") setError(r);
    else {
      setError(null);
      setItems(r.items);
    }
  }, []);
  useEffect(() => void load(), []);
  useLiveRefresh(prefix, () => void load());
  return { items, error };
}

function tres(t: unknown): string {
  if (!t || typeof t !== "object") return "–";
  const parts = Object.entries(t as Record<string, unknown>)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${String(v)}`);
  return parts.length ? parts.join(", ") : "–";
}

export function PartitionsPage() {
  const { items, error } = useList<Partition>(async () => {
    const { data, error, response } = await api.GET("/v1/partitions");
    return data ?? problemText(error, response.status);
  }, "berth.node.");
  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!items) return <p aria-busy="true">Loading partitions…</p>;
  return (
    <section aria-labelledby="partitions-title">
      <h1 id="partitions-title">Partitions</h1>
      <table class="grid" id="partitions">
        <thead>
          <tr>
            <th scope="col">Partition</th>
            <th scope="col">Nodes</th>
            <th scope="col">GPUs</th>
            <th scope="col">Default time</th>
            <th scope="col">Max time</th>
            <th scope="col">Max nodes per job</th>
            <th scope="col">Priority tier</th>
            <th scope="col">Defaults per GPU</th>
            <th scope="col">Allowed accounts / QOS</th>
          </tr>
        </thead>
        <tbody>
          {items.map((p) => (
            <tr key={p.name}>
              <th scope="row">
                {p.name}
                {p.is_default ? <span class="muted"> (default)</span> : null}
              </th>
              <td>
                {p.total_nodes}
                {p.nodes.length ? <span class="muted"> ({p.nodes.join(", ")})</span> : <span class="muted"> (every node)</span>}
              </td>
              <td>{p.total_gpus}</td>
              <td>{formatDuration(p.default_time)}</td>
              <td>{formatDuration(p.max_time)}</td>
              <td>{p.max_nodes ?? "unlimited"}</td>
              <td>{p.priority_tier}</td>
              <td>
                {p.def_cpu_per_gpu != null ? `${plural(p.def_cpu_per_gpu, "CPU")}` : "–"}
                {p.def_mem_per_gpu != null ? `, ${formatMiB(p.def_mem_per_gpu)}` : ""}
              </td>
              <td>
                {p.allowed_accounts?.length ? p.allowed_accounts.join(", ") : "every account"} /{" "}
                {p.allowed_qos?.length ? p.allowed_qos.join(", ") : "every QOS"}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function QosPage() {
  const { items, error } = useList<Qos>(async () => {
    const { data, error, response } = await api.GET("/v1/qos");
    return data ? { items: data } : problemText(error, response.status);
  });
  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!items) return <p aria-busy="true">Loading QOS…</p>;
  return (
    <section aria-labelledby="qos-title">
      <h1 id="qos-title">Quality of service</h1>
      <table class="grid" id="qos">
        <thead>
          <tr>
            <th scope="col">QOS</th>
            <th scope="col">Priority</th>
            <th scope="col">Usage factor</th>
            <th scope="col">Max wall time</th>
            <th scope="col">Running jobs per user</th>
            <th scope="col">Group limits (TRES)</th>
            <th scope="col">Per user / per account (TRES)</th>
            <th scope="col">Preempts</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {items.map((q) => (
            <tr key={q.name}>
              <th scope="row">{q.name}</th>
              <td>{q.spec.priority}</td>
              <td>{q.spec.usage_factor}×</td>
              <td>{formatDuration(q.spec.max_wall)}</td>
              <td>{q.spec.max_jobs_per_user ?? "unlimited"}</td>
              <td>{tres(q.spec.grp_tres)}</td>
              <td>
                {tres(q.spec.max_tres_per_user)} / {tres(q.spec.max_tres_per_account)}
              </td>
              <td>{q.spec.preempt.length ? q.spec.preempt.join(", ") : "–"}</td>
              <td class="name">{q.spec.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function ReservationsPage() {
  const { items, error } = useList<Reservation>(async () => {
    const { data, error, response } = await api.GET("/v1/reservations");
    return data ?? problemText(error, response.status);
  });
  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!items) return <p aria-busy="true">Loading reservations…</p>;
  return (
    <section aria-labelledby="reservations-title">
      <h1 id="reservations-title">Reservations</h1>
      {items.length === 0 ? (
        <p class="muted">No reservation you may see is active or coming.</p>
      ) : (
        <table class="grid" id="reservations">
          <thead>
            <tr>
              <th scope="col">Reservation</th>
              <th scope="col">State</th>
              <th scope="col">Start</th>
              <th scope="col">End</th>
              <th scope="col">Duration</th>
              <th scope="col">Nodes</th>
              <th scope="col">Holds (TRES)</th>
              <th scope="col">Users / accounts</th>
              <th scope="col">Flags</th>
            </tr>
          </thead>
          <tbody>
            {items.map((r) => (
              <tr key={r.name}>
                <th scope="row">{r.name}</th>
                <td>{r.state}</td>
                <td>
                  <Time iso={r.start_time} />
                </td>
                <td>
                  <Time iso={r.end_time} />
                </td>
                <td>{formatDuration(r.duration)}</td>
                <td>
                  {plural(r.node_cnt, "node")} <span class="muted">({r.node_list})</span>
                </td>
                <td>
                  {plural(r.gpus, "GPU")}, {plural(r.cpus, "CPU")} <span class="muted">({r.tres})</span>
                </td>
                <td>
                  {r.users.join(", ") || "–"} / {r.accounts.join(", ") || "–"}
                </td>
                <td>{r.flags.join(", ") || "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
