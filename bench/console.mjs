// The web console's benchmarks (issue 14), run by bench/console.sh against a `berth dev`
// cluster; on demand only, never in CI or as tests.
//
//   node bench/console.mjs bundle                 # console/dist gzipped
//   node bench/console.mjs seed-jobs              # BERTH_URL, BERTH_TOKEN; JOBS, ACTIVE
//   node bench/console.mjs queue                  # first meaningful paint of /queue; RUNS
//   node bench/console.mjs nodes                  # 1,000 GPUs on /nodes; NODES, GPUS_PER_NODE
//
// Everything goes through the public REST api, as the console and the workers do: jobs
// are submitted one by one (POST /v1/jobs) and the older ones cancelled in batches
// (POST /v1/jobs/cancel); nodes register (POST /v1/nodes/register) and report GPU samples
// (POST /v1/nodes/{name}/sync) as workers do. Chromium is Debian's /usr/bin/chromium
// driven by playwright-core from console/node_modules (as console/tests/e2e.mjs).
// Results are printed as JSON lines (`{"bench": …}`) after the human-readable lines.

import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gzipSync, constants as zlib } from "node:zlib";

const require = createRequire(new URL("../console/package.json", import.meta.url));
const BERTH_URL = (process.env.BERTH_URL ?? "").replace(/\/+$/, "");
const BERTH_TOKEN = process.env.BERTH_TOKEN ?? "";
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];
const mode = process.argv[2];

function need(...names) {
  for (const n of names) {
    if (!process.env[n]) {
      console.error(`console.mjs ${mode}: set ${n}`);
      process.exit(2);
    }
  }
}

function result(bench, values) {
  console.log(JSON.stringify({ bench, ...values }));
}

/** Quantile of sorted-or-not numbers (nearest rank). */
function q(xs, p) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}
const r1 = (x) => (x == null ? null : Math.round(x * 10) / 10);

async function rest(method, path, body, token = BERTH_TOKEN) {
  const res = await fetch(`${BERTH_URL}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** Runs `work(i)` for i in 0..n with `width` in flight. */
async function pool(n, width, work) {
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, n) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await work(i);
    }
  });
  await Promise.all(lanes);
}

// ---------------------------------------------------------------------------------------
// 2. The bundle: every file of console/dist, gzipped (level 9 and the default 6).

function bundle() {
  const root = new URL("../console/dist/", import.meta.url).pathname;
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = `${dir}${name}`;
      if (statSync(p).isDirectory()) walk(`${p}/`);
      else files.push(p);
    }
  };
  walk(root);
  let raw = 0;
  let gz9 = 0;
  let gz6 = 0;
  for (const f of files.sort()) {
    const data = readFileSync(f);
    const a = gzipSync(data, { level: 9 }).length;
    const b = gzipSync(data, { level: zlib.Z_DEFAULT_COMPRESSION }).length;
    raw += data.length;
    gz9 += a;
    gz6 += b;
    console.log(`${f.slice(root.length).padEnd(20)} ${String(data.length).padStart(8)} B  gzip -9 ${String(a).padStart(7)} B  gzip -6 ${String(b).padStart(7)} B`);
  }
  console.log(`total: ${raw} B raw, ${gz9} B gzip -9 (${(gz9 / 1024).toFixed(1)} KiB), ${gz6} B gzip -6; target 300 KB`);
  result("bundle", { files: files.length, raw_bytes: raw, gzip9_bytes: gz9, gzip6_bytes: gz6, target_bytes: 300_000, pass: gz9 <= 300_000 && gz6 <= 300_000 });
}

// ---------------------------------------------------------------------------------------
// Seeding: JOBS jobs by POST /v1/jobs, of which all but the newest ACTIVE are then
// cancelled (a long-lived cluster's history: ended jobs first, the active ones last).
// The active ones stay PENDING and never start: half held (JobHeldUser), half with a
// begin time a month away (BeginTime), so the dev cluster's scheduler cannot place them.

async function seedJobs() {
  need("BERTH_URL", "BERTH_TOKEN");
  const total = Number(process.env.JOBS ?? 100000);
  const active = Number(process.env.ACTIVE ?? 10000);
  const width = Number(process.env.SEED_WIDTH ?? 8);
  const ended = total - active;
  const t0 = performance.now();
  const ids = new Array(total);
  let done = 0;
  await pool(total, width, async (i) => {
    const gpus = [0, 1, 1, 2, 4, 8][i % 6];
    const spec = {
      job_name: `bench-${i % 7 === 0 ? "train" : i % 7 === 1 ? "eval" : "sweep"}-${i}`,
      time_limit: 60 * (30 + (i % 480)),
    };
    if (i >= ended) {
      if (i % 2 === 0) spec.hold = true;
      else spec.begin = "now+30days";
    } else {
      spec.hold = true;
    }
    const script = `#!/bin/bash\n#SBATCH --gres=gpu:${gpus}\n#SBATCH --cpus-per-task=${1 + (i % 8)}\npython train.py --seed ${i}\n`;
    const { id } = await rest("POST", "/v1/jobs", { script, script_name: "train.sbatch", spec });
    ids[i] = id;
    if (++done % 10000 === 0) console.log(`  submitted ${done} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  });
  const submitted = (performance.now() - t0) / 1000;
  console.log(`submitted ${total} jobs in ${submitted.toFixed(1)} s (${(total / submitted).toFixed(0)}/s)`);
  const t1 = performance.now();
  const batches = [];
  for (let i = 0; i < ended; i += 1000) batches.push(ids.slice(i, Math.min(ended, i + 1000)).map(String));
  await pool(batches.length, 2, async (b) => {
    const out = await rest("POST", "/v1/jobs/cancel", { jobs: batches[b] });
    const bad = out.items.filter((x) => x.status >= 300);
    if (bad.length) throw new Error(`cancel: ${JSON.stringify(bad[0])}`);
  });
  const cancelled = (performance.now() - t1) / 1000;
  console.log(`cancelled ${ended} jobs in ${cancelled.toFixed(1)} s; ${active} stay PENDING (ids ${ids[ended]}..${ids[total - 1]})`);
  result("seed-jobs", { jobs: total, active, submit_s: r1(submitted), submit_per_s: Math.round(total / submitted), cancel_s: r1(cancelled) });
}

// ---------------------------------------------------------------------------------------
// Browser helpers.

async function launch() {
  const { chromium } = require("playwright-core");
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A fresh context (empty HTTP cache) whose tab already holds the token, as after a
 * log-in and a reload (the console keeps it in sessionStorage), with the page's
 * performance observers installed before any of its scripts run. */
async function freshPage(browser, { bypassCSP = false } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP });
  await context.addInitScript(
    ({ token }) => {
      sessionStorage.setItem("berth.token", token);
      const b = (window.__bench = { fcp: null, lcp: [], longtasks: [], frames: [], loafs: [], nodeAnswers: [], rows: null, rowsPainted: null });
      // When each GET /v1/nodes answers (headers in; the body is read by the page).
      const fetch0 = window.fetch;
      window.fetch = async function (input, init) {
        const url = new URL(input instanceof Request ? input.url : String(input), location.href);
        const start = performance.now();
        const res = await fetch0.call(this, input, init);
        if (url.pathname === "/v1/nodes") b.nodeAnswers.push({ start, answered: performance.now() });
        return res;
      };
      const obs = (type, f) => {
        try {
          new PerformanceObserver((l) => l.getEntries().forEach(f)).observe({ type, buffered: true });
        } catch {}
      };
      obs("paint", (e) => {
        if (e.name === "first-contentful-paint") b.fcp = e.startTime;
      });
      obs("largest-contentful-paint", (e) => b.lcp.push({ t: e.startTime, size: e.size, tag: e.element?.tagName ?? null, id: e.element?.closest?.("[id]")?.id ?? null }));
      obs("longtask", (e) => b.longtasks.push({ t: e.startTime, d: e.duration }));
      // Long animation frames (over 50 ms): how much was script and how much style and
      // layout (from styleAndLayoutStart to the frame's end), and which scripts.
      obs("long-animation-frame", (e) =>
        b.loafs.push({
          t: e.startTime,
          d: e.duration,
          blocking: e.blockingDuration,
          styleLayout: e.styleAndLayoutStart ? e.startTime + e.duration - e.styleAndLayoutStart : 0,
          render: e.renderStart ? e.startTime + e.duration - e.renderStart : 0,
          scripts: e.scripts.map((x) => ({ invoker: x.invoker, fn: x.sourceFunctionName, d: x.duration, forced: x.forcedStyleAndLayoutDuration })),
        }),
      );
      // The queue's first row of jobs in the DOM, and the frame that first shows it.
      const mo = new MutationObserver(() => {
        if (b.rows === null && document.querySelector('#queue tbody tr a[href^="/jobs/"]')) {
          b.rows = performance.now();
          requestAnimationFrame(() => requestAnimationFrame((t) => (b.rowsPainted = t)));
          mo.disconnect();
        }
      });
      mo.observe(document, { childList: true, subtree: true });
    },
    { token: BERTH_TOKEN },
  );
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  return { context, page, errors };
}

// ---------------------------------------------------------------------------------------
// 1. First meaningful paint of the Queue: navigation start → the first frame that shows
// the table's job rows (rows in the DOM, then two animation frames), in a fresh context
// each run (no HTTP cache; the token already in the tab, as after a reload).

async function queue() {
  need("BERTH_URL", "BERTH_TOKEN");
  const runs = Number(process.env.RUNS ?? 10);
  const scenarios = [
    ["active (default view)", "/queue"],
    ["all states", "/queue?state=all"],
    ["name filter", "/queue?name=bench-train-7&state=all"],
    ["user filter", `/queue?user=${encodeURIComponent(process.env.BENCH_USER ?? "root")}`],
  ];
  // How big the database is, through the api (admin view).
  const browser = await launch();
  try {
    for (const [label, path] of scenarios) {
      const samples = [];
      for (let run = 0; run <= runs; run++) {
        const { context, page, errors } = await freshPage(browser);
        await page.goto(`${BERTH_URL}${path}`);
        await page.waitForFunction(() => window.__bench.rowsPainted !== null, null, { timeout: 30000 });
        await page.waitForTimeout(200); // let LCP settle
        const m = await page.evaluate(() => {
          const nav = performance.getEntriesByType("navigation")[0];
          const res = performance.getEntriesByType("resource").map((r) => ({ name: new URL(r.name).pathname + new URL(r.name).search, start: r.startTime, end: r.responseEnd }));
          const b = window.__bench;
          return {
            fcp: b.fcp,
            lcp: b.lcp.at(-1) ?? null,
            rows: b.rows,
            painted: b.rowsPainted,
            doc: nav.responseEnd,
            dcl: nav.domContentLoadedEventEnd,
            jobs: res.find((r) => r.name.startsWith("/v1/jobs")) ?? null,
            whoami: res.find((r) => r.name.startsWith("/v1/whoami")) ?? null,
            js: res.find((r) => r.name.startsWith("/assets/app.js")) ?? null,
            rowCount: document.querySelectorAll("#queue tbody tr").length,
            longtasks: b.longtasks,
          };
        });
        await context.close();
        if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
        const s = {
          fmp: m.painted,
          rows: m.rows,
          fcp: m.fcp,
          lcp: m.lcp?.t ?? null,
          doc: m.doc,
          js_end: m.js?.end ?? null,
          api_start: m.jobs?.start ?? null,
          api_ms: m.jobs ? m.jobs.end - m.jobs.start : null,
          rows_shown: m.rowCount,
          longest_task: Math.max(0, ...m.longtasks.map((t) => t.d)),
        };
        if (run === 0) {
          console.log(`${label}: warm-up run (not counted) fmp ${r1(s.fmp)} ms`);
          continue;
        }
        samples.push(s);
      }
      const col = (k) => samples.map((s) => s[k]).filter((x) => x != null);
      const summary = {};
      for (const k of ["fmp", "rows", "fcp", "lcp", "doc", "js_end", "api_start", "api_ms", "longest_task"]) {
        summary[k] = { p50: r1(q(col(k), 0.5)), p90: r1(q(col(k), 0.9)), max: r1(Math.max(...col(k))) };
      }
      console.log(
        `${label} (${path}): first meaningful paint p50 ${summary.fmp.p50} ms, p90 ${summary.fmp.p90} ms, max ${summary.fmp.max} ms over ${samples.length} cold loads; ` +
          `GET /v1/jobs p50 ${summary.api_ms.p50} ms (sent at ${summary.api_start.p50} ms); FCP p50 ${summary.fcp.p50} ms; LCP p50 ${summary.lcp.p50} ms; ${samples[0].rows_shown} rows`,
      );
      result("queue", { scenario: label, path, runs: samples.length, ...summary, rows_shown: samples[0].rows_shown, target_ms: 1000, pass: summary.fmp.max <= 1000 });
    }
  } finally {
    await browser.close();
  }
}

// ---------------------------------------------------------------------------------------
// 3. The Nodes page with NODES × GPUS_PER_NODE GPUs whose samples change: registered and
// synced through the api as workers do. The page re-reads /v1/nodes every 15 s by itself
// and on `berth.node.*` events; phase "timer" lets the 15 s refresh run, phase "events"
// also drains and resumes one node every EVENT_EVERY_MS (each raises an event, so the
// page reloads every node). Long tasks (PerformanceObserver `longtask`) and animation
// frame gaps are recorded throughout.

function gpuSample(node, index, t) {
  // A smooth, different wave per GPU: every sample differs from the last one.
  const phase = (node * 8 + index) * 0.7;
  const util = Math.max(0, Math.min(100, Math.round(50 + 45 * Math.sin(t / 9 + phase) + ((node * 31 + index * 17 + Math.floor(t)) % 7))));
  return { index, utilization_pct: util, memory_used_mib: Math.round(81559 * (util / 100) * 0.9), power_w: 80 + 6 * util, temperature_c: 35 + Math.round(util / 2) };
}

async function nodes() {
  need("BERTH_URL", "BERTH_TOKEN");
  const count = Number(process.env.NODES ?? 125);
  const perNode = Number(process.env.GPUS_PER_NODE ?? 8);
  const syncEvery = Number(process.env.SYNC_EVERY_MS ?? 5000);
  const timerSeconds = Number(process.env.TIMER_SECONDS ?? 62);
  const eventSeconds = Number(process.env.EVENT_SECONDS ?? 30);
  const eventEvery = Number(process.env.EVENT_EVERY_MS ?? 2000);
  const names = Array.from({ length: count }, (_, i) => `gpu${String(i + 1).padStart(3, "0")}`);

  const tReg = performance.now();
  await pool(count, 8, async (i) =>
    rest("POST", "/v1/nodes/register", {
      name: names[i],
      hostname: `${names[i]}.bench`,
      cpus: 96,
      memory_mib: 1024 * 1024,
      features: ["h100"],
      gpus: Array.from({ length: perNode }, (_, g) => ({ index: g, uuid: `GPU-bench-${i}-${g}`, model: "NVIDIA H100 80GB HBM3", memory_mib: 81559, domain: g < perNode / 2 ? 0 : 1 })),
    }),
  );
  console.log(`registered ${count} nodes × ${perNode} GPUs in ${((performance.now() - tReg) / 1000).toFixed(1)} s`);

  // The workers: each node syncs every `syncEvery` ms (staggered) with fresh samples.
  let syncing = true;
  const syncTimes = [];
  const t0 = performance.now();
  const sync = async (i) => {
    const t = (performance.now() - t0) / 1000;
    const samples = Array.from({ length: perNode }, (_, g) => gpuSample(i, g, t));
    const s = performance.now();
    await rest("POST", `/v1/nodes/${names[i]}/sync`, { samples, wait_seconds: 0 });
    syncTimes.push(performance.now() - s);
  };
  await pool(count, 8, sync); // first samples for every GPU before the page opens
  const workers = names.map((_, i) =>
    (async () => {
      await new Promise((r) => setTimeout(r, (syncEvery * i) / count));
      while (syncing) {
        const started = performance.now();
        try {
          await sync(i);
        } catch (e) {
          console.error(`sync ${names[i]}: ${e.message}`);
        }
        await new Promise((r) => setTimeout(r, Math.max(0, syncEvery - (performance.now() - started))));
      }
    })(),
  );

  const browser = await launch();
  try {
    // NODES_CSS: a what-if only (never the default): extra CSS for the page, injected
    // with the page's CSP bypassed, to try a proposed fix without rebuilding the console.
    const extraCss = process.env.NODES_CSS ?? "";
    const { context, page, errors } = await freshPage(browser, { bypassCSP: extraCss !== "" });
    const nodeLoads = [];
    page.on("response", (r) => {
      if (new URL(r.url()).pathname === "/v1/nodes") nodeLoads.push(Date.now());
    });
    const tNav = performance.now();
    await page.goto(`${BERTH_URL}/nodes`);
    await page.waitForFunction((n) => document.querySelectorAll("#nodes ul.gpus li").length >= n, count * perNode, { timeout: 60000 });
    const firstPaint = performance.now() - tNav;
    if (extraCss) {
      await page.addStyleTag({ content: extraCss });
      console.log(`what-if: extra CSS ${JSON.stringify(extraCss)}`);
    }
    const cells = await page.locator("#nodes ul.gpus li").count();
    console.log(`/nodes shows ${cells} GPU cells after ${firstPaint.toFixed(0)} ms`);

    // In the page: frame gaps, long tasks, and per reload the time from the api's answer
    // (the fetch resolving; the init script wraps fetch) to the frame that shows the new
    // numbers, and how many cells changed.
    await page.evaluate(() => {
      const b = window.__bench;
      b.frames = [];
      b.longtasks = [];
      b.updates = [];
      b.measuring = true;
      let last = null;
      const frame = (t) => {
        if (last !== null) b.frames.push({ t, gap: t - last });
        last = t;
        if (b.measuring) requestAnimationFrame(frame);
      };
      requestAnimationFrame(frame);
      const text = () => Array.from(document.querySelectorAll("#nodes ul.gpus li"), (li) => li.textContent);
      let before = text();
      let seen = b.nodeAnswers.length;
      new MutationObserver(() => {
        if (b.nodeAnswers.length === seen) return;
        const answer = b.nodeAnswers[b.nodeAnswers.length - 1];
        seen = b.nodeAnswers.length;
        const changedAt = performance.now();
        requestAnimationFrame(() =>
          requestAnimationFrame((shown) =>
            setTimeout(() => {
              const after = text();
              const changed = after.filter((v, i) => v !== before[i]).length;
              before = after;
              b.updates.push({ answered: answer.answered, changedAt, shown, changed, fetch: answer.answered - answer.start });
            }, 0),
          ),
        );
      }).observe(document.querySelector("#nodes"), { subtree: true, childList: true, characterData: true });
    });

    const phase = async (label, seconds, drive) => {
      await page.evaluate(() => {
        const b = window.__bench;
        b.frames = [];
        b.longtasks = [];
        b.loafs = [];
        b.updates = [];
      });
      const loads0 = nodeLoads.length;
      const tPhase = performance.now();
      await drive(seconds);
      const m = await page.evaluate(() => {
        const b = window.__bench;
        return { frames: b.frames, longtasks: b.longtasks, loafs: b.loafs, updates: b.updates };
      });
      const elapsed = (performance.now() - tPhase) / 1000;
      const gaps = m.frames.map((f) => f.gap);
      const lt = m.longtasks.map((t) => t.d);
      const upd = m.updates.map((u) => u.shown - u.answered);
      const summary = {
        phase: label,
        seconds: r1(elapsed),
        reloads: nodeLoads.length - loads0,
        updates_seen: m.updates.length,
        cells_changed_p50: q(m.updates.map((u) => u.changed), 0.5),
        update_ms: { p50: r1(q(upd, 0.5)), max: r1(Math.max(0, ...upd)) },
        fetch_ms: { p50: r1(q(m.updates.map((u) => u.fetch), 0.5)), max: r1(Math.max(0, ...m.updates.map((u) => u.fetch))) },
        frames: gaps.length,
        frame_ms: { p50: r1(q(gaps, 0.5)), p95: r1(q(gaps, 0.95)), p99: r1(q(gaps, 0.99)), max: r1(Math.max(0, ...gaps)) },
        frames_over_33ms: gaps.filter((g) => g > 33.4).length,
        frames_over_50ms: gaps.filter((g) => g > 50).length,
        longtasks: lt.length,
        longtask_max_ms: r1(Math.max(0, ...lt)),
        total_blocking_ms: r1(lt.reduce((s, d) => s + Math.max(0, d - 50), 0)),
        long_frames: m.loafs.length,
        long_frame_max_ms: r1(Math.max(0, ...m.loafs.map((f) => f.d))),
        // Over all long animation frames: time in scripts, and in style and layout.
        long_frames_script_ms: r1(m.loafs.reduce((s, f) => s + f.scripts.reduce((a, x) => a + x.d, 0), 0)),
        long_frames_style_layout_ms: r1(m.loafs.reduce((s, f) => s + f.styleLayout, 0)),
        long_frames_total_ms: r1(m.loafs.reduce((s, f) => s + f.d, 0)),
      };
      console.log(
        `${label}: ${summary.reloads} reloads of /v1/nodes in ${summary.seconds} s (${summary.cells_changed_p50} of ${cells} cells changed per update, p50); ` +
          `answer → frame shown p50 ${summary.update_ms.p50} ms, max ${summary.update_ms.max} ms; ` +
          `${summary.frames} frames, gap p50 ${summary.frame_ms.p50} / p95 ${summary.frame_ms.p95} / p99 ${summary.frame_ms.p99} / max ${summary.frame_ms.max} ms, ` +
          `${summary.frames_over_50ms} over 50 ms; ${summary.longtasks} long tasks (max ${summary.longtask_max_ms} ms, blocking ${summary.total_blocking_ms} ms); ` +
          `${summary.long_frames} long animation frames (max ${summary.long_frame_max_ms} ms; of their ${summary.long_frames_total_ms} ms, scripts ${summary.long_frames_script_ms} ms, style and layout ${summary.long_frames_style_layout_ms} ms)`,
      );
      for (const f of m.loafs) {
        const top = f.scripts.sort((a, b) => b.d - a.d)[0];
        console.log(`  long frame ${r1(f.d)} ms: style+layout ${r1(f.styleLayout)} ms, scripts ${r1(f.scripts.reduce((a, x) => a + x.d, 0))} ms${top ? ` (longest: ${top.invoker} ${r1(top.d)} ms)` : ""}`);
      }
      result("nodes", { nodes: count, gpus: count * perNode, sync_every_ms: syncEvery, ...summary, long_task_durations_ms: lt.map(r1) });
    };

    await phase("timer (15 s refresh)", timerSeconds, (s) => page.waitForTimeout(s * 1000));
    await phase(`events (a drain or resume every ${eventEvery} ms)`, eventSeconds, async (s) => {
      const end = performance.now() + s * 1000;
      let k = 0;
      while (performance.now() < end) {
        const name = names[Math.floor(k / 2) % count];
        if (k % 2 === 0) await rest("POST", `/v1/nodes/${name}/drain`, { reason: "bench: drain and resume" });
        else await rest("POST", `/v1/nodes/${name}/resume`);
        k++;
        await page.waitForTimeout(eventEvery);
      }
      // Leave every node resumed.
      if (k % 2 === 1) await rest("POST", `/v1/nodes/${names[Math.floor((k - 1) / 2) % count]}/resume`);
    });
    // A Chromium trace of one 15 s reload (TRACE=0 skips it): the renderer main thread's
    // tasks over one frame (16.7 ms), wall against CPU time, and their self time by name.
    if (process.env.TRACE !== "0") {
      await browser.startTracing(page, { categories: ["toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink"] });
      const n0 = nodeLoads.length;
      const until = performance.now() + 20000;
      while (nodeLoads.length === n0 && performance.now() < until) await page.waitForTimeout(100);
      await page.waitForTimeout(1500);
      const buf = await browser.stopTracing();
      if (process.env.TRACE_OUT) writeFileSync(process.env.TRACE_OUT, buf);
      traceSummary(JSON.parse(buf.toString()));
    }
    await page.evaluate(() => (window.__bench.measuring = false));
    await context.close();
    if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  } finally {
    syncing = false;
    await Promise.all(workers);
    await browser.close();
  }
  console.log(`node syncs: ${syncTimes.length}, p50 ${r1(q(syncTimes, 0.5))} ms, max ${r1(Math.max(...syncTimes))} ms`);
}

/** Prints the long tasks of the busiest renderer main thread in a Chromium trace, and
 * where their time went (self time by event name, wall and thread CPU). */
function traceSummary(trace) {
  const events = trace.traceEvents ?? trace;
  const mains = new Set(events.filter((e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`));
  const byThread = new Map();
  for (const e of events) {
    const k = `${e.pid}:${e.tid}`;
    if (e.ph !== "X" || !mains.has(k)) continue;
    if (!byThread.has(k)) byThread.set(k, []);
    byThread.get(k).push(e);
  }
  let main = [];
  for (const list of byThread.values()) if (list.reduce((s, e) => s + (e.dur ?? 0), 0) > main.reduce((s, e) => s + (e.dur ?? 0), 0)) main = list;
  main.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  // Top-level tasks only (a RunTask may wrap a ThreadControllerImpl::RunTask).
  const tasks = [];
  for (const e of main) {
    if ((e.name !== "RunTask" && e.name !== "ThreadControllerImpl::RunTask") || !(e.dur > 16700)) continue;
    const outer = tasks.at(-1);
    if (outer && e.ts >= outer.ts && e.ts + e.dur <= outer.ts + outer.dur) continue;
    tasks.push(e);
  }
  const self = new Map();
  for (const task of tasks) {
    const inside = main.filter((e) => e.ts >= task.ts && e.ts + (e.dur ?? 0) <= task.ts + task.dur);
    const stack = [];
    const add = (e, wall, cpu) => {
      const s0 = self.get(e.name) ?? { wall: 0, cpu: 0 };
      s0.wall += wall;
      s0.cpu += cpu;
      self.set(e.name, s0);
    };
    const node = (e) => ({ e, childWall: 0, childCpu: 0 });
    const close = (n) => {
      add(n.e, (n.e.dur ?? 0) - n.childWall, (n.e.tdur ?? 0) - n.childCpu);
      const parent = stack.at(-1);
      if (parent) {
        parent.childWall += n.e.dur ?? 0;
        parent.childCpu += n.e.tdur ?? 0;
      }
    };
    for (const e of inside) {
      while (stack.length && e.ts >= stack.at(-1).e.ts + (stack.at(-1).e.dur ?? 0)) close(stack.pop());
      stack.push(node(e));
    }
    while (stack.length) close(stack.pop());
    console.log(`  trace: task ${(task.dur / 1000).toFixed(1)} ms wall, ${((task.tdur ?? 0) / 1000).toFixed(1)} ms CPU`);
  }
  const top = [...self.entries()].sort((a, b) => b[1].wall - a[1].wall).slice(0, 12);
  console.log(`  trace: ${tasks.length} renderer tasks over one frame (16.7 ms); self time by event (wall / CPU ms):`);
  for (const [name, t] of top) console.log(`    ${name.padEnd(36)} ${(t.wall / 1000).toFixed(1).padStart(7)} / ${(t.cpu / 1000).toFixed(1).padStart(7)}`);
  result("nodes-trace", { long_tasks: tasks.map((t) => ({ wall_ms: r1(t.dur / 1000), cpu_ms: r1((t.tdur ?? 0) / 1000) })), self_ms: Object.fromEntries(top.map(([n, t]) => [n, { wall: r1(t.wall / 1000), cpu: r1(t.cpu / 1000) }])) });
}

const modes = { bundle, "seed-jobs": seedJobs, queue, nodes };
if (!modes[mode]) {
  console.error(`usage: node bench/console.mjs ${Object.keys(modes).join("|")}`);
  process.exit(2);
}
await modes[mode]();
