import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { parse as parseYaml, stringify } from "yaml";
import { get, post, q, type Schemas } from "../api/client";
import { forBrowser } from "../api/wording";
import { CodeEditor } from "../components/CodeEditor";
import { ErrorView, Hint } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { GraphView } from "../graph/GraphView";
import {
  addNode,
  compact,
  connect,
  moveNode,
  NODE_DESCRIPTIONS,
  NODE_TYPES,
  removeEdges,
  removeNodes,
  renameNode,
  tidy,
  updateEdge,
  updateNode,
} from "../graph/edit";
import { edgeId, type GraphDoc } from "../graph/model";
import { go, href } from "../router";
import { useHistory } from "./canvas/history";
import { EdgeForm, NodeForm } from "./canvas/NodeForm";
import { SchemaEditor } from "./canvas/SchemaEditor";
import { dropDraft, readDraft, writeDraft } from "./canvas/drafts";
import { StartRun } from "./canvas/StartRun";
import { Notice } from "../components/bits";

// Shown only on demand, and they bring the text differ: fetched when first opened.
const SaveDialog = lazy(() => import("./canvas/SaveDialog").then((m) => ({ default: m.SaveDialog })));
const Versions = lazy(() => import("./canvas/Versions").then((m) => ({ default: m.Versions })));

interface Diagnostic {
  category: string;
  code: string;
  message: string;
  node_id?: string | null;
  edge_id?: string | null;
  hint?: string | null;
}

type Tab = "selection" | "yaml" | "schemas" | "versions";

/** One graph: the canvas to edit it on, the selected node's or edge's form, its YAML kept in
 * step both ways, its schema registry, validation pinned on the canvas, and saving. */
export function CanvasPage({ graphRef, version }: { graphRef: string; version: string | null }) {
  const path = `/api/graphs/${q(graphRef)}${version ? `?version=${q(version)}` : ""}`;
  const loaded = useApi(() => get<Schemas["GraphOut"]>(path), [path]);
  const [base, setBase] = useState<Schemas["GraphOut"] | null>(null);
  const history = useHistory<GraphDoc | null>(null);
  const draft = history.value;
  const [selected, setSelected] = useState<{ node: string | null; edge: string | null }>({ node: null, edge: null });
  const [tab, setTab] = useState<Tab>("selection");
  const [diagnostics, setDiagnostics] = useState<{ errors: Diagnostic[]; warnings: Diagnostic[] } | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [adding, setAdding] = useState<string>(NODE_TYPES[0]);
  const [focus, setFocus] = useState<string | null>(null);
  const freeSpot = useRef<(() => { x: number; y: number }) | null>(null);

  const { reset, commit: record } = history;
  useEffect(() => {
    const stored = loaded.data;
    if (!stored) return;
    setBase(stored);
    reset(compact(stored.graph as GraphDoc));
    // Edits not saved before a reload (or a visit to a run) come back, over the version they
    // started from: saving then meets any version stored since as a conflict, never overwrites it.
    const kept = stored.source_type !== "system" ? readDraft(stored.id) : null;
    if (!kept || (version !== null && Number(version) !== kept.base)) return;
    if (JSON.stringify(kept.graph) === JSON.stringify(compact(stored.graph as GraphDoc))) {
      dropDraft(stored.id); // what it held is stored now
      return;
    }
    const restore = (on: Schemas["GraphOut"]) => {
      setBase(on);
      reset(compact(on.graph as GraphDoc));
      record(kept.graph);
      setNotice(`Restored your unsaved edits of ${new Date(kept.savedAt).toLocaleString()}, made on version ${kept.base}.`);
    };
    if (kept.base === stored.version) restore(stored);
    else get<Schemas["GraphOut"]>(`/api/graphs/${q(stored.id)}?version=${kept.base}`).then(restore, () => dropDraft(stored.id));
  }, [loaded.data, reset, record, version]);

  const original = useMemo(() => (base ? JSON.stringify(compact(base.graph as GraphDoc)) : ""), [base]);
  const dirty = useMemo(() => draft !== null && JSON.stringify(draft) !== original, [draft, original]);
  const editable = base !== null && base.source_type !== "system";
  useEffect(() => {
    if (!base || !draft || !editable) return;
    if (dirty) writeDraft(base.id, draft, base.version);
    else dropDraft(base.id);
  }, [base, draft, dirty, editable]);

  const pins = useMemo(() => {
    const at: Record<string, string[]> = {};
    for (const d of diagnostics?.errors ?? []) {
      const where = d.node_id ?? d.edge_id;
      const hint = forBrowser(d.hint);
      if (where) (at[where] ??= []).push(`${d.category}/${d.code}: ${d.message}${hint ? ` (hint: ${hint})` : ""}`);
    }
    return at;
  }, [diagnostics]);

  const commit = useCallback(
    (next: GraphDoc, coalesce?: string) => {
      history.commit(next, coalesce);
      setDiagnostics(null);
    },
    [history],
  );

  const { undo, redo } = history;
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      const inside = (event.target as HTMLElement | null)?.closest("input, textarea, select, .cm-editor");
      if (inside || !(event.ctrlKey || event.metaKey)) return;
      if (event.key.toLowerCase() === "z" && !event.shiftKey) {
        event.preventDefault();
        undo();
      } else if (event.key.toLowerCase() === "y" || (event.key.toLowerCase() === "z" && event.shiftKey)) {
        event.preventDefault();
        redo();
      }
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [undo, redo]);

  async function validate() {
    setProblem(null);
    try {
      setDiagnostics(await post("/api/graphs/validate", { graph: draft }));
    } catch (cause) {
      setProblem(cause);
    }
  }

  if (loaded.error) return <ErrorView error={loaded.error} />;
  if (!base || !draft) return <p aria-busy="true">Loading…</p>;
  const node = draft.nodes.find((n) => n.id === selected.node);
  const edge = draft.edges.find((e) => edgeId(e) === selected.edge);

  return (
    <section className="canvas-page">
      <div className="toolbar">
        <h1>
          {base.name} <code>{base.slug}</code>
        </h1>
        <VersionPicker base={base} />
        {editable ? (
          <>
            <span className="group" role="group" aria-label="Add a node">
              <select
                aria-label="Node type"
                aria-describedby="node-type-description"
                value={adding}
                onChange={(e) => setAdding(e.target.value)}
              >
                {NODE_TYPES.map((t) => (
                  <option key={t} title={NODE_DESCRIPTIONS[t]}>
                    {t}
                  </option>
                ))}
              </select>
              <button
                type="button"
                onClick={() => {
                  const made = addNode(draft, adding, freeSpot.current?.() ?? { x: 0, y: 0 });
                  commit(made.graph);
                  setSelected({ node: made.id, edge: null });
                  setFocus(made.id);
                  setTab("selection");
                }}
              >
                Add node
              </button>
              <span className="muted node-type-description" id="node-type-description">
                {NODE_DESCRIPTIONS[adding as (typeof NODE_TYPES)[number]]}
              </span>
            </span>
            <button
              type="button"
              title="Forget where nodes were put and lay the graph out again"
              disabled={!draft.nodes.some((n) => n.position)}
              onClick={() => commit(tidy(draft))}
            >
              Tidy layout
            </button>
            <button type="button" onClick={history.undo} disabled={!history.canUndo} aria-keyshortcuts="Control+Z">
              Undo
            </button>
            <button type="button" onClick={history.redo} disabled={!history.canRedo} aria-keyshortcuts="Control+Y">
              Redo
            </button>
          </>
        ) : (
          <span className="badge system" title="System graphs are read-only: fork one to change it">
            read-only
          </span>
        )}
        <button type="button" onClick={() => void validate()}>
          Validate
        </button>
        {editable ? (
          <button type="button" onClick={() => setSaving(true)} disabled={!dirty}>
            Save…
          </button>
        ) : null}
        {dirty ? (
          <>
            <span className="muted" title="Kept in this browser until you save or discard them">
              unsaved changes
            </span>
            <button
              type="button"
              className="link"
              onClick={() => {
                history.reset(compact(base.graph as GraphDoc));
                setNotice("Your unsaved edits were discarded.");
              }}
            >
              Discard edits
            </button>
          </>
        ) : null}
        <a className="button" href={href("runs") + `?graph=${q(base.id)}`}>
          Runs
        </a>
        <StartRun graph={base} unsaved={dirty} />
      </div>
      <ErrorView error={problem} onDismiss={() => setProblem(null)} />
      <Notice>{notice}</Notice>
      {diagnostics ? <Diagnostics result={diagnostics} /> : null}
      {saving ? (
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <SaveDialog
            graphId={base.id}
            base={base}
            draft={draft}
            onClose={() => setSaving(false)}
            onSaved={(saved) => {
              dropDraft(base.id);
              setSaving(false);
              setNotice(saved.created ? `Stored version ${saved.version}.` : `Unchanged: still version ${saved.version}.`);
              if (version) go("graphs", base.id);
              else loaded.reload();
            }}
            onTakeTheirs={(latest) => {
              dropDraft(base.id);
              setSaving(false);
              setBase(latest);
              history.reset(compact(latest.graph as GraphDoc));
              setNotice(`Loaded version ${latest.version}; your edit was discarded.`);
            }}
          />
        </Suspense>
      ) : null}
      <div className="split">
        <GraphView
          graph={draft}
          problems={pins}
          selected={selected.node}
          editable={editable}
          freeSpot={freeSpot}
          focus={focus}
          onSelect={(n, e) => {
            setSelected({ node: n, edge: e });
            if (n || e) setTab("selection");
          }}
          onMoved={(id, at) => commit(moveNode(draft, id, at))}
          onConnected={(from, to) => {
            const next = connect(draft, from, to);
            commit(next);
            setSelected({ node: null, edge: next.edges[next.edges.length - 1] ? edgeId(next.edges[next.edges.length - 1]) : null });
          }}
          onRemoved={(nodes, edges) => {
            commit(removeEdges(removeNodes(draft, nodes), edges));
            setSelected({ node: null, edge: null });
          }}
        />
        <aside className="panel" aria-label="Details">
          <div role="tablist" className="tabs">
            {(["selection", "yaml", "schemas", "versions"] as const).map((name) => (
              <button key={name} role="tab" type="button" aria-selected={tab === name} onClick={() => setTab(name)}>
                {{ selection: "Selection", yaml: "YAML", schemas: "Schemas", versions: "Versions" }[name]}
              </button>
            ))}
          </div>
          {tab === "selection" ? (
            node ? (
              <NodeForm
                key={node.id}
                graph={draft}
                node={node}
                problems={pins[node.id]}
                onChange={(fields) => commit(updateNode(draft, node.id, fields), `node:${node.id}:${Object.keys(fields).join(",")}`)}
                onRename={(to) => {
                  const next = renameNode(draft, node.id, to);
                  if (next !== draft) {
                    commit(next);
                    setSelected({ node: to, edge: null });
                  }
                }}
              />
            ) : edge ? (
              <EdgeForm
                graph={draft}
                edge={edge}
                problems={pins[edgeId(edge)]}
                onChange={(fields) => commit(updateEdge(draft, edgeId(edge), fields))}
              />
            ) : (
              <p className="muted">
                Select a node or an edge to edit it.{editable ? " Drag from a node's right handle to another node to connect them; Delete removes what is selected." : ""}
              </p>
            )
          ) : null}
          {tab === "yaml" ? <YamlView draft={draft} readOnly={!editable} onChange={(next) => commit(next, "yaml")} /> : null}
          {tab === "schemas" ? (
            <SchemaEditor graph={draft} onChange={(schemas) => commit({ ...draft, schemas }, "schemas")} />
          ) : null}
          {tab === "versions" ? (
            <Suspense fallback={<p aria-busy="true">Loading…</p>}>
              <Versions graph={base} onChanged={loaded.reload} />
            </Suspense>
          ) : null}
        </aside>
      </div>
    </section>
  );
}

function VersionPicker({ base }: { base: Schemas["GraphOut"] }) {
  const versions = useApi(() => get<Schemas["VersionOut"][]>(`/api/graphs/${q(base.id)}/versions`), [base.id, base.latest_version]);
  return (
    <label>
      Version{" "}
      <select aria-label="Version" value={base.version} onChange={(e) => go("graphs", base.id + `?version=${e.target.value}`)}>
        {(versions.data ?? [{ version: base.version, created_at: base.created_at, runs: 0, schema_version: "" }]).map((v) => (
          <option key={v.version} value={v.version}>
            v{v.version} · {when(v.created_at)} · {v.runs} runs
          </option>
        ))}
      </select>
    </label>
  );
}

/** The graph as YAML, kept in step with the canvas both ways: an edit here that parses becomes
 * the graph; one that does not says why and changes nothing. */
function YamlView({ draft, readOnly, onChange }: { draft: GraphDoc; readOnly: boolean; onChange: (next: GraphDoc) => void }) {
  const mine = useRef<GraphDoc | null>(null);
  const [text, setText] = useState(() => stringify(draft, { lineWidth: 0 }));
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (draft !== mine.current) setText(stringify(draft, { lineWidth: 0 }));
  }, [draft]);
  return (
    <div className="yaml">
      <CodeEditor
        language="yaml"
        value={text}
        readOnly={readOnly}
        label="Graph YAML"
        onChange={(next) => {
          setText(next);
          try {
            const parsed = parseYaml(next) as GraphDoc;
            if (!parsed || typeof parsed !== "object" || !Array.isArray(parsed.nodes) || !Array.isArray(parsed.edges)) {
              throw new Error("a graph needs `nodes:` and `edges:` lists");
            }
            setError(null);
            mine.current = parsed;
            onChange(parsed);
          } catch (cause) {
            setError((cause as Error).message);
          }
        }}
      />
      {error ? (
        <p className="error" role="alert">
          YAML: {error}
        </p>
      ) : null}
    </div>
  );
}

function Diagnostics({ result }: { result: { errors: Diagnostic[]; warnings: Diagnostic[] } }) {
  if (!result.errors.length && !result.warnings.length)
    return (
      <p className="notice" role="status">
        The graph is valid.
      </p>
    );
  return (
    <ul className="diagnostics" aria-label="Validation">
      {[...result.errors.map((d) => ["error", d] as const), ...result.warnings.map((d) => ["warning", d] as const)].map(
        ([severity, d], index) => (
          <li key={index} className={severity}>
            <strong>
              {severity} {d.category}/{d.code}
            </strong>{" "}
            {d.node_id ? <code>{d.node_id}</code> : d.edge_id ? <code>{d.edge_id}</code> : null} {d.message}
            <Hint hint={d.hint} />
          </li>
        ),
      )}
    </ul>
  );
}
