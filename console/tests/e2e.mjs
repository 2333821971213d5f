// Browser test of the console (Playwright gives Chromium a fresh profile directory) in a real Chromium (playwright-core driving Debian's
// /usr/bin/chromium; Playwright's own browser download does not work here).
//
//   BERTH_URL=http://127.0.0.1:8080 BERTH_TOKEN=… node tests/e2e.mjs
//
// It submits a held job named like an HTML injection through the REST api, logs in by
// pasting the token, and checks that the queue shows the name as literal text: no <img>
// element, no alert, no Content-Security-Policy violation. Then it submits a script from
// the Submit page and watches its job reach COMPLETED without a reload, with its output,
// its batch script and, once over, its accounting; "Submit again" fills the form and
// makes another job; the form (a command and options) marks a refused field and then
// runs a job; a script with a bad `#SBATCH` line is marked on that line, with the error
// (its line number and text) below the editor and no text drawn over the script. It cancels
// a pending job (its queue position shown) from the Queue, reads a GPU job's utilisation,
// memory and power charts, tabs through each page looking for a visible focus ring, runs
// axe on every page (Overview, Queue, Job, Nodes, Partitions, QOS, Reservations, Submit,
// Usage, Accounts, Pools, Tokens, Audit; failing on serious or critical violations) and
// writes a 1280x800 screenshot of each to BERTH_SCREENSHOTS (a folder; scripts/test-console
// passes a scratch one, or console/screenshots/ with UPDATE_SCREENSHOTS=1). It also
// creates an API token on the Tokens page (read, never printed), checks it works for
// GET /v1/jobs and gets 401 after Revoke, and finds a short GPU job's hours on the Usage
// page and in its CSV export. With BERTH_OTHER_USER/BERTH_OTHER_TOKEN, a plain user of
// another account sees none of these jobs; with BERTH_OPERATOR_TOKEN, an operator drains a
// node, sees it DRAINED and resumes it; with BERTH_IDP (console/tests/idp.mjs), the other
// user logs in through the OpenID Connect issuer (authorization code + PKCE). The API
// reference, `/docs`, logged out: every operation of /openapi.json (all its paths) drawn
// once at its operation id's anchor, every component schema, every in-page link landing,
// types, `$ref`s, allOf/oneOf and descriptions as text, the filter, `/docs#job_create`;
// no CSP violation (`securitypolicyviolation` events and "Refused to …" messages, on
// every page, with a canary showing the watcher hears one), no serious axe violation, a
// screenshot. Exits non-zero on failure and cancels its job either way.

import { mkdirSync } from "node:fs";
import { AxeBuilder } from "@axe-core/playwright";
import { chromium } from "playwright-core";

const SCREENSHOTS = new URL(
  `${(process.env.BERTH_SCREENSHOTS ?? new URL("../screenshots/", import.meta.url).pathname).replace(/\/*$/, "")}/`,
  "file:///",
);

const BERTH_URL = (process.env.BERTH_URL ?? "").replace(/\/+$/, "");
const BERTH_TOKEN = process.env.BERTH_TOKEN ?? "";
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const NAME = "<img src=x onerror=alert(1)>";

if (!BERTH_URL || !BERTH_TOKEN) {
  console.error("e2e: set BERTH_URL and BERTH_TOKEN");
  process.exit(2);
}

/** Calls the REST api with the token (never printed). */
async function rest(method, path, body) {
  const res = await fetch(`${BERTH_URL}${path}`, {
    method,
    headers: { Authorization: `Bearer ${BERTH_TOKEN}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const failures = [];
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
}

const { id } = await rest("POST", "/v1/jobs", {
  script: "#!/bin/bash\ntrue\n",
  script_name: "e2e.sbatch",
  spec: { job_name: NAME, hold: true },
});
console.log(`submitted job ${id}`);
// A short GPU job, so the Usage page has GPU-hours to draw.
// It runs long enough for its worker to report GPU samples (every sync, ≤ 10 s apart).
const gpuJob = await rest("POST", "/v1/jobs", { script: "#!/bin/bash\n#SBATCH --gres=gpu:1\nsleep 15\n", script_name: "e2e-gpu.sh" });
console.log(`submitted GPU job ${gpuJob.id}`);

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const page = await context.newPage();
  const dialogs = [];
  const violations = [];
  const pageErrors = [];
  /** Confirmations the test means to answer yes to (Cancel asks first). */
  let confirmNext = 0;
  page.on("dialog", (d) => {
    if (confirmNext > 0 && d.type() === "confirm") {
      confirmNext--;
      void d.accept();
      return;
    }
    dialogs.push(d.message());
    void d.dismiss();
  });
  await watchPolicy(page, violations, "console");
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  const query = new URLSearchParams({ name: NAME, state: "all" });
  const response = await page.goto(`${BERTH_URL}/queue?${query}`);
  check(response?.ok() ?? false, "the api serves the console at /queue");
  const csp = response?.headers()["content-security-policy"] ?? "";
  check(/script-src 'self'/.test(csp) && !/unsafe-inline/.test(csp), "a strict Content-Security-Policy header");

  await page.fill("#token", BERTH_TOKEN);
  await page.click("button[type=submit]");
  await page.waitForSelector("#queue", { timeout: 15000 });
  check(!page.url().includes(BERTH_TOKEN), "the token is not in the URL");
  check(
    (await page.evaluate(() => sessionStorage.getItem("berth.token"))) === BERTH_TOKEN,
    "the token is kept in sessionStorage",
  );

  const row = page.locator("#queue tbody tr", { has: page.locator(`a[href="/jobs/${id}"]`) });
  await row.waitFor({ timeout: 15000 });
  const name = await row.locator("td.name").textContent();
  check(name === NAME, `job ${id}'s name is shown as literal text (${JSON.stringify(name)})`);
  check((await page.locator("#queue img").count()) === 0, "no <img> element in the queue");
  const reason = await row.locator("td").nth(7).textContent();
  check(reason === "Held by its user (JobHeldUser)" || reason === "Held by an operator (JobHeldAdmin)", `the reason in plain words (${JSON.stringify(reason)})`);

  await page.click(`a[href="/jobs/${id}"]`);
  await page.waitForSelector("#job-title");
  check((await page.locator("#job-title .name").textContent()) === NAME, "the job page shows the name as text");
  check((await page.locator("main img").count()) === 0, "no <img> element on the job page");

  // Submit from the form; the job page follows it to COMPLETED without a reload.
  await page.click('nav a[href="/submit"]');
  await page.waitForSelector("#script");
  await page.evaluate(() => {
    window.berthNoReload = true;
  });
  // Its output has ANSI colours (shown as colours) and a terminal-title sequence (shown
  // as visible characters, not obeyed).
  await page.fill("#script", "#!/bin/bash\necho hello\nsrun echo from-a-step\nprintf '\\033[1;31mred\\033[0m plain \\033]0;title\\007\\n'\nprintf 'progress 1\\rprogress 2\\rdone\\n'\n");
  await page.fill("input[name=script_name]", "e2e-hello.sh");
  await page.click("form.submit:not(.job-form) button[type=submit]");
  await page.waitForURL(/\/jobs\/\d+$/, { timeout: 15000 });
  const submitted = Number(new URL(page.url()).pathname.split("/").pop());
  check(Number.isInteger(submitted) && submitted > id, `the Submit page made job ${submitted} and went to its page`);
  await page.waitForFunction(() => document.querySelector("#job-title .state")?.textContent === "COMPLETED", null, {
    timeout: 60000,
  });
  check(await page.evaluate(() => window.berthNoReload === true), `job ${submitted} reached COMPLETED on its page without a reload`);
  check((await page.locator("#job-title .name").textContent()) === "e2e-hello.sh", "the job is named after its script");
  // Its timeline, filled in by the event stream while the page was open: submitted,
  // started (RUNNING), ended (COMPLETED). The page reads the job, then its events: the
  // state may show COMPLETED a moment before the timeline has its end.
  await page
    .waitForFunction(() => /ended \(/.test(document.querySelector("ol.timeline")?.textContent ?? ""), null, { timeout: 15000 })
    .catch(() => {});
  const steps = (await page.locator("ol.timeline li").allTextContents()).join(" | ");
  check(/submitted/.test(steps) && /started \(RUNNING\)/.test(steps) && /ended \(COMPLETED/.test(steps), `the job page's timeline shows it go from PENDING to RUNNING to COMPLETED (${JSON.stringify(steps)})`);
  await page.waitForFunction(() => document.querySelector("pre[role=log]")?.textContent?.includes("hello"), null, { timeout: 15000 });
  check(true, "its output shows hello");
  await page.waitForSelector("#steps tbody tr", { timeout: 15000 });
  const stepRow = (await page.locator("#steps tbody tr").first().textContent()) ?? "";
  check(new RegExp(`^${submitted}\\.0`).test(stepRow) && /echo from-a-step/.test(stepRow) && /COMPLETED/.test(stepRow), `the job page lists its srun step (${JSON.stringify(stepRow)})`);
  await page.waitForSelector("pre[role=log] span.a-b.a-f1", { timeout: 15000 });
  const red = await page.locator("pre[role=log] span.a-b.a-f1").textContent();
  const shown = (await page.locator("pre[role=log]").textContent()) ?? "";
  check(red === "red" && shown.includes("red plain \u241b]0;title\u2407"), `ANSI colours are shown as colours, other escapes as visible characters (${JSON.stringify(shown.split("\n").find((l) => l.includes("red")))})`);
  check(/\ndone(\n|$)/.test(shown) && !shown.includes("progress"), "a line rewritten after carriage returns (a progress bar) shows its last version");
  await page.waitForFunction(() => document.querySelector("pre.script")?.textContent?.includes("echo hello"), null, { timeout: 15000 });
  check(true, "the job page shows its batch script as text");
  // The accounting record is written by the scheduler shortly after the end.
  await page.waitForSelector("#accounting tbody tr", { timeout: 60000 });
  const acct = (await page.locator("#accounting tbody tr").first().textContent()) ?? "";
  check(/COMPLETED/.test(acct) && /exit 0/.test(acct), `the ended job's page shows its accounting (${JSON.stringify(acct)})`);

  // Submit again: the submit page comes filled in with the job's script and name.
  await page.click("button:text-is('Submit again')");
  await page.waitForURL(/\/submit\?from=\d+$/, { timeout: 15000 });
  await page.waitForFunction(() => document.querySelector("#script")?.value?.includes("echo hello"), null, { timeout: 15000 });
  check((await page.inputValue("input[name=script_name]")) === "e2e-hello.sh", "Submit again fills in the job's script and name");
  await page.click("form.submit:not(.job-form) button[type=submit]");
  await page.waitForURL(/\/jobs\/\d+$/, { timeout: 15000 });
  const again = Number(new URL(page.url()).pathname.split("/").pop());
  check(again > submitted, `Submit again made job ${again}`);
  await page.waitForFunction(() => document.querySelector("#job-title .state")?.textContent === "COMPLETED", null, { timeout: 60000 });
  check(true, `job ${again} (submitted again) completed`);

  // The form: a refused field is marked; then a command with a time limit runs.
  await page.click('nav a[href="/submit"]');
  await page.waitForSelector("#form-wrap");
  await page.fill("#form-wrap", "echo from-the-form");
  await page.fill('#form-submit input[name="partition"]', "nosuch");
  await page.click("#form-submit button[type=submit]");
  await page.waitForSelector('#form-submit input[name="partition"][aria-invalid="true"]', { timeout: 15000 });
  const fieldError = (await page.locator("#form-partition-error").textContent()) ?? "";
  check(/nosuch/.test(fieldError), `the form marks the refused partition with the api's message (${JSON.stringify(fieldError)})`);
  await page.fill('#form-submit input[name="partition"]', "");
  await page.fill('#form-submit input[name="time_limit"]', "5");
  await page.fill('#form-submit input[name="job_name"]', "e2e-form");
  await page.click("#form-submit button[type=submit]");
  await page.waitForURL(/\/jobs\/\d+$/, { timeout: 15000 });
  await page.waitForFunction(() => document.querySelector("#job-title .state")?.textContent === "COMPLETED", null, { timeout: 60000 });
  await page.waitForFunction(() => document.querySelector("pre[role=log]")?.textContent?.includes("from-the-form"), null, { timeout: 15000 });
  check((await page.locator("#job-title .name").textContent()) === "e2e-form", "a job from the form ran its command under its name");

  // A bad #SBATCH line: the api's problem is shown at that line (marked in the gutter,
  // a band behind it), its message below the editor, and nothing drawn over the script.
  await page.click('nav a[href="/submit"]');
  await page.waitForSelector("#script");
  const badLine = "#SBATCH --partition=batch --bogus-option-that-sbatch-does-not-know --time=10";
  await page.fill("#script", `#!/bin/bash\n#SBATCH -N 1\n${badLine}\necho hi\n`);
  await page.click("form.submit:not(.job-form) button[type=submit]");
  await page.waitForSelector("#submit-error", { timeout: 15000 });
  const bad = await page.locator(".editor .ln.bad").allTextContents();
  check(bad.length === 1 && bad[0] === "3", `the editor marks line 3 (${JSON.stringify(bad)})`);
  const message = (await page.locator("#submit-error p").first().textContent()) ?? "";
  check(/^Line 3: /.test(message) && message.includes("--bogus-option-that-sbatch-does-not-know"), `the message names the line and the option (${JSON.stringify(message)})`);
  const refusedLine = (await page.locator("#submit-error .refused-line").textContent()) ?? "";
  check(refusedLine === `3${badLine}`, `the message shows the refused line's text (${JSON.stringify(refusedLine)})`);
  // Nothing but the script's own text is drawn inside the textarea's visible box (the
  // editor clips it): every text node on the page, and the message, lie outside it.
  const covering = await page.evaluate(() => {
    const a = document.querySelector("#script").getBoundingClientRect();
    const e = document.querySelector(".editor").getBoundingClientRect();
    const t = { left: Math.max(a.left, e.left), right: Math.min(a.right, e.right), top: Math.max(a.top, e.top), bottom: Math.min(a.bottom, e.bottom) };
    const over = (r) => r.width > 0 && r.height > 0 && r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const found = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.textContent.trim() || n.parentElement.closest("#script")) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      if ([...range.getClientRects()].some(over)) found.push(n.textContent.trim().slice(0, 60));
    }
    const m = document.querySelector("#submit-error").getBoundingClientRect();
    const editor = document.querySelector(".editor").getBoundingClientRect();
    return { found, below: m.top >= editor.bottom };
  });
  check(covering.found.length === 0, `no text is drawn over the script (${JSON.stringify(covering.found)})`);
  check(covering.below, "the message sits below the editor");
  check((await page.getAttribute("#script", "aria-invalid")) === "true", "the script is marked invalid for screen readers");
  check(new URL(page.url()).pathname === "/submit", "a refused script stays on the Submit page");
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: new URL("submit-refused.png", SCREENSHOTS).pathname });
  await page.click("#submit-error button:text-is('Go to line 3')");
  const selected = await page.evaluate(() => {
    const t = document.querySelector("#script");
    return document.activeElement === t ? t.value.slice(t.selectionStart, t.selectionEnd) : null;
  });
  check(selected === badLine, `Go to line 3 selects the refused line in the script (${JSON.stringify(selected)})`);
  await page.fill("#script", "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --time=5\necho hi\n");
  check((await page.locator(".editor .ln.bad, .editor .row.bad").count()) === 0, "editing the line clears its mark");
  // A request no node can satisfy: the problem names the option, not the line.
  await page.fill("#script", "#!/bin/bash\n#SBATCH --gres=gpu:1000\nhostname\n");
  await page.click("form.submit:not(.job-form) button[type=submit]");
  await page.waitForFunction(() => document.querySelector("#submit-error")?.textContent?.startsWith("Line 2"), null, { timeout: 15000 });
  check((await page.locator(".editor .ln.bad").allTextContents()).join() === "2", "an unsatisfiable --gres is marked on its #SBATCH line");

  // Cancel another job from the Queue: a pending one (its place in the queue shown) is
  // selected, cancelled after the confirmation, and its row turns CANCELLED live.
  const later = await rest("POST", "/v1/jobs", { script: "#!/bin/bash\ntrue\n", script_name: "e2e-cancel-me", spec: { begin: "now+1hour" } });
  await page.goto(`${BERTH_URL}/queue?state=all&name=e2e-cancel-me`);
  const laterRow = page.locator("#queue tbody tr", { has: page.locator(`a[href="/jobs/${later.id}"]`) });
  await laterRow.waitFor({ timeout: 15000 });
  const position = (await laterRow.locator("td").nth(8).textContent()) ?? "";
  check(/^#\d+$/.test(position), `a pending job shows its place in the queue (${JSON.stringify(position)})`);
  await laterRow.locator("input[type=checkbox]").check();
  confirmNext = 1;
  await page.click("[aria-label='Actions on selected jobs'] button:text-is('Cancel')");
  await page.waitForFunction(
    (id) => [...document.querySelectorAll("#queue tbody tr")].some((r) => r.querySelector(`a[href="/jobs/${id}"]`) && r.textContent.includes("CANCELLED")),
    later.id,
    { timeout: 15000 },
  );
  check((await rest("GET", `/v1/jobs/${later.id}`)).state === "CANCELLED", `job ${later.id} was cancelled from the Queue`);
  // page.goto above reloaded the page: mark it again for the live check below.
  await page.evaluate(() => {
    window.berthNoReload = true;
  });

  // The overview: GPUs and nodes with units, and events arriving live.
  await page.click('nav a[href="/"]');
  await page.waitForSelector("#gpu-states tbody tr");
  const gpuRow = (await page.locator("#gpu-states tbody tr").first().textContent()) ?? "";
  check(/\d+ GPUs?/.test(gpuRow), `the overview counts GPUs by model with their unit (${JSON.stringify(gpuRow)})`);
  const nodeStates = (await page.locator("#node-states").textContent()) ?? "";
  check(/\d+ nodes?/.test(nodeStates), `the overview counts nodes by state (${JSON.stringify(nodeStates)})`);
  await page.waitForSelector("#recent-events li");
  const live = await rest("POST", "/v1/jobs", { script: "#!/bin/bash\ntrue\n", script_name: "e2e-live.sh" });
  await page.waitForSelector(`#recent-events a[href="/jobs/${live.id}"]`, { timeout: 15000 });
  check(await page.evaluate(() => window.berthNoReload === true), `job ${live.id}'s events appear in the overview live`);

  // Tokens: one created on the Tokens page works for GET /v1/jobs and stops after Revoke.
  // The token is read from the page into a variable and never printed.
  await page.click('nav a[href="/tokens"]');
  await page.waitForSelector("#token-create");
  await page.fill('#token-create input[name="name"]', "e2e-console");
  await page.selectOption('#token-create select[name="scope"]', "read-only");
  await page.click('#token-create button[type="submit"]');
  await page.waitForSelector("#new-token");
  const fresh = await page.inputValue("#new-token");
  const jobsWith = (t) => fetch(`${BERTH_URL}/v1/jobs?limit=1`, { headers: { Authorization: `Bearer ${t}` } }).then((r) => r.status);
  check(fresh.startsWith("berth_") && (await jobsWith(fresh)) === 200, "a token created on the Tokens page is shown once and works for GET /v1/jobs");
  await page.click(".new-token button:text-is('Done')");
  check((await page.locator("#new-token").count()) === 0, "the new token is gone from the page after Done");
  const tokenRow = page.locator("#tokens tbody tr", { hasText: "e2e-console" }).first();
  await tokenRow.locator("button", { hasText: "Revoke…" }).click();
  await tokenRow.locator("button", { hasText: "Revoke now" }).click();
  await page.waitForFunction(() => [...document.querySelectorAll("#tokens tbody tr")].some((r) => r.textContent?.includes("e2e-console") && r.textContent.includes("revoked")));
  check((await jobsWith(fresh)) === 401, "the token stops working after Revoke (401)");

  // Usage: the window is in the URL; Export CSV downloads the account × user rows.
  // The scheduler rolls usage up every 15 s (berth dev): wait for the GPU job's hours.
  let gpuHours = 0;
  for (let i = 0; i < 60 && gpuHours === 0; i++) {
    const u = await rest("GET", "/v1/usage?tres=gres/gpu&unit=hours&group_by=account,user");
    gpuHours = u.total["gres/gpu"] ?? 0;
    if (gpuHours === 0) await new Promise((r) => setTimeout(r, 1000));
  }
  await page.goto(`${BERTH_URL}/usage`);
  await page.waitForSelector("#usage-total");
  check(gpuHours > 0 && (await page.locator("#by-account svg rect.bar").count()) > 0, `the GPU job's hours are drawn as a bar (${gpuHours} h)`);
  check((await page.locator("#by-account, #by-user").count()) === 2, "the usage page shows GPU-hours by account and by user");
  await page.waitForSelector("#by-day canvas", { timeout: 15000 });
  const today = new Date().toISOString().slice(0, 10);
  const todayRow = (await page.locator("#by-day tbody tr", { hasText: today }).textContent()) ?? "";
  check(parseFloat(todayRow.slice(today.length)) > 0, `the per-day chart has today's GPU-hours (${JSON.stringify(todayRow)})`);
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#export-csv")]);
  const csv = await download.path().then((p) => import("node:fs").then((fs) => fs.readFileSync(p, "utf8")));
  check(csv.startsWith("account,user,gpu_hours,jobs\r\n") && csv.split("\r\n").length >= 3, `Export CSV downloads the rows (${JSON.stringify(csv.split("\r\n")[0])}, ${csv.split("\r\n").length - 2} rows)`);
  await page.goto(`${BERTH_URL}/usage?start=2020-01-01&end=2020-01-02`);
  await page.waitForSelector("#usage-total");
  check(((await page.locator("#usage-total").textContent()) ?? "").includes("2020-01-01"), "the usage window comes from the URL");
  check((await page.locator('nav a[href="/audit"]').count()) === 1, "an admin's nav shows Audit");

  // The GPU job's page: utilisation, memory and power per GPU, drawn from its samples.
  await page.goto(`${BERTH_URL}/jobs/${gpuJob.id}`);
  await page.waitForSelector(".charts figure canvas", { timeout: 30000 });
  const figures = await page.locator(".charts figure").count();
  const latestUse = (await page.locator(".charts figure").first().locator("details li").first().textContent({ timeout: 5000 })) ?? "";
  check(figures === 3 && /GPU \d+: \d+ %/.test(latestUse), `the job page charts its GPU's utilisation, memory and power (${figures} charts; ${JSON.stringify(latestUse)})`);

  // Each page: a focus ring on everything Tab reaches, axe, a screenshot.
  const pages = [
    ["overview", "/", "#recent-events li"],
    ["queue", "/queue?state=all", "#queue tbody tr"],
    ["job", `/jobs/${gpuJob.id}`, ".charts figure canvas"],
    ["nodes", "/nodes", "#nodes tbody tr"],
    ["partitions", "/partitions", "#partitions tbody tr"],
    ["qos", "/qos", "#qos tbody tr, main h1"],
    ["reservations", "/reservations", "#reservations tbody tr, main h1"],
    ["submit", "/submit", "#script"],
    ["usage", "/usage", "#usage-total"],
    ["accounts", "/accounts", "#accounts tbody tr"],
    ["pools", "/pools", "#pools tbody tr, #no-pools"],
    ["tokens", "/tokens", "#tokens tbody tr"],
    ["audit", "/audit", "#audit tbody tr"],
  ];
  for (const [label, path, ready] of pages) {
    await page.goto(`${BERTH_URL}${path}`);
    await page.waitForSelector(ready, { timeout: 15000 });
    await page.waitForTimeout(300);
    const { reached, unringed } = await tabThrough(page);
    check(reached > 3 && unringed.length === 0, `${label}: all ${reached} stops Tab reaches show a focus ring (${unringed.join(", ")})`);
    await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
    const axe = await new AxeBuilder({ page }).analyze();
    const serious = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    check(
      serious.length === 0,
      `${label}: no serious or critical accessibility violation (${serious.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join("; ")}`).join(" | ")})`,
    );
    // A Tab that left the document can hand focus back late: no focus ring in the picture.
    await page.waitForTimeout(100);
    await page.evaluate(() => {
      if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
      window.scrollTo(0, 0);
    });
    await page.screenshot({ path: new URL(`${label}.png`, SCREENSHOTS).pathname });
  }
  const boxes = await page.goto(`${BERTH_URL}/queue?state=all`).then(() => page.waitForSelector("#queue tbody input")).then(() =>
    page.locator("#queue tbody input[type=checkbox]").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? "")),
  );
  check(boxes.length > 0 && boxes.every((l) => /^Select job \S+$/.test(l)), `the queue's row checkboxes are labelled (${boxes.length})`);

  // The API reference: `/docs`, logged out, draws every operation of the live document
  // (/openapi.json) at its operation id's anchor, every schema, links that all land on
  // the page, descriptions as text; with no CSP violation and no serious axe violation.
  await checkDocs();

  // Logged in, the nav's API link opens it without a reload.
  await page.goto(`${BERTH_URL}/`);
  await page.waitForSelector("#recent-events");
  await page.evaluate(() => {
    window.berthNoReload = true;
  });
  await page.click('nav a[href="/docs"]');
  await page.waitForSelector("article.op", { timeout: 15000 });
  check(
    (await page.evaluate(() => window.berthNoReload === true)) && (await page.locator("header .who").count()) === 1,
    "the nav's API link opens the reference in the logged-in console without a reload",
  );

  // Another tenant: a plain user of another account sees neither the admin's jobs in the
  // Queue nor Audit in the nav. The harness mints their token (no REST call makes a token
  // for another user); the admin creates the user and the account over REST.
  const OTHER = process.env.BERTH_OTHER_USER ?? "";
  const OTHER_TOKEN = process.env.BERTH_OTHER_TOKEN ?? "";
  if (OTHER && OTHER_TOKEN) {
    await rest("POST", "/v1/accounts", { name: "e2e-other" });
    await rest("POST", "/v1/users", { name: OTHER, role: "user" });
    await rest("PUT", `/v1/accounts/e2e-other/users/${encodeURIComponent(OTHER)}`, { default: true });
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const op = await other.newPage();
    op.on("pageerror", (e) => pageErrors.push(`${OTHER}: ${e.message}`));
    await watchPolicy(op, violations, OTHER);
    await op.goto(`${BERTH_URL}/queue?state=all`);
    await op.fill("#token", OTHER_TOKEN);
    await op.click("button[type=submit]");
    await op.waitForSelector("#queue tbody tr", { timeout: 15000 });
    const theirs = await op.locator(`#queue a[href="/jobs/${id}"]`).count();
    const rows = await op.locator("#queue tbody tr").allTextContents();
    check(theirs === 0 && rows.length === 1 && /No jobs match/.test(rows[0] ?? ""), `${OTHER} (another account) sees none of the admin's jobs in the Queue (${rows.length} rows)`);
    check((await op.locator('nav a[href="/audit"]').count()) === 0, `${OTHER}'s nav has no Audit`);
    await op.goto(`${BERTH_URL}/audit`);
    await op.waitForSelector("main h1");
    check((await op.locator("main h1").textContent()) === "Not found", `${OTHER} gets no Audit page`);
    await other.close();
  } else {
    console.log("skip the other-tenant checks (BERTH_OTHER_USER and BERTH_OTHER_TOKEN unset)");
  }

  // An operator drains a node on the Nodes page and sees it DRAINED, then resumes it.
  const OPERATOR_TOKEN = process.env.BERTH_OPERATOR_TOKEN ?? "";
  if (OPERATOR_TOKEN) {
    const ops = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const np = await ops.newPage();
    np.on("pageerror", (e) => pageErrors.push(`operator: ${e.message}`));
    await watchPolicy(np, violations, "operator");
    await np.goto(`${BERTH_URL}/nodes`);
    await np.fill("#token", OPERATOR_TOKEN);
    await np.click("button[type=submit]");
    const nodeRow = np.locator("#nodes tbody tr").first();
    await nodeRow.waitFor({ timeout: 15000 });
    const nodeName = (await nodeRow.locator("th").textContent()) ?? "";
    await nodeRow.locator("button", { hasText: "Drain…" }).click();
    await nodeRow.locator("input[name=reason]").fill("e2e maintenance");
    await nodeRow.locator("button[type=submit]", { hasText: "Drain" }).click();
    await np.waitForFunction(
      (name) => [...document.querySelectorAll("#nodes tbody tr")].some((r) => r.querySelector("th")?.textContent === name && r.querySelector(".state")?.textContent === "DRAINED"),
      nodeName,
      { timeout: 60000 },
    );
    const drained = (await nodeRow.textContent()) ?? "";
    check(drained.includes("e2e maintenance"), `the operator drained ${nodeName} and sees it DRAINED with the reason`);
    check((await np.locator('nav a[href="/audit"]').count()) === 0, "an operator's nav has no Audit (admins only)");
    await nodeRow.locator("button", { hasText: "Resume" }).click();
    await np.waitForFunction(
      (name) => [...document.querySelectorAll("#nodes tbody tr")].some((r) => r.querySelector("th")?.textContent === name && !/DRAIN/.test(r.querySelector(".state")?.textContent ?? "")),
      nodeName,
      { timeout: 30000 },
    );
    check(true, `the operator resumed ${nodeName}`);
    await ops.close();
  } else {
    console.log("skip the operator checks (BERTH_OPERATOR_TOKEN unset)");
  }

  // Log in through the OpenID Connect issuer (authorization code + PKCE): its log-in
  // page takes the user name; the console comes back logged in as that user, with the
  // code gone from the address bar.
  const IDP = process.env.BERTH_IDP ?? "";
  if (IDP && OTHER) {
    const sso = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const sp = await sso.newPage();
    sp.on("pageerror", (e) => pageErrors.push(`oidc: ${e.message}`));
    sp.on("console", (m) => {
      if (/Content.Security.Policy|Trusted Type/i.test(m.text())) violations.push(m.text());
    });
    // Logged out on a deep link: the log-in comes back to it.
    await sp.goto(`${BERTH_URL}/queue?state=all`);
    const host = new URL(IDP).host;
    await sp.click(`button:text-is('Log in with ${host}')`);
    await sp.waitForURL((u) => u.origin === IDP, { timeout: 15000 });
    await sp.fill("input[name=login]", OTHER);
    await sp.fill("input[name=password]", "any");
    await sp.click("button[type=submit]");
    // The issuer asks to authorise the console (consent), then sends the browser back.
    await sp.waitForURL((u) => u.origin === BERTH_URL || /interaction/.test(u.pathname), { timeout: 15000 });
    if (new URL(sp.url()).origin !== BERTH_URL) await sp.click("button[type=submit]");
    await sp.waitForSelector("header .who", { timeout: 15000 });
    const who = (await sp.locator("header .who").textContent()) ?? "";
    check(who === `${OTHER} (user)`, `logged in through the OIDC issuer as ${OTHER} (${JSON.stringify(who)})`);
    check(sp.url() === `${BERTH_URL}/queue?state=all`, `the log-in comes back to the page it started on, with no code in the address bar (${new URL(sp.url()).pathname}${new URL(sp.url()).search})`);
    await sp.waitForSelector("#queue tbody tr", { timeout: 15000 });
    check((await sp.locator(`#queue a[href="/jobs/${id}"]`).count()) === 0, `${OTHER}, logged in through the issuer, sees none of the admin's jobs`);
    await sso.close();
  } else {
    console.log("skip the OIDC log-in (BERTH_IDP unset)");
  }

  check(dialogs.length === 0, `no dialog opened (${dialogs.join(", ")})`);
  check(violations.length === 0, `no CSP or Trusted Types violation (${violations.join("; ")})`);
  check(pageErrors.length === 0, `no uncaught page error (${pageErrors.join("; ")})`);
} catch (err) {
  check(false, `the browser run: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await browser.close();
  await rest("POST", `/v1/jobs/${id}/cancel`).catch((err) => console.error(`cancelling job ${id}: ${err.message}`));
}

/** Collects the page's Content-Security-Policy and Trusted Types violations into `sink`:
 * `securitypolicyviolation` events (listened for before any of the page's scripts run)
 * and console messages ("Refused to …"). */
async function watchPolicy(p, sink, label) {
  await p.exposeFunction("berthPolicyViolation", (v) => sink.push(`${label}: ${v}`));
  await p.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.berthPolicyViolation(`${e.violatedDirective} blocked ${e.blockedURI || "(inline)"} at ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  p.on("console", (m) => {
    if (/Refused to|Content.Security.Policy|Trusted Type/i.test(m.text())) sink.push(`${label}: console: ${m.text()}`);
  });
}

/** `/docs` in a fresh, logged-out context: see the comment where it is called. */
async function checkDocs() {
  const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"];
  const doc = await fetch(`${BERTH_URL}/openapi.json`).then((r) => r.json());
  const want = Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ key: `${m.toUpperCase()} ${path}`, path, id: item[m].operationId, secured: (item[m].security ?? doc.security ?? []).length > 0 })),
  );
  const schemas = Object.keys(doc.components?.schemas ?? {});
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const dp = await ctx.newPage();
  const policy = [];
  const errors = [];
  await watchPolicy(dp, policy, "docs");
  dp.on("pageerror", (e) => errors.push(String(e)));
  try {
    // The watcher hears a violation when there is one: an inline style, on a page of
    // the console (its own context, not counted).
    const canary = [];
    const cp = await ctx.newPage();
    await watchPolicy(cp, canary, "canary");
    await cp.goto(`${BERTH_URL}/docs`);
    await cp.evaluate(() => {
      const style = document.createElement("style");
      style.textContent = "body { color: red }";
      document.head.append(style);
    });
    await cp.waitForTimeout(300);
    await cp.close();
    check(canary.some((v) => /style-src/.test(v)), `the CSP watcher reports a violation when one happens (${JSON.stringify(canary)})`);

    const res = await dp.goto(`${BERTH_URL}/docs`);
    check(res?.ok() && /trusted-types 'none'/.test(res.headers()["content-security-policy"] ?? ""), "the api serves /docs with the console's CSP");
    await dp.waitForSelector("article.op", { timeout: 15000 });
    check((await dp.locator("#token").count()) === 0 && /API reference/.test((await dp.locator("main h1").textContent()) ?? ""), "/docs shows the API reference without logging in");

    const shown = await dp.locator("article.op").evaluateAll((els) =>
      els.map((e) => ({
        key: `${e.querySelector("h3 .method")?.textContent ?? ""} ${e.querySelector("h3 .op-path")?.textContent ?? ""}`,
        id: e.id,
        opId: e.querySelector(".op-id")?.textContent ?? "",
        auth: e.querySelector(".op-auth")?.textContent ?? "",
      })),
    );
    const shownKeys = new Set(shown.map((o) => o.key));
    const missing = want.filter((w) => !shownKeys.has(w.key)).map((w) => w.key);
    const extra = [...shownKeys].filter((k) => !want.some((w) => w.key === k));
    check(missing.length === 0 && extra.length === 0 && shown.length === want.length, `/docs draws each of the ${want.length} operations once (missing ${JSON.stringify(missing)}, extra ${JSON.stringify(extra)}, ${shown.length} drawn)`);
    const shownPaths = new Set(shown.map((o) => o.key.split(" ")[1]));
    const docPaths = Object.keys(doc.paths);
    check(docPaths.length > 0 && docPaths.every((p) => shownPaths.has(p)) && shownPaths.size === docPaths.length, `/docs draws all ${docPaths.length} paths of /openapi.json, and no other (${shownPaths.size} drawn)`);
    const badAnchor = want.filter((w) => !shown.some((o) => o.id === w.id && o.opId === w.id && o.key === w.key)).map((w) => w.id);
    check(badAnchor.length === 0, `each operation is at its operation id's anchor (${JSON.stringify(badAnchor)})`);
    const badAuth = want.filter((w) => {
      const auth = shown.find((o) => o.key === w.key)?.auth ?? "";
      return w.secured ? !/bearer/.test(auth) : !/none/.test(auth);
    });
    check(badAuth.length === 0, `each operation says its authentication: bearer, or none for the public ones (${JSON.stringify(badAuth.map((w) => w.key))})`);
    const shownSchemas = await dp.locator("article.schema").evaluateAll((els) => els.map((e) => e.id));
    const missingSchemas = schemas.filter((n) => !shownSchemas.includes(`schema-${n}`));
    check(schemas.length > 0 && missingSchemas.length === 0 && shownSchemas.length === schemas.length, `/docs draws all ${schemas.length} component schemas (missing ${JSON.stringify(missingSchemas)})`);
    const dangling = await dp.evaluate(() =>
      [...document.querySelectorAll('main a[href^="#"]')].map((a) => a.getAttribute("href")).filter((h) => !document.getElementById(decodeURIComponent(h.slice(1)))),
    );
    const refLinks = await dp.locator('main a[href^="#schema-"]').count();
    check(dangling.length === 0 && refLinks > schemas.length, `every in-page link (${refLinks} to schemas) lands on the page (${JSON.stringify([...new Set(dangling)].slice(0, 10))})`);

    // What an operation and a schema say: types, nullable, $ref links, allOf/oneOf,
    // descriptions as text (code spans, literal "<…>"), never as HTML.
    const jc = dp.locator("#job_create");
    const idem = (await jc.locator("tr", { has: dp.locator("th code", { hasText: "Idempotency-Key" }) }).textContent()) ?? "";
    check(/header/.test(idem) && /string \| null/.test(idem) && /optional/.test(idem), `job_create's Idempotency-Key: in header, string | null, optional (${JSON.stringify(idem)})`);
    check((await jc.locator('a[href="#schema-JobCreate"]').count()) === 1 && (await jc.locator('a[href="#schema-Problem"]').count()) > 0, "job_create links its body (JobCreate) and its problems (Problem)");
    const codes = await jc.locator(".prose code").allTextContents();
    const jcText = (await jc.textContent()) ?? "";
    check(codes.includes("#SBATCH") && !jcText.includes("`"), `job_create's description shows code spans as code, no backticks (${JSON.stringify(codes)})`);
    const pool = (await dp.locator("#schema-PoolSpec").textContent()) ?? "";
    check(pool.includes("<pool>-<max_nodes>") && (await dp.locator("main img, main script, main iframe").count()) === 0, "text with <…> in the document shows as text, and makes no element");
    const created = dp.locator("#schema-ApiTokenCreated");
    check(/All of/.test((await created.textContent()) ?? "") && (await created.locator('a[href="#schema-ApiToken"]').count()) === 1, "an allOf schema (ApiTokenCreated) lists its parts, linking ApiToken");
    const grp = (await dp.locator("#schema-AccountCreate tr", { has: dp.locator("th code", { hasText: "grp_tres" }) }).textContent()) ?? "";
    check(/TresLimits \| null/.test(grp) && /GrpTRES/.test(grp), `a oneOf [null, $ref] property reads TresLimits | null, with its description (${JSON.stringify(grp)})`);
    const states = (await dp.locator("#schema-JobState").textContent()) ?? "";
    check(/PENDING/.test(states) && /OUT_OF_MEMORY/.test(states), "an enum schema (JobState) lists its values");

    // Accessibility and focus rings, and the screenshot.
    const { reached, unringed } = await tabThrough(dp);
    check(reached > 3 && unringed.length === 0, `docs: all ${reached} stops Tab reaches show a focus ring (${unringed.join(", ")})`);
    await dp.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
    const axe = await new AxeBuilder({ page: dp }).analyze();
    const serious = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    check(serious.length === 0, `docs: no serious or critical accessibility violation (${serious.map((v) => `${v.id}: ${v.nodes.slice(0, 5).map((n) => n.target.join(" ")).join("; ")}`).join(" | ")})`);
    await dp.evaluate(() => {
      window.scrollTo(0, 0);
      document.querySelector(".docs-toc")?.scrollTo(0, 0);
    });
    mkdirSync(SCREENSHOTS, { recursive: true });
    await dp.screenshot({ path: new URL("docs.png", SCREENSHOTS).pathname });

    // A link to an operation's anchor lands on it; a $ref link goes to its schema in the
    // page (no reload); the filter narrows the operations.
    await dp.goto(`${BERTH_URL}/docs#job_create`);
    await dp.waitForSelector("article.op");
    await dp.waitForFunction(() => document.querySelector("#job_create")?.matches(":target"), null, { timeout: 5000 }).catch(() => {});
    const landed = await dp.evaluate(() => {
      const r = document.querySelector("#job_create").getBoundingClientRect();
      return { top: Math.round(r.top), target: document.querySelector("#job_create").matches(":target") };
    });
    check(landed.target && landed.top >= 0 && landed.top < 100, `/docs#job_create opens at job_create (top ${landed.top}, :target ${landed.target})`);
    await dp.evaluate(() => {
      window.berthNoReload = true;
    });
    await dp.locator('#job_create a[href="#schema-JobCreate"]').click();
    await dp.waitForFunction(() => location.hash === "#schema-JobCreate", null, { timeout: 5000 }).catch(() => {});
    const atSchema = await dp.evaluate(() => ({
      url: location.pathname + location.hash,
      top: Math.round(document.getElementById("schema-JobCreate").getBoundingClientRect().top),
      same: window.berthNoReload === true,
    }));
    check(atSchema.url === "/docs#schema-JobCreate" && atSchema.same && atSchema.top >= 0 && atSchema.top < 100, `the JobCreate link goes to its schema on the page (${JSON.stringify(atSchema)})`);
    await dp.fill("#docs-filter", "job_create");
    await dp.waitForFunction(() => document.querySelector("#docs-count")?.textContent?.startsWith("1 of"), null, { timeout: 5000 }).catch(() => {});
    const visible = await dp.locator("article.op").evaluateAll((els) => els.filter((e) => e.checkVisibility()).map((e) => e.id));
    check(visible.length === 1 && visible[0] === "job_create", `the filter leaves job_create alone (${JSON.stringify(visible)}; ${await dp.locator("#docs-count").textContent()})`);
    await dp.fill("#docs-filter", "");
    const all = await dp.locator("article.op").evaluateAll((els) => els.filter((e) => e.checkVisibility()).length);
    check(all === want.length, `clearing the filter shows every operation again (${all})`);

    check(policy.length === 0, `docs: no CSP or Trusted Types violation (${policy.join("; ")})`);
    check(errors.length === 0, `docs: no uncaught page error (${errors.join("; ")})`);
  } finally {
    await ctx.close();
  }
}

/** Presses Tab through the page (at most 80 times) and returns what took focus without a
 * visible focus ring (an outline on it, or on the editor around the script), with how many
 * stops it made. */
async function tabThrough(page) {
  await page.evaluate(() => document.activeElement instanceof HTMLElement && document.activeElement.blur());
  const missing = [];
  const seen = new Set();
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press("Tab");
    const info = await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || el === document.body) return null;
      const ringed = (e) => {
        const s = getComputedStyle(e);
        return s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
      };
      const ring = ringed(el) || (el.closest(".editor") !== null && ringed(el.closest(".editor")));
      const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.getAttribute("aria-label") ? `[${el.getAttribute("aria-label")}]` : ""}${el.textContent && el.tagName === "A" ? `(${el.textContent.slice(0, 20)})` : ""}`;
      return { name, ring, key: [...document.querySelectorAll("*")].indexOf(el) };
    });
    if (!info || seen.has(info.key)) break;
    seen.add(info.key);
    if (!info.ring) missing.push(info.name);
  }
  return { reached: seen.size, unringed: missing };
}

if (failures.length > 0) {
  console.error(`e2e: ${failures.length} failed`);
  process.exit(1);
}
console.log("e2e: all passed");
