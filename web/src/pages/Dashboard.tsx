import { get, type Schemas } from "../api/client";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { href } from "../router";
import { useEffect } from "react";
import { Head } from "../components/bits";

/** What the server is doing: active runs, the provider pool's load, recent failures, and the
 * configuration (providers, roles, MCP servers; key names, never their values). */
export function DashboardPage() {
  const health = useApi(() => get<Schemas["HealthOut"]>("/api/health"), []);
  const providers = useApi(() => get<Schemas["ProvidersOut"]>("/api/providers"), []);
  const active = useApi(() => get<Schemas["RunPage"]>("/api/runs?status=running&limit=100"), []);
  const queued = useApi(() => get<Schemas["RunPage"]>("/api/runs?status=pending&limit=100"), []);
  const failed = useApi(() => get<Schemas["RunPage"]>("/api/runs?status=failed&limit=10"), []);

  useEffect(() => {
    const timer = window.setInterval(() => {
      health.reload();
      providers.reload();
      active.reload();
      queued.reload();
    }, 2000);
    return () => window.clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const load = providers.data?.load ?? [];
  const config = providers.data?.config as Record<string, unknown> | null | undefined;
  return (
    <section className="dashboard">
      <h1>Dashboard</h1>
      <ErrorView error={health.error ?? providers.error ?? active.error} />
      <div className="cards">
        <div className="card" data-testid="active-runs">
          <h2>Executing</h2>
          <p className="big">{health.data?.runs_executing ?? "…"}</p>
          <RunLinks runs={active.data?.items ?? []} />
        </div>
        <div className="card" data-testid="queued-runs">
          <h2>Queued</h2>
          <p className="big">{queued.data?.items.length ?? "…"}</p>
          <RunLinks runs={queued.data?.items ?? []} />
        </div>
        <div className="card">
          <h2>Model</h2>
          <p>{providers.data?.provider ?? "none configured"}</p>
          <p className="muted">{health.data ? `Plait ${health.data.version} · ${health.data.database}` : ""}</p>
        </div>
      </div>
      <h2>Provider pool</h2>
      {load.length ? (
        <table className="list" aria-label="Provider pool">
          <Head labels={["Provider", "Usable", "In flight", "Queued", "Requests / min", "Tokens / min"]} />
          <tbody>
            {load.map((row) => (
              <tr key={row.id}>
                <td>{row.id}</td>
                <td>{row.usable ? "yes" : "no"}</td>
                <td>
                  {row.in_flight}
                  {row.max_concurrency ? ` / ${row.max_concurrency}` : ""}
                </td>
                <td>{row.queued}</td>
                <td>
                  {row.requests_last_minute}
                  {row.rpm ? ` / ${row.rpm}` : ""}
                </td>
                <td>
                  {row.tokens_last_minute}
                  {row.tpm ? ` / ${row.tpm}` : ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">One provider, no pool (configure several in plait.toml to pool them).</p>
      )}
      <h2>Recent failures</h2>
      {failed.data?.items.length ? (
        <ul aria-label="Recent failures">
          {failed.data.items.map((run) => (
            <FailedRun key={run.id} run={run} />
          ))}
        </ul>
      ) : (
        <p className="muted">No failed runs.</p>
      )}
      <h2>Configuration</h2>
      {config ? <Configuration config={config as unknown as Config} /> : <p className="muted">No plait.toml: the server runs on its one model.</p>}
    </section>
  );
}

function RunLinks({ runs }: { runs: Schemas["RunOut"][] }) {
  return (
    <ul className="compact">
      {runs.slice(0, 8).map((r) => (
        <li key={r.id}>
          <a href={href("runs", r.id)}>
            <code>{r.id.slice(0, 8)}</code>
          </a>{" "}
          {r.graph}
        </li>
      ))}
    </ul>
  );
}

function FailedRun({ run }: { run: Schemas["RunOut"] }) {
  const detail = useApi(() => get<Schemas["RunDetailOut"]>(`/api/runs/${encodeURIComponent(run.id)}`), [run.id]);
  type Failure = { message?: string; kind?: string; node_id?: string };
  const error = detail.data?.error as Failure | null | undefined;
  // The failed node's own error says why; the run's only says which node.
  const own = error?.node_id
    ? (detail.data?.nodes.filter((n) => n.node_id === error.node_id && n.error).at(-1)?.error as Failure | undefined)
    : undefined;
  const why = own ?? error;
  return (
    <li>
      <a href={href("runs", run.id)}>
        <code>{run.id.slice(0, 8)}</code>
      </a>{" "}
      {run.graph} · {when(run.completed_at ?? run.created_at)} ·{" "}
      <span className="reason">
        {why
          ? `${error?.node_id ? `node ${error.node_id} failed` : "failed"}${why.kind ? ` (${why.kind.replaceAll("_", " ")})` : ""}: ${why.message ?? "no message was recorded"}`
          : "…"}
      </span>
    </li>
  );
}

interface Config {
  source: string | null;
  ok: boolean;
  providers: { id: string; kind: string; base_url?: string | null; key?: string | null; usable: boolean; problems: string[]; rpm?: number | null; tpm?: number | null; max_concurrency?: number | null; models: { id?: string; name?: string }[] }[];
  roles: Record<string, { resolves_to: string | null; targets: { target: string; problems: string[] }[] }>;
  mcp_servers: { id: string; name?: string | null; transport: string; command?: string | null; args?: string[]; url?: string | null; capabilities: string[] }[];
  problems: string[];
}

/** The server's plait.toml as `plait config check` reports it: key names, never their values. */
function Configuration({ config }: { config: Config }) {
  return (
    <div data-testid="config">
      <p className="muted">
        From {config.source ?? "defaults"}
        {config.ok ? "; every provider and role is usable." : "."}
      </p>
      {config.problems.map((problem) => (
        <p key={problem} className="warning">
          {problem}
        </p>
      ))}
      <h3>Providers</h3>
      {config.providers.length ? (
        <table className="list" aria-label="Providers">
          <Head labels={["Provider", "Kind", "Endpoint", "Key", "Models", "Limits", "Usable"]} />
          <tbody>
            {config.providers.map((p) => (
              <tr key={p.id}>
                <td>{p.id}</td>
                <td>{p.kind}</td>
                <td>{p.base_url ?? ""}</td>
                <td>{p.key ?? ""}</td>
                <td>{p.models.map((m) => m.id ?? m.name).join(", ")}</td>
                <td>{[p.max_concurrency && `${p.max_concurrency} at once`, p.rpm && `${p.rpm} rpm`, p.tpm && `${p.tpm} tpm`].filter(Boolean).join(", ")}</td>
                <td>{p.usable ? "yes" : `no: ${p.problems.join("; ")}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">None configured.</p>
      )}
      <h3>Roles</h3>
      {Object.keys(config.roles).length ? (
        <table className="list" aria-label="Roles">
          <Head labels={["Role", "Resolves to", "Targets"]} />
          <tbody>
            {Object.entries(config.roles).map(([role, r]) => (
              <tr key={role}>
                <td>{role}</td>
                <td>{r.resolves_to ?? "nothing usable"}</td>
                <td>{r.targets.map((x) => `${x.target}${x.problems.length ? ` (${x.problems.join("; ")})` : ""}`).join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">None configured.</p>
      )}
      <h3>MCP servers</h3>
      {config.mcp_servers.length ? (
        <table className="list" aria-label="MCP servers">
          <Head labels={["Server", "Transport", "Runs", "Offers"]} />
          <tbody>
            {config.mcp_servers.map((m) => (
              <tr key={m.id}>
                <td>
                  {m.id}
                  {m.name ? <div className="muted">{m.name}</div> : null}
                </td>
                <td>{m.transport}</td>
                <td>
                  <code>{m.url ?? [m.command, ...(m.args ?? [])].join(" ")}</code>
                </td>
                <td>{m.capabilities.join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="muted">None configured.</p>
      )}
    </div>
  );
}
