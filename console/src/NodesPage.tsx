// Nodes (sinfo -N): state and reason, CPUs and memory, and a grid of GPUs coloured by
// utilisation (the number shown as text too); drain and resume for operators and admins.

import { useCallback, useState } from "preact/hooks";
import { api, problemText, type Gpu, type Node } from "./client";
import { formatMiB, plural } from "./format";
import { isOperator, type Identity } from "./session";
import { ErrorNote, Time, useLiveRefresh, usePolling } from "./ui";

/** GPU samples raise no events: utilisation is re-read this often while the page is shown. */
const SAMPLE_REFRESH_MS = 15000;

export function NodesPage({ identity }: { identity: Identity }) {
  const [nodes, setNodes] = useState<Node[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [draining, setDraining] = useState<string | null>(null);
  const operator = isOperator(identity);

  const load = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/nodes");
    if (!data) {
      setError(problemText(problem, response.status));
      return;
    }
    setError(null);
    setNodes(data.items);
  }, []);

  usePolling(load, SAMPLE_REFRESH_MS, []);
  useLiveRefresh("berth.node.", () => void load());

  const resume = async (name: string) => {
    const r = await api.POST("/v1/nodes/{name}/resume", { params: { path: { name } } });
    setOutcome(r.response.ok ? `${name} resumed.` : problemText(r.error, r.response.status));
    void load();
  };
  const drain = async (e: Event, name: string) => {
    e.preventDefault();
    const reason = String(new FormData(e.currentTarget as HTMLFormElement).get("reason") ?? "").trim();
    if (!reason) return;
    const r = await api.POST("/v1/nodes/{name}/drain", { params: { path: { name } }, body: { reason } });
    setOutcome(r.response.ok ? `${name} draining.` : problemText(r.error, r.response.status));
    setDraining(null);
    void load();
  };

  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!nodes) return <p aria-busy="true">Loading nodes…</p>;

  const gpus = nodes.reduce((n, node) => n + node.gpus.length, 0);
  const held = nodes.reduce((n, node) => n + node.gpus_allocated, 0);

  return (
    <section aria-labelledby="nodes-title">
      <h1 id="nodes-title">Nodes</h1>
      <p>
        {plural(nodes.length, "node")}, {plural(gpus, "GPU")} of which {held} allocated.
      </p>
      {outcome && <p role="status">{outcome}</p>}
      <table class="grid" id="nodes">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">State</th>
            <th scope="col">Reason</th>
            <th scope="col">CPUs (allocated / total)</th>
            <th scope="col">Memory (allocated / total)</th>
            <th scope="col">GPUs (utilisation)</th>
            <th scope="col">Partitions</th>
            <th scope="col">Last heartbeat</th>
            {operator && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {nodes.map((node) => (
            <tr key={node.name}>
              <th scope="row">{node.name}</th>
              <td>
                <span class={`state n-${node.state.toLowerCase()}`}>{node.state}</span>
              </td>
              <td>{node.reason ?? ""}</td>
              <td>
                {node.cpus_allocated ?? 0} / {plural(node.cpus, "CPU")}
              </td>
              <td>
                {formatMiB(node.memory_allocated_mib ?? 0)} / {formatMiB(node.memory_mib)}
              </td>
              <td>
                <GpuGrid gpus={node.gpus} />
              </td>
              <td>{node.partitions.join(", ")}</td>
              <td>
                <Time iso={node.last_heartbeat} />
              </td>
              {operator && (
                <td>
                  {node.state === "DRAINING" || node.state === "DRAINED" || node.state === "DOWN" ? (
                    <button type="button" onClick={() => void resume(node.name)}>
                      Resume
                    </button>
                  ) : draining === node.name ? (
                    <form class="inline" onSubmit={(e) => void drain(e, node.name)}>
                      <label>
                        Reason <input name="reason" required maxLength={256} autoFocus />
                      </label>
                      <button type="submit">Drain</button>
                      <button type="button" onClick={() => setDraining(null)}>
                        Keep
                      </button>
                    </form>
                  ) : (
                    <button type="button" onClick={() => setDraining(node.name)}>
                      Drain…
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** One cell per GPU: colour by utilisation (a class per 10 %), the percentage as text,
 * details (model, memory, job) on hover and to screen readers. */
function GpuGrid({ gpus }: { gpus: Gpu[] }) {
  if (gpus.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="gpus" aria-label={plural(gpus.length, "GPU")}>
      {gpus.map((g) => {
        const util = g.utilization_pct;
        const bucket = util == null ? "un" : `u${Math.min(10, Math.max(0, Math.floor(util / 10)))}`;
        const memory = g.memory_used_mib == null ? formatMiB(g.memory_mib) : `${formatMiB(g.memory_used_mib)} of ${formatMiB(g.memory_mib)}`;
        const title = `GPU ${g.index}: ${g.model}, ${memory}${g.job_id != null ? `, job ${g.job_id}` : ", free"}`;
        const label = util == null ? "–" : `${util} %`;
        return (
          <li key={g.index} class={`gpu ${bucket}${g.job_id != null ? " held" : ""}`} title={title}>
            {g.job_id != null ? (
              <a href={`/jobs/${g.job_id}`} aria-label={title}>
                {label}
              </a>
            ) : (
              <span aria-label={title}>{label}</span>
            )}
          </li>
        );
      })}
    </ul>
  );
}
