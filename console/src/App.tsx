// The shell: log-in, the header (who you are, log-out, the stream banner) and the pages.

import { useEffect, useState } from "preact/hooks";
import { api, problemText, setUnauthorizedHandler } from "./client";
import { events } from "./events";
import { AccountsPage } from "./AccountsPage";
import { AuditPage } from "./AuditPage";
import { JobPage } from "./JobPage";
import { NodesPage } from "./NodesPage";
import { OverviewPage } from "./OverviewPage";
import { PoolsPage } from "./PoolsPage";
import { QueuePage } from "./QueuePage";
import { SubmitPage } from "./SubmitPage";
import { TokensPage } from "./TokensPage";
import { UsagePage } from "./UsagePage";
import { useRoute } from "./router";
import { clearToken, identityOf, loadToken, saveToken, withWhoami, type Identity } from "./session";
import { ErrorNote, StreamBanner } from "./ui";

export function App() {
  const [identity, setIdentity] = useState<Identity | null>(() => {
    const token = loadToken();
    return token ? identityOf(token) : null;
  });
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    setUnauthorizedHandler(() => {
      clearToken();
      events.stop();
      setIdentity(null);
      setNotice("The api refused the token (expired or revoked). Paste a new one.");
    });
  }, []);

  useEffect(() => {
    if (!identity) return;
    events.start();
    return () => events.stop();
  }, [identity !== null]);

  // A token kept from before a reload: ask the api who it is.
  useEffect(() => {
    if (!identity) return;
    let live = true;
    api
      .GET("/v1/whoami")
      .then(({ data }) => {
        if (live && data) setIdentity((id) => (id ? withWhoami(id, data) : id));
      })
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [identity !== null]);

  if (!identity) {
    return (
      <Login
        notice={notice}
        onLogin={(id) => {
          setNotice(null);
          setIdentity(id);
        }}
      />
    );
  }

  const logout = () => {
    clearToken();
    events.stop();
    setIdentity(null);
    setNotice("Logged out.");
  };

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">Berth</strong>
        <nav aria-label="Pages">
          <NavLink href="/">Overview</NavLink>
          <NavLink href="/queue">Queue</NavLink>
          <NavLink href="/submit">Submit</NavLink>
          <NavLink href="/nodes">Nodes</NavLink>
          <NavLink href="/usage">Usage</NavLink>
          <NavLink href="/accounts">Accounts</NavLink>
          <NavLink href="/pools">Pools</NavLink>
          <NavLink href="/tokens">Tokens</NavLink>
          {identity.role === "admin" && <NavLink href="/audit">Audit</NavLink>}
        </nav>
        <span class="who" title={identity.expires ? `Token expires ${identity.expires.toISOString()}` : undefined}>
          {identity.user ?? "API token"}
          {identity.role ? ` (${identity.role})` : ""}
        </span>
        <button type="button" onClick={logout}>
          Log out
        </button>
      </header>
      <StreamBanner />
      <main id="main" tabIndex={-1}>
        <Page identity={identity} />
      </main>
    </>
  );
}

function NavLink({ href, children }: { href: string; children: string }) {
  const route = useRoute();
  const here = route.path === href;
  return (
    <a href={href} aria-current={here ? "page" : undefined}>
      {children}
    </a>
  );
}

function Page({ identity }: { identity: Identity }) {
  const route = useRoute();
  const job = /^\/jobs\/(\d+)$/.exec(route.path);
  if (route.path === "/") return <OverviewPage identity={identity} />;
  if (route.path === "/queue") return <QueuePage query={route.query} identity={identity} />;
  if (route.path === "/submit") return <SubmitPage />;
  if (job?.[1]) return <JobPage id={Number(job[1])} identity={identity} />;
  if (route.path === "/nodes") return <NodesPage identity={identity} />;
  if (route.path === "/usage") return <UsagePage query={route.query} />;
  if (route.path === "/accounts") return <AccountsPage />;
  if (route.path === "/pools") return <PoolsPage />;
  if (route.path === "/tokens") return <TokensPage identity={identity} />;
  if (route.path === "/audit" && identity.role === "admin") return <AuditPage query={route.query} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        The console has no page at this address. <a href="/">Go to the overview.</a>
      </p>
    </section>
  );
}

/** Log-in by pasting a token (a Berth JWT or a `berth_` API token). The token is checked
 * with `GET /v1/whoami` before it is kept, which also says its user and role. */
function Login({ notice, onLogin }: { notice: string | null; onLogin: (id: Identity) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const input = form.elements.namedItem("token") as HTMLInputElement;
    const token = input.value.trim().replace(/^Bearer\s+/i, "");
    if (!token) return;
    setBusy(true);
    setError(null);
    saveToken(token);
    input.value = "";
    try {
      const { data, error: problem, response } = await api.GET("/v1/whoami");
      if (!response.ok || !data) {
        clearToken();
        setError(response.status === 401 ? "The api refused this token." : problemText(problem, response.status));
        return;
      }
      onLogin(withWhoami(identityOf(token), data));
    } catch (err) {
      clearToken();
      setError(`Could not reach the api: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="login">
      <h1>Berth</h1>
      <form onSubmit={submit}>
        <label for="token">API token or JWT</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          autoFocus
          placeholder="berth_… or eyJ…"
        />
        <p class="hint">
          <code>berth token create</code> prints one; <code>berth dev</code> prints an admin token. The token stays in
          this tab (session storage) and is sent only as a bearer header.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? "Checking…" : "Log in"}
        </button>
      </form>
      {notice && <p role="status">{notice}</p>}
      {error && <ErrorNote>{error}</ErrorNote>}
    </main>
  );
}
