// The bearer token and who it says the caller is.
//
// The token lives in sessionStorage only (gone when the tab closes), is sent in the
// `Authorization` header only, and never appears in a URL or a log line. No cookies.

const KEY = "berth.token";

/** Who the console believes the caller is, for display and for hiding actions the role
 * cannot take. The api decides what is allowed; this only avoids offering buttons that
 * would answer 403. */
export interface Identity {
  /** The user name (`sub` claim), when the token says; `null` for an opaque `berth_` token. */
  user: string | null;
  /** `admin`, `operator` or `user`; `null` when the token does not say. */
  role: Role | null;
  /** `jwt` or `api-token` (`berth_…`, opaque to the console). */
  kind: "jwt" | "api-token";
  /** Expiry from the `exp` claim, when there is one. */
  expires: Date | null;
  /** A read-only API token (`GET /v1/whoami` says its scope): no action is offered. */
  readOnly: boolean;
}

export type Role = "admin" | "operator" | "user";

export function loadToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function clearToken(): void {
  sessionStorage.removeItem(KEY);
}

/** Reads a JWT's claims for display only: the signature is not (and cannot be) checked
 * here, and nothing the api enforces depends on it. */
export function identityOf(token: string): Identity {
  if (token.startsWith("berth_")) {
    return { user: null, role: null, kind: "api-token", expires: null, readOnly: false };
  }
  const claims = decodeClaims(token);
  const role = claims?.["role"];
  const sub = claims?.["sub"];
  const exp = claims?.["exp"];
  return {
    user: typeof sub === "string" ? sub : null,
    role: role === "admin" || role === "operator" || role === "user" ? role : null,
    kind: "jwt",
    expires: typeof exp === "number" ? new Date(exp * 1000) : null,
    readOnly: false,
  };
}

function decodeClaims(token: string): Record<string, unknown> | null {
  const part = token.split(".")[1];
  if (!part) return null;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)), (c) =>
      c.charCodeAt(0),
    );
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return value && typeof value === "object" ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The identity with the user and role the api reports for the token (`GET /v1/whoami`),
 * which wins over what the token's claims say (and is all there is for a `berth_` token). */
export function withWhoami(id: Identity, who: { user: string; role: string; scope?: string | null }): Identity {
  const role = who.role === "admin" || who.role === "operator" || who.role === "user" ? who.role : null;
  return { ...id, user: who.user, role, readOnly: who.scope === "read-only" };
}

/** Whether the role may drain and resume nodes (and see every job), with a token that
 * may act. */
export function isOperator(id: Identity | null): boolean {
  return (id?.role === "admin" || id?.role === "operator") && !id.readOnly;
}
