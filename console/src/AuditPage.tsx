// The audit log (admins): every state-changing call, newest first, a page at a time.

import { useEffect, useState } from "preact/hooks";
import { api, problemText, type AuditEntry } from "./client";
import { navigate } from "./router";
import { ErrorNote, Time } from "./ui";

const PAGE = 50;

export function AuditPage({ query }: { query: URLSearchParams }) {
  const actor = query.get("actor") ?? "";
  const cursor = query.get("cursor") ?? "";
  const [page, setPage] = useState<{ items: AuditEntry[]; next: string | null } | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let gone = false;
    setPage(null);
    setError(null);
    void api
      .GET("/v1/audit", { params: { query: { limit: PAGE, ...(actor ? { actor } : {}), ...(cursor ? { cursor } : {}) } } })
      .then(({ data, error: problem, response }) => {
        if (gone) return;
        if (data) setPage({ items: data.items, next: data.next_cursor ?? null });
        else setError(problemText(problem, response.status));
      });
    return () => {
      gone = true;
    };
  }, [actor, cursor]);

  const go = (next: { actor?: string; cursor?: string }) => {
    const q = new URLSearchParams();
    if (next.actor) q.set("actor", next.actor);
    if (next.cursor) q.set("cursor", next.cursor);
    const s = q.toString();
    navigate(s ? `/audit?${s}` : "/audit");
  };

  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <form
        class="filters"
        key={actor}
        onSubmit={(e) => {
          e.preventDefault();
          go({ actor: String(new FormData(e.currentTarget as HTMLFormElement).get("actor") ?? "").trim() });
        }}
      >
        <label>
          Actor <input name="actor" defaultValue={actor} autoComplete="off" spellcheck={false} />
        </label>
        <button type="submit">Filter</button>
        {cursor && (
          <button type="button" onClick={() => go({ actor })}>
            Newest
          </button>
        )}
      </form>
      {error && <ErrorNote>{error}</ErrorNote>}
      {!error && !page && <p aria-busy="true">Loading the audit log…</p>}
      {page && (
        <>
          <table class="grid" id="audit">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Actor</th>
                <th scope="col">Role</th>
                <th scope="col">Request</th>
                <th scope="col">Status</th>
                <th scope="col">Token</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              {page.items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Time iso={a.at} />
                  </td>
                  <td>{a.actor ?? <span class="muted">unverified</span>}</td>
                  <td>{a.role ?? ""}</td>
                  <td>
                    <code>
                      {a.method} {a.path}
                    </code>
                  </td>
                  <td class={a.status >= 400 ? "bad-status" : undefined}>{a.status}</td>
                  <td>{a.token_id ?? ""}</td>
                  <td>{a.remote_addr ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.items.length === 0 && <p class="muted">No entries.</p>}
          {page.next && (
            <p>
              <button type="button" id="audit-older" onClick={() => go({ actor, cursor: page.next! })}>
                Older entries
              </button>
            </p>
          )}
        </>
      )}
    </section>
  );
}
