// Accounts and fairshare (sshare): the account tree with shares, and under each account
// its users with their normalized shares, usage and fairshare factor.

import { useEffect, useState } from "preact/hooks";
import { api, problemText, type Account, type FairshareRow } from "./client";
import { ErrorNote } from "./ui";

function num(n: number, digits = 3): string {
  return n.toLocaleString(undefined, { maximumFractionDigits: digits });
}

interface Line {
  key: string;
  depth: number;
  account: string;
  user: string | null;
  shares: number | null;
  row: FairshareRow | null;
}

/** Accounts in tree order (parents first, siblings by name), each followed by its users. */
function lines(accounts: Account[], fairshare: FairshareRow[]): Line[] {
  const names = new Set(accounts.map((a) => a.name));
  for (const r of fairshare) names.add(r.account);
  const byName = new Map(accounts.map((a) => [a.name, a]));
  const children = new Map<string, string[]>();
  const roots: string[] = [];
  for (const name of names) {
    const parent = byName.get(name)?.parent ?? null;
    if (parent && names.has(parent)) children.set(parent, [...(children.get(parent) ?? []), name]);
    else roots.push(name);
  }
  const out: Line[] = [];
  const walk = (name: string, depth: number) => {
    const own = fairshare.find((r) => r.account === name && !r.user) ?? null;
    out.push({ key: `a:${name}`, depth, account: name, user: null, shares: byName.get(name)?.shares ?? null, row: own });
    for (const r of fairshare.filter((r) => r.account === name && r.user).sort((a, b) => a.user.localeCompare(b.user))) {
      out.push({ key: `u:${name}:${r.user}`, depth: depth + 1, account: name, user: r.user, shares: null, row: r });
    }
    for (const c of (children.get(name) ?? []).sort()) walk(c, depth + 1);
  };
  for (const r of roots.sort()) walk(r, 0);
  return out;
}

export function AccountsPage() {
  const [data, setData] = useState<{ accounts: Account[]; fairshare: FairshareRow[] } | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    void Promise.all([api.GET("/v1/accounts"), api.GET("/v1/fairshare")]).then(([a, f]) => {
      if (!f.data) {
        setError(problemText(f.error, f.response.status));
        return;
      }
      setData({ accounts: a.data?.items ?? [], fairshare: f.data.associations });
    });
  }, []);

  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!data) return <p aria-busy="true">Loading accounts…</p>;
  const rows = lines(data.accounts, data.fairshare);

  return (
    <section aria-labelledby="accounts-title">
      <h1 id="accounts-title">Accounts and fairshare</h1>
      <p class="hint">
        Shares are relative to siblings; normalized shares S and usage U run 0 to 1 down the tree; the factor is 2^(−U/S).
        Raw usage is decayed billing-seconds.
      </p>
      <table class="grid" id="accounts">
        <thead>
          <tr>
            <th scope="col">Account / user</th>
            <th scope="col">Shares</th>
            <th scope="col">Norm. shares</th>
            <th scope="col">Raw usage</th>
            <th scope="col">Norm. usage</th>
            <th scope="col">Fairshare</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((l) => (
            <tr key={l.key} class={l.user ? "user-row" : "account-row"}>
              <th scope="row" class={`tree d${Math.min(l.depth, 8)}`}>
                {l.user ? <span>{l.user}</span> : <strong>{l.account}</strong>}
              </th>
              <td>{l.shares ?? ""}</td>
              <td>{l.row ? num(l.row.norm_shares) : ""}</td>
              <td>{l.row ? num(l.row.raw_usage, 0) : ""}</td>
              <td>{l.row ? num(l.row.norm_usage) : ""}</td>
              <td>{l.row ? num(l.row.fairshare) : ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
