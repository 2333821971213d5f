// Cloud node pools: nodes by state, launches in flight, the last error, cooldowns and
// what the running instances cost per hour.

import { useCallback, useEffect, useState } from "preact/hooks";
import { api, problemText, type Pool } from "./client";
import { plural } from "./format";
import { ErrorNote, Time, useLiveRefresh } from "./ui";

export function PoolsPage() {
  const [pools, setPools] = useState<Pool[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    const { data, error: problem, response } = await api.GET("/v1/pools");
    if (!data) {
      setError(problemText(problem, response.status));
      return;
    }
    setError(null);
    setPools(data.items);
  }, []);
  useEffect(() => void load(), []);
  useLiveRefresh("berth.node.", () => void load(), 1000);

  if (error) return <ErrorNote>{error}</ErrorNote>;
  if (!pools) return <p aria-busy="true">Loading pools…</p>;

  return (
    <section aria-labelledby="pools-title">
      <h1 id="pools-title">Cloud node pools</h1>
      {pools.length === 0 ? (
        <p id="no-pools">No cloud node pools.</p>
      ) : (
        <table class="grid" id="pools">
          <thead>
            <tr>
              <th scope="col">Pool</th>
              <th scope="col">Nodes by state</th>
              <th scope="col">Active (of max)</th>
              <th scope="col">Launches in flight</th>
              <th scope="col">Spend per hour</th>
              <th scope="col">Last error</th>
              <th scope="col">Cooldowns</th>
            </tr>
          </thead>
          <tbody>
            {pools.map((p) => (
              <tr key={p.name}>
                <th scope="row">{p.name}</th>
                <td>
                  {Object.entries(p.nodes_by_state)
                    .filter(([, n]) => n > 0)
                    .map(([s, n]) => `${s} ${n}`)
                    .join(", ") || "none"}
                </td>
                <td>
                  {p.nodes_active} of {plural(p.spec.max_nodes, "node")}
                </td>
                <td>{p.launches_in_flight}</td>
                <td>{p.hourly_spend.toLocaleString(undefined, { maximumFractionDigits: 2 })} / h</td>
                <td>
                  {p.last_error ? (
                    <>
                      {p.last_error} <Time iso={p.last_error_at} />
                    </>
                  ) : (
                    <span class="muted">none</span>
                  )}
                  {p.backoff_until && (
                    <>
                      {" "}
                      (launches held until <Time iso={p.backoff_until} />)
                    </>
                  )}
                </td>
                <td>
                  {p.cooldowns.length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    p.cooldowns.map((c) => (
                      <div key={`${c.instance_type}/${c.zone}`}>
                        {c.instance_type}
                        {c.zone ? ` in ${c.zone}` : ""} until <Time iso={c.until} />
                      </div>
                    ))
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
