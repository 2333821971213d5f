// A job run's per-GPU utilisation, memory and power over time (`GET
// /v1/jobs/{id}/gpu-samples`), drawn with uPlot: one line per GPU, one chart per measure.
// GPU samples raise no events, so a running job's series are re-read every 15 s while the
// page is shown. Each chart has a text alternative: the latest value of every GPU.

import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { api, problemText, type JobGpuSamples } from "./client";
import { formatMiB } from "./format";
import { usePolling } from "./ui";

const REFRESH_MS = 15000;
/** Distinct line colours, readable on light and dark backgrounds. */
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#e377c2", "#8c564b"];

type Measure = "utilization_pct" | "memory_used_mib" | "power_w";
const MEASURES: { key: Measure; title: string; format: (v: number) => string }[] = [
  { key: "utilization_pct", title: "Utilisation", format: (v) => `${v.toFixed(0)} %` },
  { key: "memory_used_mib", title: "Memory in use", format: (v) => formatMiB(Math.round(v)) },
  { key: "power_w", title: "Power", format: (v) => `${v.toFixed(0)} W` },
];

export function GpuCharts({ id, running }: { id: number; running: boolean }) {
  const [samples, setSamples] = useState<JobGpuSamples | null>(null);
  const [error, setError] = useState<string | null>(null);

  usePolling(
    async (live) => {
      const { data, error: problem, response } = await api.GET("/v1/jobs/{id}/gpu-samples", {
        params: { path: { id }, query: { points: 360 } },
      });
      if (!live()) return;
      if (!data) {
        setError(problemText(problem, response.status));
        return;
      }
      setError(null);
      setSamples(data);
    },
    running ? REFRESH_MS : null,
    [id, running],
  );

  return (
    <section aria-labelledby="gpu-charts">
      <h2 id="gpu-charts">GPU use</h2>
      {error && <p class="error">{error}</p>}
      {!samples && !error && <p aria-busy="true">Loading GPU samples…</p>}
      {samples && samples.gpus.length === 0 && (
        <p class="muted">No GPU samples for this run{running ? " yet" : ""} (it holds no GPU, or no worker reported one).</p>
      )}
      {samples && samples.gpus.length > 0 && (
        <>
          <p class="hint">
            Run {samples.run}; each point is the mean of {samples.step_seconds} s of samples (memory: the highest).
          </p>
          <div class="charts">
            {MEASURES.map((m) => (
              <Chart key={m.key} samples={samples} measure={m} />
            ))}
          </div>
        </>
      )}
    </section>
  );
}

function Chart({ samples, measure }: { samples: JobGpuSamples; measure: (typeof MEASURES)[number] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const labels = samples.gpus.map((g) => `${g.node} GPU ${g.index}`);

  // One shared x axis: every bucket any GPU has (buckets are aligned, so they coincide).
  const times = [...new Set(samples.gpus.flatMap((g) => g.points.map((p) => Date.parse(p.time) / 1000)))].sort((a, b) => a - b);
  const columns = samples.gpus.map((g) => {
    const byTime = new Map(g.points.map((p) => [Date.parse(p.time) / 1000, p[measure.key]]));
    return times.map((t) => {
      const v = byTime.get(t);
      return v === undefined || v === null ? null : v;
    });
  });
  const data: uPlot.AlignedData = [times, ...columns];
  const shape = labels.join("|");

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const ink = getComputedStyle(el).color;
    const grid = "rgba(128,128,128,0.25)";
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth || 360),
      height: 180,
      legend: { show: true },
      scales: {
        // A lone point gets a window of a step either side, not uPlot's default of years.
        x: { time: true, range: (_u, min, max) => (min === max ? [min - samples.step_seconds, max + samples.step_seconds] : [min, max]) },
        // From 0, so that a flat line reads as what it is.
        y: { range: (_u, _min, max) => [0, measure.key === "utilization_pct" ? 100 : Math.max(max * 1.05, 1)] },
      },
      axes: [
        { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid } },
        {
          stroke: ink,
          grid: { stroke: grid },
          ticks: { stroke: grid },
          size: 76,
          values: (_u, vals) => vals.map((v) => (v == null ? "" : measure.format(v))),
        },
      ],
      series: [
        { label: "Time" },
        ...labels.map((label, i) => ({
          label,
          stroke: COLOURS[i % COLOURS.length]!,
          width: 1.5,
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v == null ? "–" : measure.format(v)),
        })),
      ],
    };
    plot.current?.destroy();
    plot.current = new uPlot(opts, data, el);
    const resize = new ResizeObserver(() => {
      const w = Math.max(280, el.clientWidth);
      if (plot.current && Math.abs(plot.current.width - w) > 4) plot.current.setSize({ width: w, height: 180 });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape, measure.key]);

  // New points for the same GPUs: swap the data without rebuilding the chart.
  useEffect(() => {
    plot.current?.setData(data);
  }, [samples]);

  const latest = samples.gpus.map((g, i) => {
    const last = [...g.points].reverse().find((p) => p[measure.key] != null);
    return { label: labels[i]!, value: last ? measure.format(last[measure.key] as number) : "–" };
  });

  return (
    <figure class="chart">
      <figcaption>{measure.title}</figcaption>
      <div ref={box} class="plot" />
      <details>
        <summary>Latest values</summary>
        <ul>
          {latest.map((l) => (
            <li key={l.label}>
              {l.label}: {l.value}
            </li>
          ))}
        </ul>
      </details>
    </figure>
  );
}
