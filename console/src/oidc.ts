// Log-in through an OpenID Connect issuer: the authorization code flow with PKCE (RFC
// 7636, S256) for a public client, as the OAuth 2.0 for Browser-Based Apps BCP has it.
// The api lists the issuers (`GET /v1/oidc/issuers`); their endpoints come from the
// issuer's discovery document unless configured. The verifier, state and nonce live in
// session storage only until the callback; the code is taken off the address bar at once
// and the token it buys is kept like a pasted one (session storage, bearer header only).

import type { components } from "./api";

export type OidcLogin = components["schemas"]["OidcLogin"];

const PENDING = "berth.oidc.pending";
export const CALLBACK_PATH = "/login/callback";

interface Pending {
  issuer: string;
  clientId: string;
  token: OidcLogin["token"];
  tokenEndpoint: string;
  verifier: string;
  state: string;
  nonce: string;
  redirectUri: string;
  /** The console page to open once logged in (a same-origin path). */
  returnTo: string;
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(n = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(n)));
}

async function endpoints(login: OidcLogin): Promise<{ authorization: string; token: string }> {
  if (login.authorization_endpoint && login.token_endpoint) {
    return { authorization: login.authorization_endpoint, token: login.token_endpoint };
  }
  const url = `${login.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  const res = await fetch(url, { cache: "no-store", credentials: "omit" });
  if (!res.ok) throw new Error(`the issuer's discovery document answered ${res.status}`);
  const doc = (await res.json()) as { issuer?: string; authorization_endpoint?: string; token_endpoint?: string };
  if (doc.issuer !== login.issuer) throw new Error("the discovery document names another issuer");
  const authorization = login.authorization_endpoint ?? doc.authorization_endpoint;
  const token = login.token_endpoint ?? doc.token_endpoint;
  if (!authorization || !token) throw new Error("the discovery document lacks the authorization or token endpoint");
  return { authorization, token };
}

/** Sends the browser to the issuer's authorization endpoint; `returnTo` (a path of the
 * console) opens once logged in. */
export async function startLogin(login: OidcLogin, returnTo: string): Promise<void> {
  const ep = await endpoints(login);
  const verifier = random(48);
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  const pending: Pending = {
    issuer: login.issuer,
    clientId: login.client_id,
    token: login.token,
    tokenEndpoint: ep.token,
    verifier,
    state: random(),
    nonce: random(),
    redirectUri: `${location.origin}${CALLBACK_PATH}`,
    returnTo: returnTo.startsWith("/") && !returnTo.startsWith("//") && !returnTo.startsWith(CALLBACK_PATH) ? returnTo : "/",
  };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(ep.authorization);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", pending.clientId);
  url.searchParams.set("redirect_uri", pending.redirectUri);
  url.searchParams.set("scope", login.scopes);
  url.searchParams.set("state", pending.state);
  url.searchParams.set("nonce", pending.nonce);
  url.searchParams.set("code_challenge", challenge);
  url.searchParams.set("code_challenge_method", "S256");
  location.assign(url.toString());
}

function claims(jwt: string): Record<string, unknown> | null {
  const part = jwt.split(".")[1];
  if (!part) return null;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Finishes a log-in on the callback page: checks the state (and the issuer when the
 * answer names one, RFC 9207), trades the code and the verifier for tokens, and returns
 * the one the api takes with the page to open. Throws with a sentence for the page on any
 * failure. */
export async function finishLogin(query: URLSearchParams): Promise<{ token: string; returnTo: string }> {
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!raw) throw new Error("no log-in was started in this tab (or it was already finished)");
  const p = JSON.parse(raw) as Pending;
  if (query.get("state") !== p.state) throw new Error("the answer's state does not match the log-in started here");
  const iss = query.get("iss");
  if (iss !== null && iss !== p.issuer) throw new Error("the answer comes from another issuer");
  const error = query.get("error");
  if (error) throw new Error(`the issuer refused: ${query.get("error_description") ?? error}`);
  const code = query.get("code");
  if (!code) throw new Error("the answer carries no code");
  const res = await fetch(p.tokenEndpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: p.redirectUri,
      client_id: p.clientId,
      code_verifier: p.verifier,
    }),
    credentials: "omit",
    cache: "no-store",
  }).catch((err: unknown) => {
    // A network failure, or the Content-Security-Policy refusing another origin.
    throw new Error(
      `could not reach the token endpoint ${new URL(p.tokenEndpoint).origin} (${err instanceof Error ? err.message : String(err)}); when it is on another origin than the issuer, set console_token_endpoint in [[api.oidc]] so that the console may connect to it`,
    );
  });
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const why = typeof body["error_description"] === "string" ? body["error_description"] : body["error"];
    throw new Error(`the token endpoint answered ${res.status}${why ? `: ${String(why)}` : ""}`);
  }
  const token = body[p.token];
  if (typeof token !== "string" || !token) throw new Error(`the issuer's answer has no ${p.token}`);
  const idToken = body["id_token"];
  if (typeof idToken === "string" && claims(idToken)?.["nonce"] !== p.nonce) {
    throw new Error("the ID token's nonce does not match the log-in started here");
  }
  return { token, returnTo: p.returnTo };
}
