// Browser test of the console (Playwright gives Chromium a fresh profile directory) in a real Chromium (playwright-core driving Debian's
// /usr/bin/chromium; Playwright's own browser download does not work here).
//
//   BERTH_URL=http://127.0.0.1:8080 BERTH_TOKEN=… node tests/e2e.mjs
//
// It submits a held job named like an HTML injection through the REST api, logs in by
// pasting the token, and checks that the queue shows the name as literal text: no <img>
// element, no alert, no Content-Security-Policy violation. Exits non-zero on failure and
// cancels its job either way.

import { chromium } from "playwright-core";

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
  const page = await browser.newPage();
  const dialogs = [];
  const violations = [];
  const pageErrors = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  page.on("console", (m) => {
    if (/Content.Security.Policy|Trusted Type/i.test(m.text())) violations.push(m.text());
  });
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

  check(dialogs.length === 0, `no dialog opened (${dialogs.join(", ")})`);
  check(violations.length === 0, `no CSP or Trusted Types violation (${violations.join("; ")})`);
  check(pageErrors.length === 0, `no uncaught page error (${pageErrors.join("; ")})`);
} catch (err) {
  check(false, `the browser run: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await browser.close();
  await rest("POST", `/v1/jobs/${id}/cancel`).catch((err) => console.error(`cancelling job ${id}: ${err.message}`));
}

if (failures.length > 0) {
  console.error(`e2e: ${failures.length} failed`);
  process.exit(1);
}
console.log("e2e: all passed");
