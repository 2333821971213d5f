// Path routes (`/queue?user=vera`, `/jobs/12`, `/nodes`) on the History API. The api
// serves index.html for every non-API GET under `/`, so a reload lands on the same page.

import { useEffect, useState } from "preact/hooks";

export interface Route {
  path: string;
  query: URLSearchParams;
}

function current(): Route {
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

const listeners = new Set<() => void>();
window.addEventListener("popstate", () => listeners.forEach((l) => l()));

/** Goes to `url` (same origin), adding a history entry unless `replace`. */
export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  listeners.forEach((l) => l());
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const l = () => setRoute(current());
    listeners.add(l);
    return () => listeners.delete(l);
  }, []);
  return route;
}

/** Paths the api answers itself (never the console's pages): links there load them. */
const NOT_CONSOLE = ["/v1/", "/slurm", "/metrics", "/openapi.json", "/healthz", "/readyz"];

/** Intercepts plain left clicks on same-origin links so they route without a reload.
 * A link to an anchor of this page (`#main`, `/docs#job_create` on /docs) is left to the
 * browser, which scrolls to it and focuses it; a link to another page keeps its anchor. */
export function interceptLinks(root: HTMLElement): void {
  root.addEventListener("click", (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element).closest?.("a");
    if (!a || a.target || a.hasAttribute("download")) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || NOT_CONSOLE.some((p) => url.pathname.startsWith(p))) return;
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}
