// Nodes (sinfo -N): state and reason, CPUs and memory, and a grid of GPUs coloured by
// utilisation (the number shown as text too); drain and resume for operators and admins.

import { memo } from "preact/compat";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, problemText, type Gpu, type Node } from "./client";
import { formatMiB, plural } from "./format";
import { isOperator, type Identity } from "./session";
import { ErrorNote, Time, useLiveRefresh, usePolling } from "./ui";

/** GPU samples raise no events: utilisation is re-read this often while the page is shown. */
const SAMPLE_REFRESH_MS = 15000;
/** A refresh of the same nodes is applied this many rows per animation frame, so that
 * a thousand GPU cells changing at once never hold one frame (only changed rows render). */
const ROWS_PER_FRAME = 16;

/** What a row shows of its node, to skip rows whose node did not change. */
const signatures = new WeakMap<Node, string>();
function signature(node: Node): string {
  let s = signatures.get(node);
  if (s === undefined) {
    s = JSON.stringify(node);
    signatures.set(node, s);
  }
  return s;
}

export function NodesPage({ identity }: { identity: Identity }) {
  const [nodes, setNodes] = useState<Node[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [draining, setDraining] = useState<string | null>(null);
  const operator = isOperator(identity);

  const frame = useRef<number | null>(null);
  const shown = useRef<Node[] | null>(null);
  shown.current = nodes;
  useEffect(() => () => void (frame.current !== null && cancelAnimationFrame(frame.current)), []);

  const load = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/nodes");
    if (!data) {
      setError(problemText(problem, response.status));
      return;
    }
    setError(null);
    const fresh = data.items;
    if (frame.current !== null) cancelAnimationFrame(frame.current);
    frame.current = null;
    const old = shown.current;
    if (!old || old.length !== fresh.length || old.some((n, i) => n.name !== fresh[i]!.name)) {
      setNodes(fresh);
      return;
    }
    // The same nodes as shown: take the new rows a slice per frame.
    let next = 0;
    const step = () => {
      const from = next;
      next += ROWS_PER_FRAME;
      setNodes((cur) => (cur ? cur.map((n, i) => (i >= from && i < next ? fresh[i]! : n)) : fresh));
      frame.current = next < fresh.length ? requestAnimationFrame(step) : null;
    };
    frame.current = requestAnimationFrame(step);
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
            <NodeRow
              key={node.name}
              node={node}
              sig={signature(node)}
              operator={operator}
              draining={draining === node.name}
              onResume={resume}
              onDrain={drain}
              onDraining={setDraining}
            />
          ))}
        </tbody>
      </table>
    </section>
  );
}

interface RowProps {
  node: Node;
  /** The node's signature: the row renders again only when it (or the rest) changes. */
  sig: string;
  operator: boolean;
  draining: boolean;
  onResume: (name: string) => Promise<void>;
  onDrain: (e: Event, name: string) => Promise<void>;
  onDraining: (name: string | null) => void;
}

/** One node's row; skipped by the diff while its node is unchanged. */
const NodeRow = memo(
  function NodeRow({ node, operator, draining, onResume, onDrain, onDraining }: RowProps) {
    return (
      <tr>
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
              <button type="button" onClick={() => void onResume(node.name)}>
                Resume
              </button>
            ) : draining ? (
              <form class="inline" onSubmit={(e) => void onDrain(e, node.name)}>
                <label>
                  Reason <input name="reason" required maxLength={256} autoFocus />
                </label>
                <button type="submit">Drain</button>
                <button type="button" onClick={() => onDraining(null)}>
                  Keep
                </button>
              </form>
            ) : (
              <button type="button" onClick={() => onDraining(node.name)}>
                Drain…
              </button>
            )}
          </td>
        )}
      </tr>
    );
  },
  (a, b) => a.sig === b.sig && a.operator === b.operator && a.draining === b.draining,
);

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
        // Another tenant's job: allocated, its id and use not shown to this user.
        const holder = g.job_id != null ? `, job ${g.job_id}` : g.allocated ? ", allocated to another user's job" : ", free";
        const title = `GPU ${g.index}: ${g.model}, ${memory}${holder}`;
        const label = util == null ? "–" : `${util} %`;
        return (
          <li key={g.index} class={`gpu ${bucket}${g.allocated || g.job_id != null ? " held" : ""}`} title={title}>
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
