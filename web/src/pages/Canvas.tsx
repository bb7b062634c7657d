import { useEffect, useMemo, useState } from "react";
import { stringify } from "yaml";
import { get, post, put, q, type Schemas } from "../api/client";
import { CodeEditor } from "../components/CodeEditor";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { GraphView } from "../graph/GraphView";
import { edgeId, type GraphDoc } from "../graph/model";
import { go, href } from "../router";

interface Diagnostic {
  category: string;
  code: string;
  message: string;
  node_id?: string | null;
  edge_id?: string | null;
  hint?: string | null;
  line?: number | null;
}

/** One graph: its canvas, the selected node's fields, its YAML, validation and saving. */
export function CanvasPage({ graphRef, version }: { graphRef: string; version: string | null }) {
  const path = `/api/graphs/${q(graphRef)}${version ? `?version=${q(version)}` : ""}`;
  const { data, error, reload } = useApi(() => get<Schemas["GraphOut"]>(path), [path]);
  const versions = useApi(() => get<Schemas["VersionOut"][]>(`/api/graphs/${q(graphRef)}/versions`), [graphRef]);
  const [selected, setSelected] = useState<{ node: string | null; edge: string | null }>({ node: null, edge: null });
  const [tab, setTab] = useState<"node" | "yaml" | "schemas">("node");
  const [text, setText] = useState("");
  const [diagnostics, setDiagnostics] = useState<{ errors: Diagnostic[]; warnings: Diagnostic[] } | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [saved, setSaved] = useState<Schemas["SavedOut"] | null>(null);

  const graph = data?.graph as GraphDoc | undefined;
  useEffect(() => {
    if (graph) setText(stringify(graph, { lineWidth: 0 }));
  }, [graph]);

  const pins = useMemo(() => {
    const at: Record<string, string[]> = {};
    for (const d of diagnostics?.errors ?? []) {
      const where = d.node_id ?? d.edge_id;
      if (where) (at[where] ??= []).push(`${d.category}/${d.code}: ${d.message}${d.hint ? ` (hint: ${d.hint})` : ""}`);
    }
    return at;
  }, [diagnostics]);

  async function validate() {
    setProblem(null);
    try {
      setDiagnostics(await post("/api/graphs/validate", { source: text, format: "yaml" }));
    } catch (cause) {
      setProblem(cause);
    }
  }

  async function save() {
    setProblem(null);
    try {
      const result = await put<Schemas["SavedOut"]>(`/api/graphs/${q(data!.id)}`, { source: text, format: "yaml" });
      setSaved(result);
      setDiagnostics(null);
      if (result.created) go("graphs", data!.id);
      reload();
      versions.reload();
    } catch (cause) {
      setProblem(cause);
    }
  }

  if (error) return <ErrorView error={error} />;
  if (!data || !graph) return <p aria-busy="true">Loading…</p>;
  const node = graph.nodes.find((n) => n.id === selected.node);
  const edge = graph.edges.find((e) => edgeId(e) === selected.edge);

  return (
    <section className="canvas-page">
      <div className="toolbar">
        <h1>
          {data.name} <code>{data.slug}</code>
        </h1>
        <label>
          Version{" "}
          <select
            aria-label="Version"
            value={data.version}
            onChange={(e) => go("graphs", data.id + `?version=${e.target.value}`)}
          >
            {(versions.data ?? [{ version: data.version, created_at: data.created_at, runs: 0, schema_version: "" }]).map(
              (v) => (
                <option key={v.version} value={v.version}>
                  v{v.version} · {when(v.created_at)} · {v.runs} runs
                </option>
              ),
            )}
          </select>
        </label>
        <a className="button" href={href("runs") + `?graph=${q(data.id)}`}>
          Runs
        </a>
        <StartRun graph={data} />
      </div>
      <div className="split">
        <GraphView
          graph={graph}
          problems={pins}
          selected={selected.node}
          onSelect={(n, e) => {
            setSelected({ node: n, edge: e });
            if (n || e) setTab("node");
          }}
        />
        <aside className="panel" aria-label="Details">
          <div role="tablist" className="tabs">
            {(["node", "yaml", "schemas"] as const).map((name) => (
              <button key={name} role="tab" type="button" aria-selected={tab === name} onClick={() => setTab(name)}>
                {name === "node" ? "Selection" : name === "yaml" ? "YAML" : "Schemas"}
              </button>
            ))}
          </div>
          {tab === "node" ? (
            node ? (
              <Fields title={`${node.type} ${node.id}`} value={node} problems={pins[node.id]} />
            ) : edge ? (
              <Fields title={`edge ${edgeId(edge)}`} value={edge} problems={pins[edgeId(edge)]} />
            ) : (
              <p className="muted">Select a node or an edge to see its fields.</p>
            )
          ) : null}
          {tab === "yaml" ? (
            <div className="yaml">
              <CodeEditor language="yaml" value={text} onChange={setText} label="Graph YAML" />
              <div className="row">
                <button type="button" onClick={() => void validate()}>
                  Validate
                </button>
                <button type="button" onClick={() => void save()} disabled={data.source_type === "system"}>
                  Save as a new version
                </button>
              </div>
            </div>
          ) : null}
          {tab === "schemas" ? <SchemaList graph={graph} /> : null}
          <ErrorView error={problem} onDismiss={() => setProblem(null)} />
          {diagnostics ? <Diagnostics result={diagnostics} /> : null}
          {saved ? <SaveReport saved={saved} /> : null}
        </aside>
      </div>
    </section>
  );
}

function Fields({ title, value, problems }: { title: string; value: object; problems?: string[] }) {
  return (
    <div className="fields">
      <h2>{title}</h2>
      {problems?.map((p) => (
        <p key={p} className="error">
          {p}
        </p>
      ))}
      <dl>
        {Object.entries(value)
          .filter(([, v]) => v !== null && v !== undefined)
          .map(([key, v]) => (
            <div key={key}>
              <dt>{key}</dt>
              <dd>{typeof v === "string" ? <pre>{v}</pre> : <pre>{JSON.stringify(v, null, 2)}</pre>}</dd>
            </div>
          ))}
      </dl>
    </div>
  );
}

function SchemaList({ graph }: { graph: GraphDoc }) {
  return (
    <div className="fields">
      {(graph.schemas ?? []).map((s) => (
        <details key={s.id}>
          <summary>
            <code>{s.id}</code> v{s.version} {s.description ? `— ${s.description}` : ""}
          </summary>
          <pre>{JSON.stringify(s.schema, null, 2)}</pre>
        </details>
      ))}
    </div>
  );
}

function Diagnostics({ result }: { result: { errors: Diagnostic[]; warnings: Diagnostic[] } }) {
  if (!result.errors.length && !result.warnings.length) return <p className="notice" role="status">The graph is valid.</p>;
  return (
    <ul className="diagnostics" aria-label="Validation">
      {[...result.errors.map((d) => ["error", d] as const), ...result.warnings.map((d) => ["warning", d] as const)].map(
        ([severity, d], index) => (
          <li key={index} className={severity}>
            <strong>
              {severity} {d.category}/{d.code}
            </strong>{" "}
            {d.node_id ? <code>{d.node_id}</code> : d.edge_id ? <code>{d.edge_id}</code> : null} {d.message}
            {d.hint ? <div className="hint">hint: {d.hint}</div> : null}
          </li>
        ),
      )}
    </ul>
  );
}

function SaveReport({ saved }: { saved: Schemas["SavedOut"] }) {
  return (
    <div className="notice" role="status">
      {saved.created ? `Stored version ${saved.version}.` : `Unchanged: still version ${saved.version}.`}
      {saved.schema_changes?.length ? (
        <ul>
          {saved.schema_changes!.map((c) => (
            <li key={c.schema_id}>
              <code>{c.schema_id}</code> {c.level} ({c.status}) {c.from_version ?? "–"} → {c.to_version ?? "–"}
              {c.findings.length ? <ul>{c.findings.map((f) => <li key={f}>{f}</li>)}</ul> : null}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** Start a run: a form generated from the graph's `input_schema`. */
function StartRun({ graph }: { graph: Schemas["GraphOut"] }) {
  const [open, setOpen] = useState(false);
  const [problem, setProblem] = useState<unknown>(null);
  const schema = ((graph.graph as GraphDoc).input_schema ?? {}) as {
    properties?: Record<string, { type?: string; default?: unknown; description?: string }>;
    required?: string[];
  };
  const fields = Object.entries(schema.properties ?? {});
  const [values, setValues] = useState<Record<string, string>>({});

  async function start() {
    setProblem(null);
    const input: Record<string, unknown> = {};
    for (const [name, prop] of fields) {
      const raw = values[name];
      if (raw === undefined || raw === "") continue;
      input[name] = prop.type === "string" || prop.type === undefined ? raw : parse(raw);
    }
    try {
      const started = await post<Schemas["StartedOut"]>("/api/runs", { graph: graph.id, input });
      go("runs", started.run_id);
    } catch (cause) {
      setProblem(cause);
    }
  }

  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Start a run…
      </button>
    );
  return (
    <form
      className="start-run"
      aria-label="Run input"
      onSubmit={(e) => {
        e.preventDefault();
        void start();
      }}
    >
      {fields.map(([name, prop]) => (
        <label key={name}>
          {name}
          {schema.required?.includes(name) ? " *" : ""}
          {prop.type === "string" || prop.type === undefined ? (
            <textarea
              name={name}
              value={values[name] ?? ""}
              placeholder={prop.default !== undefined ? String(prop.default) : prop.description ?? ""}
              onChange={(e) => setValues({ ...values, [name]: e.target.value })}
            />
          ) : (
            <input
              name={name}
              value={values[name] ?? ""}
              placeholder={`${prop.type} (JSON)`}
              onChange={(e) => setValues({ ...values, [name]: e.target.value })}
            />
          )}
        </label>
      ))}
      <div className="row">
        <button type="submit">Start</button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
      <ErrorView error={problem} />
    </form>
  );
}

function parse(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
