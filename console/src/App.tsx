// The shell: log-in, the header (who you are, log-out, the stream banner) and the pages.

import { useEffect, useState } from "preact/hooks";
import { api, problemText, setUnauthorizedHandler } from "./client";
import { events } from "./events";
import { AccountsPage } from "./AccountsPage";
import { AuditPage } from "./AuditPage";
import { PartitionsPage, QosPage, ReservationsPage } from "./ClusterPages";
import { JobPage } from "./JobPage";
import { NodesPage } from "./NodesPage";
import { OverviewPage } from "./OverviewPage";
import { PoolsPage } from "./PoolsPage";
import { QueuePage } from "./QueuePage";
import { SubmitPage } from "./SubmitPage";
import { TokensPage } from "./TokensPage";
import { UsagePage } from "./UsagePage";
import { CALLBACK_PATH, finishLogin, startLogin, type OidcLogin } from "./oidc";
import { navigate, useRoute } from "./router";
import { clearToken, identityOf, loadToken, saveToken, withWhoami, type Identity } from "./session";
import { ErrorNote, StreamBanner } from "./ui";

/** The API reference page, loaded on demand (its own chunk): most visits never open it. */
let docsPage: Promise<typeof import("./DocsPage")> | null = null;

/** `/docs`: public (the document needs no credentials), so it shows logged out too. */
function Docs({ query }: { query: URLSearchParams }) {
  const [page, setPage] = useState<typeof import("./DocsPage") | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    docsPage ??= import("./DocsPage");
    docsPage.then(setPage).catch((err: unknown) => {
      docsPage = null;
      setError(`Could not load the API reference: ${err instanceof Error ? err.message : String(err)}.`);
    });
  }, []);
  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!page) return <p aria-busy="true">Loading the API reference…</p>;
  return <page.DocsPage query={query} />;
}

export function App() {
  const [identity, setIdentity] = useState<Identity | null>(() => {
    const token = loadToken();
    return token ? identityOf(token) : null;
  });
  const [notice, setNotice] = useState<string | null>(null);
  const route = useRoute();

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

  // An issuer's answer reaching a tab already logged in: drop it, code and all.
  useEffect(() => {
    if (identity && location.pathname === CALLBACK_PATH) navigate("/", true);
  }, []);

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

  if (!identity && location.pathname === CALLBACK_PATH) {
    return (
      <Callback
        onLogin={(id) => {
          setNotice(null);
          setIdentity(id);
        }}
        onFail={(why) => {
          setNotice(why);
          navigate("/", true);
        }}
      />
    );
  }

  if (!identity && route.path === "/docs") {
    return (
      <>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <strong class="brand">Berth</strong>
          <nav aria-label="Pages">
            <NavLink href="/docs">API reference</NavLink>
          </nav>
          <a href="/">Log in to the console</a>
        </header>
        <main id="main" tabIndex={-1}>
          <Docs query={route.query} />
        </main>
      </>
    );
  }

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
          <NavLink href="/partitions">Partitions</NavLink>
          <NavLink href="/qos">QOS</NavLink>
          <NavLink href="/reservations">Reservations</NavLink>
          <NavLink href="/usage">Usage</NavLink>
          <NavLink href="/accounts">Accounts</NavLink>
          <NavLink href="/pools">Pools</NavLink>
          <NavLink href="/tokens">Tokens</NavLink>
          {identity.role === "admin" && <NavLink href="/audit">Audit</NavLink>}
          <NavLink href="/docs">API</NavLink>
        </nav>
        <span class="who" title={identity.expires ? `Token expires ${identity.expires.toISOString()}` : undefined}>
          {identity.user ?? "API token"}
          {identity.role ? ` (${identity.role}${identity.readOnly ? ", read-only token" : ""})` : ""}
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
  if (route.path === "/submit") return <SubmitPage query={route.query} identity={identity} />;
  if (job?.[1]) return <JobPage id={Number(job[1])} identity={identity} />;
  if (route.path === "/nodes") return <NodesPage identity={identity} />;
  if (route.path === "/partitions") return <PartitionsPage />;
  if (route.path === "/qos") return <QosPage />;
  if (route.path === "/reservations") return <ReservationsPage />;
  if (route.path === "/usage") return <UsagePage query={route.query} />;
  if (route.path === "/accounts") return <AccountsPage />;
  if (route.path === "/pools") return <PoolsPage />;
  if (route.path === "/tokens") return <TokensPage identity={identity} />;
  if (route.path === "/audit" && identity.role === "admin") return <AuditPage query={route.query} />;
  if (route.path === "/docs") return <Docs query={route.query} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        The console has no page at this address. <a href="/">Go to the overview.</a>
      </p>
    </section>
  );
}

/** Keeps `token` if the api takes it (`GET /v1/whoami`, which also says its user and
 * role); returns the identity, or a sentence saying why not. */
async function adopt(token: string): Promise<Identity | string> {
  saveToken(token);
  try {
    const { data, error: problem, response } = await api.GET("/v1/whoami");
    if (!response.ok || !data) {
      clearToken();
      return response.status === 401 ? "The api refused this token." : problemText(problem, response.status);
    }
    return withWhoami(identityOf(token), data);
  } catch (err) {
    clearToken();
    return `Could not reach the api: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** The issuer's redirect back (`/login/callback?code=…&state=…`): the code leaves the
 * address bar at once, is traded for a token, and the console opens on the overview. */
function Callback({ onLogin, onFail }: { onLogin: (id: Identity) => void; onFail: (why: string) => void }) {
  useEffect(() => {
    const query = new URLSearchParams(location.search);
    history.replaceState(null, "", CALLBACK_PATH);
    void finishLogin(query)
      .then(async ({ token, returnTo }) => ({ id: await adopt(token), returnTo }))
      .then(({ id, returnTo }) => {
        if (typeof id === "string") onFail(`Log-in failed: ${id}`);
        else {
          navigate(returnTo, true);
          onLogin(id);
        }
      })
      .catch((err: unknown) => onFail(`Log-in failed: ${err instanceof Error ? err.message : String(err)}.`));
  }, []);
  return (
    <main id="main" class="login">
      <h1>Berth</h1>
      <p aria-busy="true">Logging in…</p>
    </main>
  );
}

/** Log-in by pasting a token (a Berth JWT or a `berth_` API token), or through an OIDC
 * issuer the api lists. A pasted token is checked with `GET /v1/whoami` before it is
 * kept, which also says its user and role. */
function Login({ notice, onLogin }: { notice: string | null; onLogin: (id: Identity) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [issuers, setIssuers] = useState<OidcLogin[]>([]);

  useEffect(() => {
    void api
      .GET("/v1/oidc/issuers")
      .then(({ data }) => setIssuers(data?.items ?? []))
      .catch(() => {});
  }, []);

  const viaIssuer = async (login: OidcLogin) => {
    setBusy(true);
    setError(null);
    try {
      await startLogin(login, location.pathname + location.search);
    } catch (err) {
      setBusy(false);
      setError(`Could not start the log-in at ${login.issuer}: ${err instanceof Error ? err.message : String(err)}.`);
    }
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const input = form.elements.namedItem("token") as HTMLInputElement;
    const token = input.value.trim().replace(/^Bearer\s+/i, "");
    if (!token) return;
    setBusy(true);
    setError(null);
    input.value = "";
    const id = await adopt(token);
    setBusy(false);
    if (typeof id === "string") setError(id);
    else onLogin(id);
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
      {issuers.length > 0 && (
        <div class="sso">
          <p>Or log in through your organisation:</p>
          {issuers.map((login) => (
            <button key={login.issuer} type="button" disabled={busy} onClick={() => void viaIssuer(login)}>
              Log in with {hostOf(login.issuer)}
            </button>
          ))}
        </div>
      )}
      {notice && <p role="status">{notice}</p>}
      {error && <ErrorNote>{error}</ErrorNote>}
    </main>
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
