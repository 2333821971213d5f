// Submit (sbatch): paste or load a batch script, or fill in a form (a command, sbatch's
// common options), send it with `POST /v1/jobs`, and go to the new job's page. A refused
// script's problem document is shown at its line: the editor has a gutter of line
// numbers, the offending line is marked there and with a band behind its text, and the
// message (with the line's number and text) sits right below the editor, never over the
// script; a refused form field is marked with it. `/submit?from=ID` ("Submit again" on
// a job's page) fills in that job's script and options.

import { useEffect, useRef, useState } from "preact/hooks";
import { api, problemText, type JobSpec, type Problem } from "./client";
import { navigate } from "./router";
import type { Identity } from "./session";

/** Scripts larger than this are not loaded from a file (the api refuses large bodies). */
const MAX_SCRIPT_BYTES = 1024 * 1024;
const PLACEHOLDER = "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --gres=gpu:1\n#SBATCH --time=10\n\nnvidia-smi";

/** A refusal as the page shows it: the message, and the script line it is about. */
interface Refusal {
  message: string;
  field: string | null;
  /** 1-based; `null` when the problem names no line of the script. */
  line: number | null;
  /** That line's text when refused: the mark goes once the line is edited. */
  lineText: string | null;
  /** Whether the line was found from the option's name rather than given by the api. */
  guessed: boolean;
}

function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/** Where a problem points in the script: the api's `line`, or else the last `#SBATCH`
 * line carrying the option it names (`--gres` for a request no node can satisfy). */
export function refusalOf(problem: Partial<Problem> | undefined, status: number, script: string): Refusal {
  const lines = splitLines(script);
  const field = typeof problem?.field === "string" ? problem.field : null;
  let line = typeof problem?.line === "number" && problem.line >= 1 && problem.line <= lines.length ? problem.line : null;
  let guessed = false;
  if (line === null && field && field.startsWith("-")) {
    const option = field.split("=")[0]!;
    for (let i = lines.length - 1; i >= 0; i--) {
      const m = /^#SBATCH\s+(.*)$/.exec(lines[i]!);
      if (m && m[1]!.split(/\s+/).some((word) => word === option || word.startsWith(`${option}=`))) {
        line = i + 1;
        guessed = true;
        break;
      }
    }
  }
  const detail = typeof problem?.detail === "string" ? problem.detail : problemText(problem, status);
  return {
    message: detail.replace(/^line \d+: /, ""),
    field,
    line,
    lineText: line === null ? null : lines[line - 1]!,
    guessed,
  };
}

/** The options of a job to submit again: its spec less what only its first submission
 * meant (`--wrap` became its script; `--parsable` is the client's). */
function optionsOf(spec: JobSpec): Partial<JobSpec> {
  const out: Partial<JobSpec> = {};
  for (const [k, v] of Object.entries(spec) as [keyof JobSpec, unknown][]) {
    if (k === "wrap" || k === "parsable" || v === null || v === undefined || v === false) continue;
    (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

/** Bidirectional embeddings, overrides and isolates: text that displays in another order
 * than it runs ("Trojan Source"). */
const BIDI = /[\u202a-\u202e\u2066-\u2069]/;

/** An option's value as a person reads it: seconds and MiB with their units. */
function optionText(key: string, value: unknown): string {
  if (typeof value === "number" && (key === "time_limit" || key === "time_min")) return `${key}=${value} s`;
  if (typeof value === "number" && key.endsWith("_mib")) return `${key}=${value} MiB`;
  return `${key}=${typeof value === "object" ? JSON.stringify(value) : String(value)}`;
}

export function SubmitPage({ query, identity }: { query: URLSearchParams; identity: Identity }) {
  const [script, setScript] = useState("");
  const [scriptName, setScriptName] = useState("");
  const [submitDir, setSubmitDir] = useState("");
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** "Submit again": the job it came from and its options, sent with the script unless dropped. */
  const [from, setFrom] = useState<{ id: number; options: Partial<JobSpec> } | null>(null);
  const [keepOptions, setKeepOptions] = useState(true);
  /** Kept across a network failure so that resubmitting cannot make a second job. */
  const idempotencyKey = useRef<string | null>(null);
  const textarea = useRef<HTMLTextAreaElement>(null);
  const fromId = Number(query.get("from") ?? "");

  useEffect(() => {
    if (!Number.isInteger(fromId) || fromId <= 0) return;
    let live = true;
    void (async () => {
      const job = await api.GET("/v1/jobs/{id}", { params: { path: { id: fromId } } });
      const text = await api.GET("/v1/jobs/{id}/script", { params: { path: { id: fromId } }, parseAs: "text" });
      if (!live) return;
      if (!job.data || typeof text.data !== "string") {
        setNote(`Job ${fromId} could not be read: ${problemText(job.error ?? text.error, job.response.status)}`);
        return;
      }
      setScript(text.data);
      setScriptName(job.data.name);
      setSubmitDir(job.data.work_dir ?? "");
      setFrom({ id: fromId, options: optionsOf(job.data.spec) });
      // A script with #SBATCH lines carries its options itself (and the job's options,
      // parsed from them, would override the lines the user edits): keep the job's options
      // only for a script without any (a --wrap or form job, or options given outside).
      setKeepOptions(!/^#SBATCH/m.test(text.data));
      setRefusal(null);
      setNote(`The script of job ${fromId} is filled in.`);
    })();
    return () => void (live = false);
  }, [fromId]);

  const load = async (e: Event) => {
    const input = e.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    if (file.size > MAX_SCRIPT_BYTES) {
      setNote(`${file.name} is larger than 1 MiB; not loaded.`);
      return;
    }
    setScript(await file.text());
    setScriptName(file.name);
    setRefusal(null);
    setNote(`Loaded ${file.name} (${file.size} bytes).`);
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!script.trim()) {
      setRefusal({ message: "The script is empty.", field: "script", line: null, lineText: null, guessed: false });
      return;
    }
    setBusy(true);
    setNote(null);
    idempotencyKey.current ??= crypto.randomUUID();
    try {
      const { data, error, response } = await api.POST("/v1/jobs", {
        params: { header: { "Idempotency-Key": idempotencyKey.current } },
        body: {
          script,
          script_name: scriptName.trim() || null,
          submit_dir: submitDir.trim() || null,
          ...(from && keepOptions ? { spec: from.options as JobSpec } : {}),
        },
      });
      idempotencyKey.current = null;
      if (!data) {
        setRefusal(refusalOf(error as Partial<Problem> | undefined, response.status, script));
        return;
      }
      setRefusal(null);
      navigate(`/jobs/${data.id}`);
    } catch (err) {
      setRefusal({
        message: `Could not reach the api (${err instanceof Error ? err.message : String(err)}); submitting again will not make a second job.`,
        field: null,
        line: null,
        lineText: null,
        guessed: false,
      });
    } finally {
      setBusy(false);
    }
  };

  const lines = splitLines(script);
  // The mark stays while the refused line is as it was.
  const marked = refusal?.line != null && lines[refusal.line - 1] === refusal.lineText ? refusal.line : null;

  const goToLine = (line: number) => {
    const t = textarea.current;
    if (!t) return;
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    t.focus();
    t.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
  };

  const fieldInvalid = (name: string) => (refusal?.field === name ? true : undefined);

  return (
    <section aria-labelledby="submit-title">
      <h1 id="submit-title">Submit a batch job</h1>
      <form class="submit" onSubmit={(e) => void submit(e)}>
        <label for="script-file">Load a script file</label>
        <input id="script-file" type="file" accept=".sh,.sbatch,.slurm,.bash,text/*" onChange={(e) => void load(e)} />
        <label for="script">Batch script</label>
        <p class="hint" id="script-help">
          <code>#SBATCH</code> lines are read as <code>sbatch</code> reads them. The job runs as you.
        </p>
        <ScriptEditor
          value={script}
          onInput={(v) => setScript(v)}
          marked={marked}
          textarea={textarea}
          invalid={refusal !== null && (refusal.line !== null || refusal.field === "script")}
        />
        {refusal && (
          <div class="error refusal" role="alert" id="submit-error">
            <p>
              {refusal.line !== null ? `Line ${refusal.line}${refusal.guessed ? " (probably)" : ""}: ` : ""}
              {refusal.message}
              {refusal.field && refusal.field !== "script" && !refusal.message.includes(refusal.field) ? ` (${refusal.field})` : ""}
            </p>
            {marked !== null && (
              <p class="refused-line">
                <span class="ln">{marked}</span>
                <code>{refusal.lineText}</code>
              </p>
            )}
            {marked !== null && (
              <button type="button" onClick={() => goToLine(marked)}>
                Go to line {marked}
              </button>
            )}
          </div>
        )}
        {BIDI.test(script) && (
          <p class="error" role="alert" id="bidi-warning">
            This script holds bidirectional formatting characters (U+202A–U+202E, U+2066–U+2069): it may run in
            another order than it reads here. Check it before submitting.
          </p>
        )}
        {identity.readOnly && <p class="hint">This token is read-only: the api will refuse a submission.</p>}
        <div class="fields">
          <label>
            Script name <span class="muted">(the job's name unless it sets one)</span>
            <input
              name="script_name"
              value={scriptName}
              onInput={(e) => setScriptName((e.currentTarget as HTMLInputElement).value)}
              placeholder="sbatch"
              spellcheck={false}
              aria-invalid={fieldInvalid("script_name")}
            />
          </label>
          <label>
            Working directory <span class="muted">(on the node; absolute)</span>
            <input
              name="submit_dir"
              value={submitDir}
              onInput={(e) => setSubmitDir((e.currentTarget as HTMLInputElement).value)}
              placeholder="/home/you/project"
              spellcheck={false}
              aria-invalid={fieldInvalid("submit_dir")}
            />
          </label>
        </div>
        {from && Object.keys(from.options).length > 0 && (
          <label class="check">
            <input type="checkbox" checked={keepOptions} onChange={() => setKeepOptions(!keepOptions)} /> Also send job{" "}
            {from.id}'s options as it ran (those given on its command line or form included; they override the
            script's <code>#SBATCH</code> lines, edited or not):{" "}
            <code class="name">
              {Object.entries(from.options)
                .map(([k, v]) => optionText(k, v))
                .join(" ")}
            </code>
          </label>
        )}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? "Submitting…" : "Submit"}
          </button>
          {note && <span role="status">{note}</span>}
        </div>
      </form>
      <FormSubmit />
    </section>
  );
}

/** The form's fields: each an sbatch option of the spec. */
const FORM_FIELDS: { name: keyof JobSpec; label: string; hint: string; kind: "text" | "number" }[] = [
  { name: "job_name", label: "Job name", hint: "-J", kind: "text" },
  { name: "partition", label: "Partition", hint: "-p; default: the default partition", kind: "text" },
  { name: "account", label: "Account", hint: "-A; default: yours", kind: "text" },
  { name: "qos", label: "QOS", hint: "-q", kind: "text" },
  { name: "nodes", label: "Nodes", hint: "-N", kind: "number" },
  { name: "gpus_per_node", label: "GPUs per node", hint: "--gpus-per-node", kind: "number" },
  { name: "cpus_per_task", label: "CPUs per task", hint: "-c", kind: "number" },
  { name: "time_limit", label: "Time limit, minutes", hint: "-t; default: the partition's", kind: "number" },
];

/** The sbatch options a problem document names (`field`), by the form field that sets them. */
const OPTION_FIELDS: Record<string, string> = {
  "--wrap": "wrap",
  "-J": "job_name",
  "--job-name": "job_name",
  "-p": "partition",
  "--partition": "partition",
  "-A": "account",
  "--account": "account",
  "-q": "qos",
  "--qos": "qos",
  "-N": "nodes",
  "--nodes": "nodes",
  "--gpus-per-node": "gpus_per_node",
  "--gres": "gpus_per_node",
  "-G": "gpus_per_node",
  "--gpus": "gpus_per_node",
  "-c": "cpus_per_task",
  "--cpus-per-task": "cpus_per_task",
  "-t": "time_limit",
  "--time": "time_limit",
};

/** The form field a problem's `field` is about (`--partition`, `spec.partition`, `partition`). */
function formFieldOf(field: string): string {
  const option = field.split("=")[0]!;
  return OPTION_FIELDS[option] ?? field.replace(/^spec\./, "");
}

/** A job from a form: a command (`--wrap`) and sbatch's common options. */
function FormSubmit() {
  const [problem, setProblem] = useState<{ field: string | null; message: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const key = useRef<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const spec: Record<string, unknown> = { wrap: String(form.get("wrap") ?? "") };
    for (const f of FORM_FIELDS) {
      const raw = String(form.get(f.name) ?? "").trim();
      if (!raw) continue;
      if (f.kind === "number") {
        const n = Number(raw);
        if (!Number.isInteger(n) || n < 0) {
          setProblem({ field: f.name, message: `${f.label}: a whole number, 0 or more.` });
          return;
        }
        spec[f.name] = f.name === "time_limit" ? n * 60 : n;
      } else spec[f.name] = raw;
    }
    setBusy(true);
    key.current ??= crypto.randomUUID();
    try {
      const { data, error, response } = await api.POST("/v1/jobs", {
        params: { header: { "Idempotency-Key": key.current } },
        body: { spec: spec as JobSpec },
      });
      key.current = null;
      if (!data) {
        const p = error as Partial<Problem> | undefined;
        const field = typeof p?.field === "string" ? formFieldOf(p.field) : null;
        setProblem({ field, message: problemText(error, response.status) });
        return;
      }
      setProblem(null);
      navigate(`/jobs/${data.id}`);
    } catch (err) {
      setProblem({ field: null, message: `Could not reach the api (${err instanceof Error ? err.message : String(err)}).` });
    } finally {
      setBusy(false);
    }
  };

  const invalid = (name: string) => (problem?.field === name ? true : undefined);
  const onField = problem?.field != null && (problem.field === "wrap" || FORM_FIELDS.some((f) => f.name === problem.field));
  const errorFor = (name: string) =>
    problem?.field === name ? (
      <span class="error" id={`form-${name}-error`}>
        {problem.message}
      </span>
    ) : null;

  return (
    <form class="submit job-form" id="form-submit" aria-labelledby="form-title" onSubmit={(e) => void submit(e)}>
      <h2 id="form-title">Or fill in a form</h2>
      <label for="form-wrap">Command</label>
      <input
        id="form-wrap"
        name="wrap"
        required
        spellcheck={false}
        placeholder="python train.py --epochs 3"
        aria-invalid={invalid("wrap")}
        aria-describedby={invalid("wrap") ? "form-wrap-error" : undefined}
      />
      {errorFor("wrap")}
      <div class="fields">
        {FORM_FIELDS.map((f) => (
          <label key={f.name}>
            {f.label} <span class="muted">({f.hint})</span>
            <input
              name={f.name}
              inputMode={f.kind === "number" ? "numeric" : undefined}
              spellcheck={false}
              aria-invalid={invalid(f.name)}
              aria-describedby={invalid(f.name) ? `form-${f.name}-error` : undefined}
            />
            {errorFor(f.name)}
          </label>
        ))}
      </div>
      {problem && !onField && (
        <p class="error" role="alert">
          {problem.message}
        </p>
      )}
      {problem && onField && (
        <p class="visually-hidden" role="alert">
          {problem.message}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? "Submitting…" : "Submit the form"}
        </button>
      </div>
    </form>
  );
}

/** A gutter of line numbers beside a textarea laid over a backdrop of line rows, where
 * the marked line's band shows (behind its text; the message is outside the editor, so
 * it never covers the script). Lines do not wrap, so rows and lines stay aligned; the
 * gutter and the backdrop follow the textarea's vertical scroll. */
function ScriptEditor(props: {
  value: string;
  onInput: (value: string) => void;
  marked: number | null;
  invalid: boolean;
  textarea: { current: HTMLTextAreaElement | null };
}) {
  const gutter = useRef<HTMLDivElement>(null);
  const backdrop = useRef<HTMLDivElement>(null);
  const lines = splitLines(props.value);
  const sync = (e: Event) => {
    const t = e.currentTarget as HTMLTextAreaElement;
    if (gutter.current) gutter.current.scrollTop = t.scrollTop;
    if (backdrop.current) backdrop.current.scrollTop = t.scrollTop;
  };
  return (
    <div class={`editor${props.invalid ? " invalid" : ""}`}>
      <div class="gutter" ref={gutter} aria-hidden="true">
        {lines.map((_, i) => (
          <div key={i} class={i + 1 === props.marked ? "ln bad" : "ln"}>
            {i + 1}
          </div>
        ))}
      </div>
      <div class="code">
        <div class="backdrop" ref={backdrop} aria-hidden="true">
          {props.marked !== null &&
            lines.slice(0, props.marked).map((_, i) =>
              <div key={i} class={i + 1 === props.marked ? "row bad" : "row"} />,
            )}
        </div>
        <textarea
          id="script"
          name="script"
          ref={props.textarea}
          value={props.value}
          onInput={(e) => props.onInput((e.currentTarget as HTMLTextAreaElement).value)}
          onScroll={sync}
          wrap="off"
          spellcheck={false}
          autoComplete="off"
          autoCapitalize="off"
          rows={18}
          placeholder={PLACEHOLDER}
          aria-invalid={props.invalid ? true : undefined}
          aria-describedby={props.invalid ? "script-help submit-error" : "script-help"}
        />
      </div>
    </div>
  );
}
