// One job (scontrol show job): state, details, its place in the queue and expected
// start, spec and batch script ("Submit again" fills the submit form), timeline from its
// events, priority factors (sprio), per-GPU charts, accounting once over (sacct), and the
// output's tail with Follow; Cancel/Hold/Release/Requeue and the time limit where its
// state allows.

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, authHeaders, problemText, type AcctJob, type CloudEvent, type Job, type JobPriority, type Step } from "./client";
import { ENDED_STATES, formatDuration, formatMiB, formatReason, isHeld, plural } from "./format";
import { AnsiText, visible } from "./ansi";
import { GpuCharts } from "./GpuCharts";
import { navigate } from "./router";
import { isOperator, type Identity } from "./session";
import { ErrorNote, Time, useLiveRefresh, usePolling } from "./ui";

/** The output kept in the page: its last 512 KiB of characters. */
const TAIL_CHARS = 512 * 1024;

export function JobPage({ id, identity }: { id: number; identity: Identity }) {
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

  const setTimeLimit = async (e: Event) => {
    e.preventDefault();
    const input = (e.currentTarget as HTMLFormElement).elements.namedItem("time_limit") as HTMLInputElement;
    const value = input.value.trim();
    if (!value) return;
    const r = await api.PATCH("/v1/jobs/{id}", { params: { path: { id } }, body: { time_limit: value, begin: null, nice: null, priority_adjust: null } });
    setOutcome(r.response.ok ? `Time limit set to ${value}.` : problemText(r.error, r.response.status));
    if (r.response.ok) input.value = "";
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
      {job.state_description && <p class="state-description">{job.state_description}</p>}
      {identity.readOnly && <p class="hint">This token is read-only: no action is offered.</p>}
      <div class="actions" role="toolbar" aria-label="Actions on this job" hidden={identity.readOnly}>
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
        <button type="button" onClick={() => navigate(`/submit?from=${id}`)}>
          Submit again
        </button>
      </div>
      {!ended && !identity.readOnly && (
        <form class="inline" onSubmit={(e) => void setTimeLimit(e)}>
          <label for="time-limit">New time limit</label>
          <input
            id="time-limit"
            name="time_limit"
            placeholder="1:30:00, 90, 2-0"
            spellcheck={false}
            aria-describedby="time-limit-help"
          />
          <button type="submit">Update time limit</button>
          <span class="hint" id="time-limit-help">
            Slurm's --time format{isOperator(identity) ? "" : "; you may only lower it"}. A running job's limit counts
            from its start.
          </span>
        </form>
      )}
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
            {job.state === "PENDING" && (
              <Fact k="Queue position">
                {job.queue_position != null ? `${job.queue_position} (in the scheduler's order)` : "– (held, or not yet ranked)"}
              </Fact>
            )}
            {job.state === "PENDING" && (
              <Fact k="Expected start">
                {job.expected_start ? <Time iso={job.expected_start} /> : "not planned yet"}
              </Fact>
            )}
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

      {job.state === "PENDING" && <Priority id={id} />}

      <section aria-labelledby="spec">
        <h2 id="spec">Specification</h2>
        <dl class="facts">
          {spec.map(([k, v]) => (
            <Fact key={k} k={k}>
              {typeof v === "object" ? JSON.stringify(v) : String(v)}
            </Fact>
          ))}
        </dl>
      </section>

      <Script id={id} />

      {(job.start_time || ended) && <Steps id={id} running={job.state === "RUNNING"} />}

      {(job.start_time || ended) && <GpuCharts id={id} running={job.state === "RUNNING"} />}

      {ended && <Accounting id={id} />}

      <Output id={id} ended={ended} started={!!job.start_time || ended} />
    </article>
  );
}

/** The job's steps (`srun` inside it) and their tasks, as `sacct`/`sstat` list them;
 * re-read on the job's events and every 15 s while it runs. */
function Steps({ id, running }: { id: number; running: boolean }) {
  const [steps, setSteps] = useState<Step[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(
    async (live: () => boolean = () => true) => {
      const { data, error: problem, response } = await api.GET("/v1/jobs/{id}/steps", { params: { path: { id } } });
      if (!live()) return;
      if (data) setSteps(data.items);
      else setError(problemText(problem, response.status));
    },
    [id],
  );
  usePolling(load, running ? 15000 : null, [id, running]);
  useLiveRefresh("berth.job.", () => void load(), 500, (subject) => subject === `jobs/${id}`);
  if (error) return <p class="error">{error}</p>;
  if (!steps || steps.length === 0) return null;
  return (
    <section aria-labelledby="steps-title">
      <h2 id="steps-title">Steps</h2>
      <table class="grid" id="steps">
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Command</th>
            <th scope="col">State</th>
            <th scope="col">Nodes</th>
            <th scope="col">Tasks (ended / all)</th>
            <th scope="col">Exit</th>
            <th scope="col">Started</th>
            <th scope="col">Ended</th>
          </tr>
        </thead>
        <tbody>
          {steps.map((st) => (
            <tr key={`${st.run}.${st.step_id}`}>
              <th scope="row">
                {id}.{st.step_id}
                {st.run > 0 ? <span class="muted"> (run {st.run})</span> : null}
              </th>
              <td class="name">
                <code>{visible(st.command.map(shellQuote).join(" "))}</code>
              </td>
              <td>
                {st.state}
                {st.kill_reason ? <span class="muted"> ({st.kill_reason})</span> : null}
              </td>
              <td>{st.nodelist}</td>
              <td>
                {st.tasks.filter((t) => t.ended_at).length} / {st.tasks.length}
                {st.tasks.some((t) => t.exit_code || t.exit_signal) ? (
                  <span class="muted">
                    {" "}
                    (failed:{" "}
                    {st.tasks
                      .filter((t) => t.exit_code || t.exit_signal)
                      .map((t) => `${t.task_id} on ${t.node}`)
                      .join(", ")}
                    )
                  </span>
                ) : null}
              </td>
              <td>{st.exit_code ?? "–"}</td>
              <td>
                <Time iso={st.created_at} />
              </td>
              <td>
                <Time iso={st.end_time} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** A command word as a shell would need it: quoted when it holds anything but plain
 * characters. */
function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** The batch script, as text. */
function Script({ id }: { id: number }) {
  const [script, setScript] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    void api
      .GET("/v1/jobs/{id}/script", { params: { path: { id } }, parseAs: "text" })
      .then(({ data, error: problem, response }) => {
        if (!live) return;
        if (typeof data === "string") setScript(data);
        else setError(problemText(problem, response.status));
      });
    return () => void (live = false);
  }, [id]);
  return (
    <section aria-labelledby="script-title">
      <h2 id="script-title">Batch script</h2>
      {error && <p class="error">{error}</p>}
      {script === null && !error ? (
        <p aria-busy="true">Loading…</p>
      ) : (
        script !== null && (
          <pre class="script" tabIndex={0}>
            {visible(script)}
          </pre>
        )
      )}
    </section>
  );
}

const FACTORS: { key: keyof JobPriority["factors"]; label: string }[] = [
  { key: "age", label: "Age" },
  { key: "fairshare", label: "Fairshare" },
  { key: "job_size", label: "Job size" },
  { key: "partition", label: "Partition" },
  { key: "qos", label: "QOS" },
  { key: "nice", label: "Nice" },
  { key: "adjust", label: "Admin adjustment" },
  { key: "priority", label: "Total" },
];

/** The priority's factors (sprio): each as a fraction and weighted. */
function Priority({ id }: { id: number }) {
  const [p, setP] = useState<JobPriority | null>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    void api.GET("/v1/jobs/{id}/priority", { params: { path: { id } } }).then(({ data, error, response }) => {
      if (!live) return;
      if (data) setP(data);
      else setNote(response.status === 409 ? "Not ranked yet (held, or the scheduler has not reached it)." : problemText(error, response.status));
    });
    return () => void (live = false);
  }, [id]);
  return (
    <section aria-labelledby="priority-title">
      <h2 id="priority-title">Priority factors</h2>
      {note && <p class="muted">{note}</p>}
      {p && (
        <>
          <table class="grid">
            <thead>
              <tr>
                <th scope="col">Factor</th>
                <th scope="col">Value (0–1)</th>
                <th scope="col">Weighted</th>
              </tr>
            </thead>
            <tbody>
              {FACTORS.map((f) => (
                <tr key={f.key}>
                  <th scope="row">{f.label}</th>
                  <td>{f.key === "priority" || f.key === "nice" || f.key === "adjust" ? "" : fmtFactor(p.factors[f.key])}</td>
                  <td>{fmtFactor(p.weighted[f.key])}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <p class="hint">
            Computed <Time iso={p.computed_at} />.
          </p>
        </>
      )}
    </section>
  );
}

function fmtFactor(v: number | null | undefined): string {
  if (v === null || v === undefined) return "–";
  return Number.isInteger(v) ? String(v) : v.toFixed(4);
}

/** What the job used, run by run (sacct), once it is over. */
function Accounting({ id }: { id: number }) {
  const [runs, setRuns] = useState<AcctJob[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    // The record is written by the scheduler shortly after the end: look again every
    // 3 s for a minute until it is there.
    const load = async (tries: number) => {
      const { data, error: problem, response } = await api.GET("/v1/accounting/jobs", {
        params: { query: { job: String(id), duplicates: true, start: "1970-01-01T00:00:00Z" } },
      });
      if (!live) return;
      if (!data) {
        setError(problemText(problem, response.status));
        return;
      }
      const mine = data.items.filter((r) => r.job_id === id);
      setRuns(mine);
      if (mine.length === 0 && tries > 0) timer = window.setTimeout(() => void load(tries - 1), 3000);
    };
    void load(20);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id]);
  return (
    <section aria-labelledby="acct-title">
      <h2 id="acct-title">Accounting</h2>
      {error && <p class="error">{error}</p>}
      {runs && runs.length === 0 && <p class="muted">No accounting record yet (written by the scheduler shortly after the end).</p>}
      {runs && runs.length > 0 && (
        <table class="grid" id="accounting">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">State</th>
              <th scope="col">Elapsed</th>
              <th scope="col">CPU time</th>
              <th scope="col">Peak memory (RSS)</th>
              <th scope="col">GPU time</th>
              <th scope="col">GPU utilisation (mean)</th>
              <th scope="col">GPU memory (peak)</th>
              <th scope="col">Energy</th>
              <th scope="col">Nodes</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.run}>
                <td>{r.run}</td>
                <td>
                  {r.state}
                  {r.exit_code != null ? ` (exit ${r.exit_code}${r.exit_signal ? `, signal ${r.exit_signal}` : ""})` : ""}
                </td>
                <td>{formatDuration(r.elapsed)}</td>
                <td>{r.cpu_time_s != null ? formatDuration(r.cpu_time_s) : "–"}</td>
                <td>{r.max_rss_mib != null ? formatMiB(r.max_rss_mib) : "–"}</td>
                <td>{formatDuration(r.gpu_seconds)}</td>
                <td>{r.gpu_util_avg != null ? `${r.gpu_util_avg.toFixed(0)} %` : "–"}</td>
                <td>{r.gpu_mem_peak_mib != null ? formatMiB(r.gpu_mem_peak_mib) : "–"}</td>
                <td>{r.energy_j != null ? `${(r.energy_j / 3.6e6).toFixed(3)} kWh` : "–"}</td>
                <td>{r.nodelist ?? "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
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
      <pre class="log" ref={pre} tabIndex={0} role="log" aria-label="Job output">
        <AnsiText text={text} />
      </pre>
    </section>
  );
}
