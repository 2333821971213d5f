// The cluster's GPUs over the last 24 hours (`GET /v1/usage/cluster/timeline`), for the
// overview: GPUs in the cluster, allocated and down (left axis), and the mean utilisation
// of the GPUs jobs held (right axis, percent). Re-read every minute while shown (the
// scheduler samples GPU states once a minute). The latest values are also given as text.

import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { api, problemText, type ClusterTimeline } from "./client";
import { usePolling } from "./ui";

const REFRESH_MS = 60000;

export function Timeline() {
  const [timeline, setTimeline] = useState<ClusterTimeline | null>(null);
  const [error, setError] = useState<string | null>(null);
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  /** The window shown: the x axis spans it, whatever part of it has samples. */
  const span = useRef<[number, number]>([0, 1]);

  usePolling(
    async (live) => {
      const { data, error: problem, response } = await api.GET("/v1/usage/cluster/timeline", { params: { query: {} } });
      if (!live()) return;
      if (data) {
        setError(null);
        setTimeline(data);
      } else setError(problemText(problem, response.status));
    },
    REFRESH_MS,
    [],
  );

  const data: uPlot.AlignedData | null = timeline
    ? [
        timeline.points.map((p) => Date.parse(p.time) / 1000),
        timeline.points.map((p) => p.gpus_total),
        timeline.points.map((p) => p.gpus_allocated),
        timeline.points.map((p) => p.gpus_down + p.gpus_planned_down),
        timeline.points.map((p) => p.utilization_pct ?? null),
      ]
    : null;
  const hasPoints = (timeline?.points.length ?? 0) > 0;

  useEffect(() => {
    const el = box.current;
    if (!el || !data || !hasPoints || !timeline) return;
    span.current = [Date.parse(timeline.start) / 1000, Date.parse(timeline.end) / 1000];
    if (plot.current) {
      plot.current.setData(data);
      return;
    }
    const ink = getComputedStyle(el).color;
    const grid = "rgba(128,128,128,0.25)";
    const gpus = (_u: uPlot, v: number | null) => (v == null ? "–" : `${v.toFixed(1)} GPUs`);
    plot.current = new uPlot(
      {
        width: Math.max(300, el.clientWidth || 600),
        height: 200,
        scales: { x: { time: true, range: () => span.current }, pct: { range: [0, 100] } },
        axes: [
          { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid } },
          { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid }, label: "GPUs", size: 50 },
          { stroke: ink, scale: "pct", side: 1, grid: { show: false }, label: "%", size: 50 },
        ],
        series: [
          { label: "Time" },
          { label: "GPUs", stroke: "#888888", width: 1.5, value: gpus },
          { label: "Allocated", stroke: "#1f77b4", width: 2, fill: "rgba(31,119,180,0.15)", value: gpus },
          { label: "Down", stroke: "#d62728", width: 1.5, value: gpus },
          {
            label: "Utilisation",
            stroke: "#2ca02c",
            width: 1.5,
            scale: "pct",
            value: (_u: uPlot, v: number | null) => (v == null ? "–" : `${v.toFixed(0)} %`),
          },
        ],
      },
      data,
      el,
    );
    const resize = new ResizeObserver(() => {
      const w = Math.max(300, el.clientWidth);
      if (plot.current && Math.abs(plot.current.width - w) > 4) plot.current.setSize({ width: w, height: 200 });
    });
    resize.observe(el);
    return () => resize.disconnect();
  }, [timeline]);
  useEffect(() => () => plot.current?.destroy(), []);

  const last = timeline?.points[timeline.points.length - 1];
  return (
    <section aria-labelledby="timeline-title">
      <h2 id="timeline-title">GPUs over the last 24 hours</h2>
      {error && <p class="error">{error}</p>}
      {!timeline && !error && <p aria-busy="true">Loading…</p>}
      {timeline && !hasPoints && <p class="muted">No samples yet: the scheduler samples GPU states once a minute.</p>}
      <div ref={box} class="plot" id="cluster-timeline" hidden={!hasPoints} />
      {last && (
        <p class="hint" id="timeline-latest">
          Latest ({timeline.step_seconds / 60} min mean): {last.gpus_allocated.toFixed(1)} of {last.gpus_total.toFixed(1)} GPUs
          allocated, {(last.gpus_down + last.gpus_planned_down).toFixed(1)} down
          {last.utilization_pct != null ? `, allocated GPUs ${last.utilization_pct.toFixed(0)} % utilised` : ""}.
        </p>
      )}
    </section>
  );
}
