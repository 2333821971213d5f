// Small shared pieces: times with UTC on hover, the clock, debounced refresh, messages.

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { events, type StreamStatus } from "./events";
import { formatTime } from "./format";

/** A timestamp in the user's zone; hovering shows it in UTC. */
export function Time({ iso }: { iso: string | null | undefined }) {
  const t = formatTime(iso);
  if (!t) return <span class="muted">–</span>;
  return (
    <time dateTime={iso ?? undefined} title={t.utc}>
      {t.local}
    </time>
  );
}

/** The current time, re-read every `everyMs` (for elapsed times). */
export function useNow(everyMs = 5000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = window.setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** Calls `load` now and every `everyMs` while the page is visible (for what raises no
 * events, such as GPU samples), until unmounted or `deps` change; `load` gets a function
 * telling whether its answer is still wanted. With `everyMs` null, only now. */
export function usePolling(load: (live: () => boolean) => Promise<void>, everyMs: number | null, deps: unknown[]): void {
  useEffect(() => {
    let live = true;
    const alive = () => live;
    void load(alive);
    const t =
      everyMs === null
        ? undefined
        : window.setInterval(() => {
            if (document.visibilityState === "visible") void load(alive);
          }, everyMs);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, deps);
}

/** Calls `load` when events of `prefix` arrive (at most every `waitMs`), and when the
 * stream comes back after a drop (events missed while down are replayed, but a page
 * loaded while the stream was down may be older than them). */
export function useLiveRefresh(prefix: string, load: () => void, waitMs = 400, filter?: (subject: string) => boolean): void {
  const loadRef = useRef(load);
  loadRef.current = load;
  const filterRef = useRef(filter);
  filterRef.current = filter;
  useEffect(() => {
    let timer: number | null = null;
    const kick = () => {
      if (timer !== null) return;
      timer = window.setTimeout(() => {
        timer = null;
        loadRef.current();
      }, waitMs);
    };
    const offEvents = events.on(prefix, (e) => {
      if (!filterRef.current || filterRef.current(e.subject)) kick();
    });
    let wasDown = false;
    const offStatus = events.onStatus((s: StreamStatus) => {
      if (s.kind === "reconnecting") wasDown = true;
      if (s.kind === "live" && wasDown) {
        wasDown = false;
        kick();
      }
    });
    return () => {
      offEvents();
      offStatus();
      if (timer !== null) clearTimeout(timer);
    };
  }, [prefix, waitMs]);
}

export function ErrorNote({ children }: { children: ComponentChildren }) {
  return (
    <p class="error" role="alert">
      {children}
    </p>
  );
}

/** The live-stream banner: says when updates are lost and when it retries. */
export function StreamBanner() {
  const [status, setStatus] = useState<StreamStatus>(events.status);
  const now = useNow(1000);
  useEffect(() => events.onStatus(setStatus), []);
  if (status.kind !== "reconnecting") return null;
  const secs = Math.max(0, Math.ceil((status.retryAt - now) / 1000));
  return (
    <div class="banner" role="status" aria-live="polite">
      Live updates lost ({status.error}); reconnecting{secs > 0 ? ` in ${secs} s` : ""}… (attempt{" "}
      {status.attempt}). No events will be missed.
    </div>
  );
}
