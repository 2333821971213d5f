// One job (scontrol show job): state, details, spec, timeline from its events, and the
// output's tail with Follow; Cancel/Hold/Release/Requeue where its state allows.

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, authHeaders, problemText, type CloudEvent, type Job } from "./client";
import { ENDED_STATES, formatDuration, formatMiB, formatReason, isHeld, plural } from "./format";
import type { Identity } from "./session";
import { ErrorNote, Time, useLiveRefresh } from "./ui";

/** The output kept in the page: its last 512 KiB of characters. */
const TAIL_CHARS = 512 * 1024;

export function JobPage({ id }: { id: number; identity: Identity }) {
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [timeline, setTimeline] = useState<CloudEvent[]>([]);

  const load = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/jobs/{id}", { params: { path: { id } } });
    if (!data) {
      setError(response.status === 404 ? `No job ${id} (or not one you may see).` : problemText(problem, response.status));
      return;
    }
    setError(null);
    setJob(data);
    const events = await api.GET("/v1/events", { params: { query: { subject: `jobs/${id}`, limit: 1000 } } });
    if (events.data && typeof events.data === "object") setTimeline(events.data.items);
  }, [id]);

  useEffect(() => {
    setJob(null);
    setTimeline([]);
    setOutcome(null);
    void load();
  }, [id]);
  useLiveRefresh("berth.job.", () => void load(), 300, (subject) => subject === `jobs/${id}`);

  const act = async (action: "cancel" | "hold" | "release" | "requeue") => {
    if ((action === "cancel" || action === "requeue") && !confirm(`${action[0]!.toUpperCase()}${action.slice(1)} job ${id}?`)) return;
    const opts = { params: { path: { id } } };
    const r =
      action === "cancel"
        ? await api.POST("/v1/jobs/{id}/cancel", opts)
        : action === "hold"
          ? await api.POST("/v1/jobs/{id}/hold", opts)
          : action === "release"
            ? await api.POST("/v1/jobs/{id}/release", opts)
            : await api.POST("/v1/jobs/{id}/requeue", opts);
    setOutcome(r.response.ok ? `Done: ${action}.` : problemText(r.error, r.response.status));
    void load();
  };

  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!job) return <p aria-busy="true">Loading job {id}…</p>;

  const ended = ENDED_STATES.has(job.state);
  const spec = Object.entries(job.spec).filter(([, v]) => v !== null && v !== undefined && v !== false && v !== "");

  return (
    <article aria-labelledby="job-title">
      <h1 id="job-title">
        Job {id}: <span class="name">{job.name}</span>{" "}
        <span class={`state s-${job.state.toLowerCase()}`}>{job.state}</span>
      </h1>
      {job.reason && job.reason !== "None" && <p>{formatReason(job.reason)}</p>}
      <div class="actions" role="toolbar" aria-label="Actions on this job">
        {!ended && (
          <button type="button" onClick={() => void act("cancel")}>
            Cancel
          </button>
        )}
        {job.state === "PENDING" && !isHeld(job.reason) && (
          <button type="button" onClick={() => void act("hold")}>
            Hold
          </button>
        )}
        {job.state === "PENDING" && isHeld(job.reason) && (
          <button type="button" onClick={() => void act("release")}>
            Release
          </button>
        )}
        {job.state !== "PENDING" && job.spec.requeue !== false && (
          <button type="button" onClick={() => void act("requeue")}>
            Requeue
          </button>
        )}
      </div>
      {outcome && <p role="status">{outcome}</p>}

      <div class="columns">
        <section aria-labelledby="details">
          <h2 id="details">Details</h2>
          <dl class="facts">
            <Fact k="User">{job.user}</Fact>
            <Fact k="Account">{job.account ?? "–"}</Fact>
            <Fact k="Partition">{job.partition}</Fact>
            <Fact k="QOS">{job.qos ?? "–"}</Fact>
            <Fact k="Priority">{job.priority ?? "–"}</Fact>
            <Fact k="Nodes">{plural(job.num_nodes, "node")}{job.nodelist ? ` (${job.nodelist})` : ""}</Fact>
            <Fact k="Tasks">{plural(job.num_tasks, "task")}</Fact>
            <Fact k="CPUs">{plural(job.num_cpus ?? 0, "CPU")}</Fact>
            <Fact k="GPUs">{plural(job.gpus_per_node, "GPU")} per node</Fact>
            <Fact k="Time limit">{formatDuration(job.time_limit)}</Fact>
            <Fact k="Restarts">{job.restart_count}</Fact>
            {ended && (
              <Fact k="Exit">
                {job.exit_code ?? "–"}
                {job.exit_signal ? `, signal ${job.exit_signal}` : ""}
              </Fact>
            )}
            <Fact k="Working directory">{job.work_dir ?? "–"}</Fact>
            <Fact k="Output file">{job.stdout_path ?? "–"}</Fact>
          </dl>
          {job.allocations.length > 0 && (
            <>
              <h3>Allocation</h3>
              <ul>
                {job.allocations.map((a) => (
                  <li key={a.node}>
                    {a.node}: GPUs {a.gpus.join(", ") || "none"}; {plural(a.cpus?.length ?? 0, "CPU")}; {formatMiB(a.memory_mib ?? 0)}
                  </li>
                ))}
              </ul>
            </>
          )}
        </section>

        <section aria-labelledby="timeline">
          <h2 id="timeline">Timeline</h2>
          <ol class="timeline">
            <li>
              <Time iso={job.submit_time} /> submitted
            </li>
            {timeline
              .filter((e) => e.type !== "berth.job.submitted")
              .map((e) => (
                <li key={e.id}>
                  <Time iso={e.time} /> {e.type.replace(/^berth\.job\./, "").replace(/_/g, " ")}
                  {eventDetail(e)}
                </li>
              ))}
            {job.state === "PENDING" && job.expected_start && (
              <li class="muted">
                <Time iso={job.expected_start} /> planned start
              </li>
            )}
          </ol>
        </section>
      </div>

      <section aria-labelledby="spec">
        <h2 id="spec">Specification</h2>
        <p class="hint">The batch script itself is not in the job's view of the api.</p>
        <dl class="facts">
          {spec.map(([k, v]) => (
            <Fact key={k} k={k}>
              {typeof v === "object" ? JSON.stringify(v) : String(v)}
            </Fact>
          ))}
        </dl>
      </section>

      <Output id={id} ended={ended} started={!!job.start_time || ended} />
    </article>
  );
}

function Fact({ k, children }: { k: string; children: ComponentChildren }) {
  return (
    <>
      <dt>{k}</dt>
      <dd>{children}</dd>
    </>
  );
}

function eventDetail(e: CloudEvent): string {
  const d = e.data as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof d["state"] === "string") parts.push(d["state"]);
  if (typeof d["reason"] === "string" && d["reason"] !== "None") parts.push(formatReason(d["reason"]));
  if (typeof d["exit_code"] === "number") parts.push(`exit code ${d["exit_code"]}`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

/** Makes control characters visible (ESC shows as ␛) and turns lone CRs into new lines,
 * so another user's output can neither hide text nor look like the console's own. */
function visible(text: string): string {
  return text
    .replace(/\r\n/g, "\n")
    .replace(/\r/g, "\n")
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) => String.fromCharCode(0x2400 + (c === "\u007f" ? 0x21 : c.charCodeAt(0))))
    .replace(/[\u202a-\u202e\u2066-\u2069]/g, "\ufffd");
}

/** The job's output: its tail, following new output while Follow is on. */
function Output({ id, ended, started }: { id: number; ended: boolean; started: boolean }) {
  const [stream, setStream] = useState<"stdout" | "stderr">("stdout");
  const [follow, setFollow] = useState(true);
  const [text, setText] = useState("");
  const [state, setState] = useState<string>("");
  const pre = useRef<HTMLPreElement>(null);

  useEffect(() => {
    if (!started) return;
    const abort = new AbortController();
    let buffer = "";
    setText("");
    setState(follow && !ended ? "Following…" : "Loading…");
    (async () => {
      const res = await fetch(`/v1/jobs/${id}/output?stream=${stream}&follow=${follow && !ended}`, {
        headers: authHeaders(),
        signal: abort.signal,
        cache: "no-store",
      });
      if (!res.ok || !res.body) {
        setState(`The api answered ${res.status}.`);
        return;
      }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        if (buffer.length > TAIL_CHARS) {
          const cut = buffer.indexOf("\n", buffer.length - TAIL_CHARS);
          buffer = buffer.slice(cut < 0 ? buffer.length - TAIL_CHARS : cut + 1);
        }
        setText(buffer);
      }
      setState(follow && !ended ? "The output ended (the job is over)." : "");
    })().catch((err: unknown) => {
      if (!abort.signal.aborted) setState(`Output stopped: ${err instanceof Error ? err.message : String(err)}`);
    });
    return () => abort.abort();
  }, [id, stream, follow, ended, started]);

  useEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [text, follow]);

  return (
    <section aria-labelledby="output">
      <h2 id="output">Output</h2>
      <div class="actions">
        <label>
          Stream{" "}
          <select value={stream} onChange={(e) => setStream((e.currentTarget as HTMLSelectElement).value as "stdout" | "stderr")}>
            <option value="stdout">stdout</option>
            <option value="stderr">stderr</option>
          </select>
        </label>
        <label>
          <input type="checkbox" checked={follow} onChange={() => setFollow(!follow)} /> Follow
        </label>
        <span class="muted" role="status">
          {started ? state : "Not started yet."}
        </span>
      </div>
      <pre class="log" ref={pre} tabIndex={0} aria-label="Job output">
        {visible(text)}
      </pre>
    </section>
  );
}
