import { useState } from "react";
import { get, type Schemas } from "../api/client";
import { RunActions } from "../components/RunActions";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { href } from "../router";
import { Head } from "../components/bits";

const STATUSES = ["pending", "running", "paused", "completed", "failed", "cancelled"];

/** Runs, newest first, filtered by a choice of graph and of status; pause, resume and cancel. */
export function RunsPage({ graph, status }: { graph: string | null; status: string | null }) {
  const [offset, setOffset] = useState(0);
  const query = new URLSearchParams({ limit: "50", offset: String(offset) });
  if (graph) query.set("graph", graph);
  if (status) query.set("status", status);
  const { data, error, reload } = useApi(() => get<Schemas["RunPage"]>(`/api/runs?${query}`), [graph, status, offset]);
  const [problem, setProblem] = useState<unknown>(null);
  const graphs = useApi(() => get<Schemas["GraphPage"]>("/api/graphs?limit=500"), []);
  const health = useApi(() => get<Schemas["HealthOut"]>("/api/health"), []);
  const chosen = graph ? graphs.data?.items.find((g) => g.id === graph || g.slug === graph) : undefined;

  function filter(next: { graph?: string | null; status?: string | null }) {
    const params = new URLSearchParams();
    const g = next.graph !== undefined ? next.graph : graph;
    const s = next.status !== undefined ? next.status : status;
    if (g) params.set("graph", g);
    if (s) params.set("status", s);
    window.location.hash = `#/runs${params.size ? `?${params}` : ""}`;
  }

  return (
    <section>
      <div className="toolbar">
        <h1>Runs</h1>
        <select aria-label="Graph" value={chosen?.id ?? graph ?? ""} onChange={(e) => filter({ graph: e.target.value || null })}>
          <option value="">any graph</option>
          {graph && !chosen ? (
            <option value={graph}>{graph}</option>
          ) : null}
          {(graphs.data?.items ?? []).map((g) => (
            <option key={g.id} value={g.id}>
              {g.name} ({g.slug})
            </option>
          ))}
        </select>
        <select aria-label="Status" value={status ?? ""} onChange={(e) => filter({ status: e.target.value || null })}>
          <option value="">any status</option>
          {STATUSES.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <ErrorView error={error ?? problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <table className="list" aria-label="Runs">
        <Head labels={["Run", "Graph", "Status", "Created", "Tokens", "Cost", ""]} />
        <tbody>
          {(data?.items ?? []).map((run) => (
            <tr key={run.id} data-run={run.id}>
              <td>
                <a href={href("runs", run.id)}>
                  <code>{run.id.slice(0, 8)}</code>
                </a>
              </td>
              <td>
                {run.graph} v{run.graph_version}
              </td>
              <td>
                <span className={`pill status-${run.status}`}>{run.status}</span>
                {run.corrections ? <span className="muted"> · {run.corrections} corrections</span> : null}
              </td>
              <td>{when(run.created_at)}</td>
              <td>{run.tokens_input + run.tokens_output}</td>
              <td>${run.cost_usd.toFixed(4)}</td>
              <td className="actions">
                <RunActions
                  run={run}
                  link
                  onDone={reload}
                  onError={setProblem}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.items.length === 0 ? (
        <p className="muted">
          No runs {graph || status ? "match" : "yet"} in the store <code>{health.data?.database ?? "…"}</code>.
        </p>
      ) : null}
      <div className="row">
        {offset > 0 ? (
          <button type="button" onClick={() => setOffset(Math.max(0, offset - 50))}>
            Newer
          </button>
        ) : null}
        {data?.next_offset ? (
          <button type="button" onClick={() => setOffset(data.next_offset!)}>
            Older
          </button>
        ) : null}
      </div>
    </section>
  );
}
