// The live event stream: `GET /v1/events` as Server-Sent Events, read through `fetch`
// because EventSource cannot send an Authorization header.
//
// One connection serves the whole console. After a drop it reconnects with exponential
// backoff and jitter (1 s doubling to 30 s, or the server's `retry:`), sending
// `Last-Event-ID` so the api replays every event committed meanwhile, once.

import { authHeaders, notifyUnauthorized, type CloudEvent } from "./client";

/** What the banner shows: connecting for the first time, live, or lost and retrying. */
export type StreamStatus =
  | { kind: "connecting" }
  | { kind: "live" }
  | { kind: "reconnecting"; attempt: number; retryAt: number; error: string }
  | { kind: "stopped" };

export type EventHandler = (event: CloudEvent) => void;

/** One Server-Sent Event as the SSE parser yields it. */
export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
  retry: number | null;
}

/** Parses an SSE byte stream incrementally (the WHATWG HTML "event stream" rules: lines
 * end in CRLF, LF or CR; `field: value` with one optional space; `:` starts a comment; a
 * blank line dispatches). Feed it decoded text; it calls `emit` per complete event. */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private id: string | null = null;
  private retry: number | null = null;
  private sawCr = false;

  constructor(private readonly emit: (message: SseMessage) => void) {}

  push(text: string): void {
    let chunk = text;
    // A CR at the end of the previous chunk may be half of a CRLF.
    if (this.sawCr && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.sawCr = false;
    this.buffer += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      if (m[0] === "\r" && m.index === this.buffer.length - 1) {
        this.sawCr = true;
      }
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0 || this.id !== null) {
        this.emit({ id: this.id, event: this.event || "message", data: this.data.join("\n"), retry: this.retry });
      }
      this.data = [];
      this.event = "";
      this.id = null;
      this.retry = null;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value);
        break;
    }
  }
}

const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30000;

/** The console's one event stream. Subscribers get every CloudEvent whose type starts
 * with their prefix (`berth.job.`); status listeners drive the banner. */
export class EventStream {
  private lastEventId: string | null = null;
  private handlers = new Set<{ prefix: string; handler: EventHandler }>();
  private statusListeners = new Set<(s: StreamStatus) => void>();
  private abort: AbortController | null = null;
  private timer: number | null = null;
  private attempt = 0;
  private serverRetry: number | null = null;
  status: StreamStatus = { kind: "stopped" };

  /** Subscribes to events whose type starts with `prefix`; returns the unsubscribe. */
  on(prefix: string, handler: EventHandler): () => void {
    const entry = { prefix, handler };
    this.handlers.add(entry);
    return () => this.handlers.delete(entry);
  }

  onStatus(listener: (s: StreamStatus) => void): () => void {
    this.statusListeners.add(listener);
    listener(this.status);
    return () => this.statusListeners.delete(listener);
  }

  start(): void {
    if (this.abort) return;
    this.attempt = 0;
    this.connect();
  }

  /** Stops for good (log-out): forgets the position too. */
  stop(): void {
    this.abort?.abort();
    this.abort = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.lastEventId = null;
    this.setStatus({ kind: "stopped" });
  }

  private setStatus(status: StreamStatus): void {
    this.status = status;
    for (const l of this.statusListeners) l(status);
  }

  private connect(): void {
    const abort = new AbortController();
    this.abort = abort;
    if (this.attempt === 0) this.setStatus({ kind: "connecting" });
    const headers = authHeaders({ Accept: "text/event-stream" });
    if (this.lastEventId !== null) headers.set("Last-Event-ID", this.lastEventId);
    void this.read(abort, headers).then(
      (error) => this.dropped(abort, error),
      (error: unknown) => this.dropped(abort, error instanceof Error ? error.message : String(error)),
    );
  }

  /** Reads one connection until it ends; returns why it ended. */
  private async read(abort: AbortController, headers: Headers): Promise<string> {
    const response = await fetch("/v1/events", { headers, signal: abort.signal, cache: "no-store" });
    if (response.status === 401) {
      return "401";
    }
    if (!response.ok || !response.body) {
      return `the api answered ${response.status}`;
    }
    this.attempt = 0;
    this.setStatus({ kind: "live" });
    const parser = new SseParser((m) => this.message(m));
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "the stream ended";
      parser.push(value);
    }
  }

  private message(m: SseMessage): void {
    if (m.retry !== null) this.serverRetry = m.retry;
    if (m.id !== null) this.lastEventId = m.id;
    if (!m.data) return;
    let event: CloudEvent;
    try {
      event = JSON.parse(m.data) as CloudEvent;
    } catch {
      return;
    }
    for (const { prefix, handler } of this.handlers) {
      if (event.type.startsWith(prefix)) handler(event);
    }
  }

  private dropped(abort: AbortController, error: string): void {
    if (this.abort !== abort || abort.signal.aborted) return; // stopped on purpose
    this.abort = null;
    if (error === "401") {
      this.setStatus({ kind: "stopped" });
      notifyUnauthorized();
      return;
    }
    this.attempt += 1;
    const base = this.serverRetry ?? MIN_BACKOFF_MS;
    const backoff = Math.min(MAX_BACKOFF_MS, base * 2 ** Math.min(this.attempt - 1, 10));
    const delay = backoff / 2 + Math.random() * (backoff / 2);
    this.setStatus({ kind: "reconnecting", attempt: this.attempt, retryAt: Date.now() + delay, error });
    this.timer = window.setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
  }
}

export const events = new EventStream();
