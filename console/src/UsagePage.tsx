// Usage (sreport): GPU-hours by account and by user over a window, as bars (plain SVG)
// and tables, and a CSV of the account × user rows built in the browser.

import { useEffect, useState } from "preact/hooks";
import { api, problemText, type UsageReport } from "./client";
import { navigate } from "./router";
import { ErrorNote } from "./ui";

const DAY = 86400000;

/** `YYYY-MM-DD` of a time, in UTC. */
function day(t: number): string {
  return new Date(t).toISOString().slice(0, 10);
}

function validDay(s: string | null): s is string {
  return !!s && /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`));
}

interface Bar {
  label: string;
  hours: number;
  jobs: number;
}

function sumBy(report: UsageReport, key: "account" | "user"): Bar[] {
  const m = new Map<string, Bar>();
  for (const r of report.rows) {
    const label = r[key] ?? "";
    const b = m.get(label) ?? { label, hours: 0, jobs: 0 };
    b.hours += r.tres["gres/gpu"] ?? 0;
    b.jobs += r.jobs;
    m.set(label, b);
  }
  return [...m.values()].sort((a, b) => b.hours - a.hours || a.label.localeCompare(b.label));
}

function hours(h: number): string {
  // Short jobs hold GPUs for small fractions of an hour: keep two significant digits.
  if (h > 0 && h < 0.01) return h.toLocaleString(undefined, { maximumSignificantDigits: 2 });
  return h.toLocaleString(undefined, { maximumFractionDigits: 2 });
}

/** A CSV field: quoted when needed, and a leading = + - @ defused for spreadsheets. */
function csvField(s: string): string {
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function UsagePage({ query }: { query: URLSearchParams }) {
  const today = Date.parse(`${day(Date.now())}T00:00:00Z`);
  const startDay = validDay(query.get("start")) ? query.get("start")! : day(today - 6 * DAY);
  const endDay = validDay(query.get("end")) ? query.get("end")! : day(today);
  const [report, setReport] = useState<UsageReport | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let gone = false;
    setReport(null);
    setError(null);
    // The end day is included: the window ends at the next midnight (UTC).
    const end = new Date(Date.parse(`${endDay}T00:00:00Z`) + DAY).toISOString();
    void api
      .GET("/v1/usage", {
        params: { query: { start: `${startDay}T00:00:00Z`, end, group_by: "account,user", tres: "gres/gpu", unit: "hours" } },
      })
      .then(({ data, error: problem, response }) => {
        if (gone) return;
        if (data) setReport(data);
        else setError(problemText(problem, response.status));
      });
    return () => {
      gone = true;
    };
  }, [startDay, endDay]);

  const apply = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const q = new URLSearchParams();
    q.set("start", String(f.get("start") ?? ""));
    q.set("end", String(f.get("end") ?? ""));
    navigate(`/usage?${q.toString()}`);
  };

  const exportCsv = () => {
    if (!report) return;
    const lines = ["account,user,gpu_hours,jobs"];
    for (const r of report.rows) {
      lines.push([csvField(r.account ?? ""), csvField(r.user ?? ""), String(r.tres["gres/gpu"] ?? 0), String(r.jobs)].join(","));
    }
    const blob = new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `berth-gpu-hours-${startDay}-to-${endDay}.csv`;
    a.click();
    window.setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  };

  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <form class="filters" onSubmit={apply} key={`${startDay}/${endDay}`}>
        <label>
          From <input type="date" name="start" defaultValue={startDay} required />
        </label>
        <label>
          To (included) <input type="date" name="end" defaultValue={endDay} required />
        </label>
        <button type="submit">Show</button>
        <button type="button" id="export-csv" onClick={exportCsv} disabled={!report}>
          Export CSV
        </button>
      </form>
      {error && <ErrorNote>{error}</ErrorNote>}
      {!error && !report && <p aria-busy="true">Loading usage…</p>}
      {report && (
        <>
          <p id="usage-total">
            {hours(report.total["gres/gpu"] ?? 0)} GPU-hours from {startDay} to {endDay} (UTC days; what you may see).
          </p>
          <div class="charts">
            <Chart id="by-account" title="GPU-hours by account" what="Account" bars={sumBy(report, "account")} />
            <Chart id="by-user" title="GPU-hours by user" what="User" bars={sumBy(report, "user")} />
          </div>
        </>
      )}
    </section>
  );
}

/** Horizontal bars in plain SVG (sizes as attributes, colours from classes), with the
 * numbers in a table below for screen readers and copying. */
function Chart({ id, title, what, bars }: { id: string; title: string; what: string; bars: Bar[] }) {
  const max = Math.max(...bars.map((b) => b.hours), 0);
  const row = 24;
  const width = 560;
  const labelW = 150;
  const valueW = 80;
  const barMax = width - labelW - valueW;
  return (
    <figure class="chart" id={id}>
      <figcaption>{title}</figcaption>
      {bars.length === 0 ? (
        <p class="muted">No GPU use in this window.</p>
      ) : (
        <>
          <svg viewBox={`0 0 ${width} ${bars.length * row + 4}`} width={width} height={bars.length * row + 4} aria-hidden="true" class="bars">
            {bars.map((b, i) => {
              const w = max > 0 ? Math.max(b.hours > 0 ? 1 : 0, (b.hours / max) * barMax) : 0;
              const y = i * row + 2;
              return (
                <g key={b.label}>
                  <text x={labelW - 6} y={y + row / 2} text-anchor="end" dominant-baseline="middle" class="bar-label">
                    {b.label.length > 20 ? `${b.label.slice(0, 19)}…` : b.label || "–"}
                  </text>
                  <rect x={labelW} y={y + 3} width={w} height={row - 6} rx={2} class="bar" />
                  <text x={labelW + w + 6} y={y + row / 2} dominant-baseline="middle" class="bar-value">
                    {hours(b.hours)}
                  </text>
                </g>
              );
            })}
          </svg>
          <table class="grid compact">
            <thead>
              <tr>
                <th scope="col">{what}</th>
                <th scope="col">GPU-hours</th>
                <th scope="col">Jobs ended</th>
              </tr>
            </thead>
            <tbody>
              {bars.map((b) => (
                <tr key={b.label}>
                  <th scope="row">{b.label}</th>
                  <td>{hours(b.hours)}</td>
                  <td>{b.jobs}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </figure>
  );
}
