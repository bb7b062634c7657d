import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { parse as parseYaml, stringify } from "yaml";
import { get, post, q, type Schemas } from "../api/client";
import { forBrowser } from "../api/wording";
import { CodeEditor } from "../components/CodeEditor";
import { ErrorView, Hint } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { GraphView } from "../graph/GraphView";
import { addNode, compact, connect, moveNode, removeEdges, removeNodes, renameNode, tidy, updateNode } from "../graph/edit";
import { edgeId, type GraphDoc, type GraphNodeDef } from "../graph/model";
import { go, href, replaceQuery } from "../router";
import { OverlayNote } from "./Chat";
import { ChatPanel } from "./chat/ChatPanel";
import { type DraftRef, useDraftOverlay } from "./chat/overlay";
import { useHistory } from "./canvas/history";
import { EdgeForm, NodeForm } from "./canvas/NodeForm";
import { SchemaEditor } from "./canvas/SchemaEditor";
import { DraftKeeper, type KeepState, openGraph, unstored } from "./canvas/drafts";
import { Palette } from "./canvas/Palette";
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

const TABS = ["selection", "yaml", "schemas", "versions"] as const;
type Tab = (typeof TABS)[number];

/** One graph: the canvas to edit it on, a palette of node types, the selected node's or edge's
 * form, its YAML kept in step both ways, its run input and schema registry, validation pinned on
 * the canvas, edits kept as a draft on the server as they are made, and saving. A graph never
 * stored (being built) is its draft alone: version 0, nothing to run until it is stored.
 * `chat` (`?chat=` in the address) opens the chat on a stored graph in place of the details: a
 * conversation's id, or `new` for none yet; the draft it proposes is drawn over the graph. */
export function CanvasPage({
  graphRef,
  version,
  chat = null,
  tab: opened = null,
  evaluate = null,
}: {
  graphRef: string;
  version: string | null;
  chat?: string | null;
  tab?: string | null;
  evaluate?: string | null;
}) {
  const loaded = useApi(() => openGraph(graphRef, version), [graphRef, version]);
  const [base, setBase] = useState<Schemas["GraphOut"] | null>(null);
  const [keepState, setKeepState] = useState<KeepState>({ state: "idle" });
  const history = useHistory<GraphDoc | null>(null);
  const draft = history.value;
  const [selected, setSelected] = useState<{ node: string | null; edge: string | null }>({ node: null, edge: null });
  const [tab, setTab] = useState<Tab>(TABS.includes(opened as Tab) ? (opened as Tab) : "selection");
  const [diagnostics, setDiagnostics] = useState<{ errors: Diagnostic[]; warnings: Diagnostic[] } | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [focus, setFocus] = useState<string | null>(null);
  const freeSpot = useRef<(() => { x: number; y: number }) | null>(null);
  const [proposed, setProposed] = useState<DraftRef | null>(null);
  const chatSession = chat && chat !== "new" ? chat : null;
  const { overlay, error: overlayError } = useDraftOverlay(chat === null ? null : proposed);

  const { reset, commit: record } = history;
  useEffect(() => {
    const opened = loaded.data;
    if (!opened) return;
    const { stored, draft: kept } = opened;
    if (!stored) {
      // being built: the draft is all there is, and every edit of it is kept
      if (!kept) return;
      setBase(unstored(kept));
      reset(compact(kept.graph as GraphDoc));
      return;
    }
    setBase(stored);
    reset(compact(stored.graph as GraphDoc));
    // Edits not stored before a reload (or a visit to a run) come back, over the version they
    // started from: saving then meets any version stored since as a conflict, never overwrites it.
    if (!kept || kept.base_version === null || (version !== null && Number(version) !== kept.base_version)) return;
    const edits = compact(kept.graph as GraphDoc);
    if (JSON.stringify(edits) === JSON.stringify(compact(stored.graph as GraphDoc))) return; // stored since
    const restore = (on: Schemas["GraphOut"]) => {
      setBase(on);
      reset(compact(on.graph as GraphDoc));
      record(edits);
      const when = new Date(kept.saved_at * 1000).toLocaleString();
      setNotice(`Restored your unsaved edits of ${when}, made on version ${kept.base_version}.`);
    };
    if (kept.base_version === stored.version) restore(stored);
    else get<Schemas["GraphOut"]>(`/api/graphs/${q(stored.id)}?version=${kept.base_version}`).then(restore, setProblem);
  }, [loaded.data, reset, record, version]);

  const fresh = base !== null && base.version === 0;
  const original = useMemo(() => (base ? JSON.stringify(compact(base.graph as GraphDoc)) : ""), [base]);
  const dirty = useMemo(() => draft !== null && JSON.stringify(draft) !== original, [draft, original]);
  const editable = base !== null && base.source_type !== "system";
  const keeper = useMemo(
    () => (base && editable ? new DraftKeeper(base.slug, loaded.data?.draft ?? null, setKeepState) : null),
    [base?.slug, editable, loaded.data], // eslint-disable-line react-hooks/exhaustive-deps
  );
  useEffect(() => {
    if (!keeper || !draft || !base) return;
    if (fresh) keeper.keep(draft, null); // a graph being built is its draft, whatever it holds
    else if (dirty) keeper.keep(draft, base.version);
    else keeper.drop();
  }, [keeper, base, draft, dirty, fresh]);
  useEffect(() => {
    if (!keeper) return;
    const leaving = () => keeper.flush();
    window.addEventListener("pagehide", leaving);
    return () => window.removeEventListener("pagehide", leaving);
  }, [keeper]);

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

  function add(type: string, fields: Partial<GraphNodeDef> = {}, at?: { x: number; y: number }) {
    if (!draft) return;
    const made = addNode(draft, type, at ?? freeSpot.current?.() ?? { x: 0, y: 0 }, fields);
    commit(made.graph);
    setSelected({ node: made.id, edge: null });
    setFocus(made.id);
    setTab("selection");
  }

  return (
    <section className="canvas-page">
      <div className="toolbar">
        <h1>
          {base.name} <code>{base.slug}</code>
        </h1>
        {fresh ? (
          <span className="badge warn" title="Kept as a draft until it is stored as version 1">
            not stored yet
          </span>
        ) : (
          <VersionPicker base={base} />
        )}
        {editable ? (
          <>
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
          <button type="button" onClick={() => setSaving(true)} disabled={!dirty && !fresh}>
            Save…
          </button>
        ) : null}
        {editable ? <DraftState state={keepState} /> : null}
        {dirty && !fresh ? (
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
        {fresh ? null : (
          <button
            type="button"
            aria-pressed={chat !== null}
            title="A conversation that proposes changes to this graph, drawn on the canvas for you to accept or reject"
            onClick={() => replaceQuery("chat", chat === null ? "new" : null)}
          >
            Chat
          </button>
        )}
        {fresh ? null : (
          <>
            <a className="button" href={href("runs") + `?graph=${q(base.id)}`}>
              Runs
            </a>
            <StartRun graph={base} unsaved={dirty} />
          </>
        )}
      </div>
      <ErrorView error={problem} onDismiss={() => setProblem(null)} />
      <ErrorView error={overlayError} />
      <Notice>{notice}</Notice>
      {overlay ? <OverlayNote overlay={overlay} /> : null}
      {diagnostics ? <Diagnostics result={diagnostics} /> : null}
      {saving ? (
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <SaveDialog
            graphId={base.id}
            base={base}
            draft={draft}
            onClose={() => setSaving(false)}
            onSaved={(saved) => {
              keeper?.drop();
              setSaving(false);
              setNotice(saved.created ? `Stored version ${saved.version}.` : `Unchanged: still version ${saved.version}.`);
              if (version) go("graphs", base.id);
              else loaded.reload();
            }}
            onTakeTheirs={(latest) => {
              keeper?.drop();
              setSaving(false);
              setBase(latest);
              history.reset(compact(latest.graph as GraphDoc));
              setNotice(`Loaded version ${latest.version}; your edit was discarded.`);
            }}
          />
        </Suspense>
      ) : null}
      <div className={editable && !overlay ? "split with-palette" : "split"}>
        {editable && !overlay ? <Palette onAdd={add} /> : null}
        {overlay ? (
          <GraphView key={`draft:${overlay.draftId}:${proposed?.seq}`} graph={overlay.graph} marks={overlay.marks} markNotes={overlay.notes} />
        ) : (
          <GraphView
            key="graph"
            graph={draft}
            problems={pins}
            selected={selected.node}
            editable={editable}
            freeSpot={freeSpot}
            focus={focus}
            onDropNode={({ type, ...fields }, at) => add(type, fields, at)}
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
        )}
        {chat !== null ? (
          <ChatPanel
            sessionId={chatSession}
            graph={{ ref: base.slug, name: base.name }}
            onSession={(id) => replaceQuery("chat", id)}
            onDraft={setProposed}
            onAccepted={(graph, stored, session) => {
              setNotice(`The chat's draft is stored as version ${stored} of ${graph}.`);
              // the version stored now is the one to show (a system graph's draft is stored as a fork: its canvas)
              if (graph !== base.slug || version) window.location.hash = href("graphs", graph) + `?chat=${q(session)}`;
              else loaded.reload();
            }}
            onClose={() => replaceQuery("chat", null)}
          />
        ) : (
          <aside className="panel" aria-label="Details">
            <div role="tablist" className="tabs">
              {TABS.map((name) => (
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
                      if (focus === node.id) setFocus(to);
                    }
                  }}
                />
              ) : edge ? (
                <EdgeForm graph={draft} edge={edge} problems={pins[edgeId(edge)]} onGraph={commit} />
              ) : (
                <p className="muted">
                  Select a node or an edge to edit it.{editable ? " Drag from a node's right handle to another node to connect them; Delete removes what is selected." : ""}
                </p>
              )
            ) : null}
            {tab === "yaml" ? <YamlView draft={draft} readOnly={!editable} onChange={(next) => commit(next, "yaml")} /> : null}
            {tab === "schemas" ? (
              <SchemaEditor
                graph={draft}
                onChange={(schemas) => commit({ ...draft, schemas }, "schemas")}
                onInput={(input_schema) => commit({ ...draft, input_schema }, "input")}
              />
            ) : null}
            {tab === "versions" && !fresh ? (
              <Suspense fallback={<p aria-busy="true">Loading…</p>}>
                <Versions graph={base} onChanged={loaded.reload} evaluate={evaluate && /^\d+$/.test(evaluate) ? Number(evaluate) : null} />
              </Suspense>
            ) : null}
          </aside>
        )}
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

/** Where the edits stand on the server: kept as a draft (and whether it could be stored as it
 * is), being sent, or not kept, and why. */
function DraftState({ state }: { state: KeepState }) {
  switch (state.state) {
    case "idle":
      return null;
    case "keeping":
      return (
        <span className="muted draft-state" data-testid="draft-state" aria-busy="true">
          keeping the draft…
        </span>
      );
    case "kept": {
      const errors = state.draft.errors.length;
      return (
        <span className="muted draft-state" data-testid="draft-state" title="Kept on the server until you store or discard the edits; Validate lists any problems">
          draft kept{errors ? ` · not valid yet (${errors} problem${errors === 1 ? "" : "s"})` : ""}
        </span>
      );
    }
    case "failed":
      return (
        <span className="error draft-state" data-testid="draft-state" role="alert">
          The draft was not kept: {state.error instanceof Error ? state.error.message : String(state.error)}. Your edits are
          still on this page.
        </span>
      );
  }
}
