// The typed client of Berth's public REST api, generated from openapi/berth.json
// (`npm run gen` writes api.d.ts). Every call carries the session's bearer token.

import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./api";
import { loadToken } from "./session";

export type Job = components["schemas"]["Job"];
export type JobState = components["schemas"]["JobState"];
export type Node = components["schemas"]["Node"];
export type Gpu = components["schemas"]["Gpu"];
export type Problem = components["schemas"]["Problem"];
export type CloudEvent = components["schemas"]["CloudEvent"];
export type JobBatchItem = components["schemas"]["JobBatchItem"];
export type User = components["schemas"]["User"];
export type UsageReport = components["schemas"]["UsageReport"];
export type Account = components["schemas"]["Account"];
export type FairshareRow = components["schemas"]["FairshareRow"];
export type Pool = components["schemas"]["Pool"];
export type ApiToken = components["schemas"]["ApiToken"];
export type TokenScope = components["schemas"]["TokenScope"];
export type AuditEntry = components["schemas"]["AuditEntry"];
export type JobSpec = components["schemas"]["JobSpec"];
export type JobPriority = components["schemas"]["JobPriority"];
export type JobGpuSamples = components["schemas"]["JobGpuSamples"];
export type AcctJob = components["schemas"]["AcctJob"];
export type Partition = components["schemas"]["Partition"];
export type Qos = components["schemas"]["Qos"];
export type Reservation = components["schemas"]["Reservation"];
export type ClusterTimeline = components["schemas"]["ClusterTimeline"];
export type Step = components["schemas"]["Step"];

/** Called when the api answers 401: the token is missing, expired or revoked. */
let onUnauthorized: () => void = () => {};
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}
export function notifyUnauthorized(): void {
  onUnauthorized();
}

const auth: Middleware = {
  onRequest({ request }) {
    const token = loadToken();
    if (token) request.headers.set("Authorization", `Bearer ${token}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) notifyUnauthorized();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin });
api.use(auth);

/** Headers for calls made with plain `fetch` (streams the client does not handle). */
export function authHeaders(extra: Record<string, string> = {}): Headers {
  const headers = new Headers(extra);
  const token = loadToken();
  if (token) headers.set("Authorization", `Bearer ${token}`);
  return headers;
}

/** A human sentence from an api error (an RFC 9457 problem document, or anything else). */
export function problemText(error: unknown, status?: number): string {
  if (error && typeof error === "object") {
    const p = error as Partial<Problem>;
    if (typeof p.detail === "string" && p.detail) {
      return p.field ? `${p.detail} (${p.field})` : p.detail;
    }
    if (typeof p.title === "string") return p.title;
  }
  if (typeof error === "string" && error) return error;
  return status ? `The api answered ${status}.` : "The api did not answer.";
}
