// API tokens: the caller's (every user's, for admins), create one (shown once, with a
// copy button) and revoke. The new token lives only in this page's state: never in the
// URL, storage or a log line.

import { useCallback, useEffect, useState } from "preact/hooks";
import { api, problemText, type ApiToken, type TokenScope } from "./client";
import type { Identity } from "./session";
import { ErrorNote, Time } from "./ui";

export function TokensPage({ identity }: { identity: Identity }) {
  const [tokens, setTokens] = useState<ApiToken[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [created, setCreated] = useState<{ name: string; token: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<number | null>(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/tokens");
    if (!data) {
      setError(problemText(problem, response.status));
      return;
    }
    setError(null);
    setTokens(data.items);
  }, []);
  useEffect(() => void load(), []);

  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    const name = String(f.get("name") ?? "").trim();
    const scope = String(f.get("scope") ?? "read-only") as TokenScope;
    const days = Number(f.get("days") ?? 90);
    if (!name) return;
    setBusy(true);
    setCopied(false);
    const r = await api.POST("/v1/tokens", { body: { name, scope, expires_in_days: days } });
    setBusy(false);
    if (!r.data) {
      setCreated(null);
      setOutcome(problemText(r.error, r.response.status));
      return;
    }
    form.reset();
    setOutcome(null);
    setCreated({ name: r.data.name, token: r.data.token });
    void load();
  };

  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created.token);
      setCopied(true);
    } catch {
      const el = document.getElementById("new-token") as HTMLInputElement | null;
      el?.select();
      setOutcome("Copying was refused by the browser: the token is selected, copy it with the keyboard.");
    }
  };

  const revoke = async (t: ApiToken) => {
    const r = await api.DELETE("/v1/tokens/{id}", { params: { path: { id: t.id } } });
    setRevoking(null);
    setOutcome(r.response.ok ? `Token ${t.name} revoked.` : problemText(r.error, r.response.status));
    void load();
  };

  const elevated = identity.role === "admin" || identity.role === "operator";

  return (
    <section aria-labelledby="tokens-title">
      <h1 id="tokens-title">API tokens</h1>
      <form class="filters" id="token-create" onSubmit={(e) => void create(e)}>
        <label>
          Name <input name="name" required maxLength={200} autoComplete="off" spellcheck={false} />
        </label>
        <label>
          Scope{" "}
          <select name="scope">
            <option value="read-only">read-only</option>
            <option value="submit">submit (and cancel)</option>
            {(elevated || identity.role === null) && <option value="admin">admin (what your role allows)</option>}
          </select>
        </label>
        <label>
          Expires in (days) <input name="days" type="number" min={1} max={365} defaultValue="90" required />
        </label>
        <button type="submit" disabled={busy}>
          Create token
        </button>
      </form>
      {created && (
        <div class="new-token" role="status">
          <p>
            Token <strong>{created.name}</strong> created. It is shown this once: copy it now.
          </p>
          <label for="new-token">New token</label>{" "}
          <input id="new-token" readOnly value={created.token} size={48} spellcheck={false} autoComplete="off" />{" "}
          <button type="button" onClick={() => void copy()}>
            {copied ? "Copied" : "Copy"}
          </button>{" "}
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      {outcome && <p role="status">{outcome}</p>}
      {error && <ErrorNote>{error}</ErrorNote>}
      {!error && !tokens && <p aria-busy="true">Loading tokens…</p>}
      {tokens &&
        (tokens.length === 0 ? (
          <p class="muted">No API tokens yet.</p>
        ) : (
          <table class="grid" id="tokens">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">User</th>
                <th scope="col">Scope</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <tr key={t.id} data-token-id={t.id}>
                  <th scope="row">{t.name}</th>
                  <td>
                    <code>{t.prefix}</code>
                  </td>
                  <td>{t.user}</td>
                  <td>{t.scope}</td>
                  <td>
                    <Time iso={t.created_at} />
                  </td>
                  <td>
                    <Time iso={t.expires_at} />
                  </td>
                  <td>
                    <Time iso={t.last_used_at} />
                  </td>
                  <td>
                    {t.revoked_at ? (
                      <>
                        revoked <Time iso={t.revoked_at} />
                      </>
                    ) : revoking === t.id ? (
                      <>
                        <button type="button" class="danger" onClick={() => void revoke(t)} aria-label={`Revoke token ${t.name} now`}>
                          Revoke now
                        </button>{" "}
                        <button type="button" onClick={() => setRevoking(null)}>
                          Keep
                        </button>
                      </>
                    ) : (
                      <button type="button" onClick={() => setRevoking(t.id)} aria-label={`Revoke token ${t.name}…`}>
                        Revoke…
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
    </section>
  );
}
