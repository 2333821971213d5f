// Usage (sreport): GPU-hours by account and by user over a window, as bars (plain SVG)
// and tables, GPU-hours per day by account (uPlot; one report per UTC day), and a CSV of
// the account × user rows built in the browser.

import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { api, problemText, type UsageReport } from "./client";
import { navigate } from "./router";
import { ErrorNote } from "./ui";

const DAY = 86400000;
/** The per-day chart reads one report per day: at most this many days. */
const MAX_DAYS = 62;
/** Accounts drawn as their own line; the rest are summed as "others". */
const TOP_ACCOUNTS = 8;
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#e377c2", "#8c564b", "#7f7f7f"];

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
          <Daily startDay={startDay} endDay={endDay} />
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

/** GPU-hours per UTC day by account over the window: one report per day (read from the
 * daily rollups), the largest accounts as their own lines and the rest as "others", with
 * the numbers in a table. */
function Daily({ startDay, endDay }: { startDay: string; endDay: string }) {
  const [days, setDays] = useState<{ day: string; report: UsageReport }[] | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    let gone = false;
    setDays(null);
    setNote(null);
    const first = Date.parse(`${startDay}T00:00:00Z`);
    const count = Math.round((Date.parse(`${endDay}T00:00:00Z`) - first) / DAY) + 1;
    if (count < 1 || count > MAX_DAYS) {
      setNote(`The per-day chart covers windows of 1 to ${MAX_DAYS} days.`);
      return;
    }
    const list = Array.from({ length: count }, (_, i) => day(first + i * DAY));
    void Promise.all(
      list.map((d) =>
        api.GET("/v1/usage", {
          params: {
            query: {
              start: `${d}T00:00:00Z`,
              end: new Date(Date.parse(`${d}T00:00:00Z`) + DAY).toISOString(),
              group_by: "account",
              tres: "gres/gpu",
              unit: "hours",
            },
          },
        }),
      ),
    ).then((answers) => {
      if (gone) return;
      const bad = answers.find((a) => !a.data);
      if (bad) setNote(problemText(bad.error, bad.response.status));
      else setDays(answers.map((a, i) => ({ day: list[i]!, report: a.data! })));
    });
    return () => {
      gone = true;
    };
  }, [startDay, endDay]);

  // Accounts by total, the largest first; the rest summed.
  const totals = new Map<string, number>();
  for (const d of days ?? []) for (const r of d.report.rows) totals.set(r.account ?? "", (totals.get(r.account ?? "") ?? 0) + (r.tres["gres/gpu"] ?? 0));
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([a]) => a);
  const shown = ranked.slice(0, TOP_ACCOUNTS);
  const others = ranked.length > TOP_ACCOUNTS;
  const names = others ? [...shown, "others"] : shown;
  const perDay = (days ?? []).map((d) => {
    const v = new Map<string, number>();
    for (const r of d.report.rows) {
      const name = shown.includes(r.account ?? "") ? (r.account ?? "") : "others";
      v.set(name, (v.get(name) ?? 0) + (r.tres["gres/gpu"] ?? 0));
    }
    return names.map((n) => v.get(n) ?? 0);
  });
  const shape = `${startDay}/${endDay}/${names.join("|")}/${perDay.flat().join(",")}`;

  useEffect(() => {
    const el = box.current;
    if (!el || !days || names.length === 0) return;
    const ink = getComputedStyle(el).color;
    const grid = "rgba(128,128,128,0.25)";
    const value = (_u: uPlot, v: number | null) => (v == null ? "–" : `${hours(v)} GPU-h`);
    const plot = new uPlot(
      {
        width: Math.max(300, el.clientWidth || 600),
        height: 220,
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max, 0.01)] } },
        axes: [
          { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid } },
          { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid }, label: "GPU-hours", size: 60 },
        ],
        series: [
          { label: "Day" },
          ...names.map((n, i) => ({ label: n || "–", stroke: COLOURS[i % COLOURS.length]!, width: 2, value })),
        ],
      },
      [days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000), ...names.map((_, j) => perDay.map((row) => row[j]!))],
      el,
    );
    return () => plot.destroy();
  }, [shape]);

  return (
    <figure class="chart" id="by-day">
      <figcaption>GPU-hours per day by account (UTC days)</figcaption>
      {note && <p class="muted">{note}</p>}
      {!note && !days && <p aria-busy="true">Loading the days…</p>}
      {days && names.length === 0 && <p class="muted">No GPU use in this window.</p>}
      <div ref={box} class="plot" hidden={!days || names.length === 0} />
      {days && names.length > 0 && (
        <details>
          <summary>The numbers</summary>
          <table class="grid compact">
            <thead>
              <tr>
                <th scope="col">Day</th>
                {names.map((n) => (
                  <th scope="col" key={n}>
                    {n || "–"}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {days.map((d, i) => (
                <tr key={d.day}>
                  <th scope="row">{d.day}</th>
                  {perDay[i]!.map((v, j) => (
                    <td key={j}>{hours(v)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </figure>
  );
}
