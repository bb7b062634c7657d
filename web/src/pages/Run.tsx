import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { get, q, type Schemas } from "../api/client";
import { ENDED, RunActions } from "../components/RunActions";
import { LiveAnswers } from "../api/answers";
import { followRun, type RunEvent } from "../api/events";
import { ErrorView } from "../components/ErrorView";
import { FailureView } from "../components/FailureView";
import { useApi, when } from "../components/useApi";
import { GraphView } from "../graph/GraphView";
import { END, type GraphDoc, reached } from "../graph/model";
import { href, replaceWith } from "../router";
import { Decisions, decisionsOf, PausedBanner } from "./Decisions";
import { Ledger } from "./Ledger";
import { RunDiff } from "./RunDiff";

// The node panel brings the override editor (CodeMirror) and the schema checker: fetched
// when a node is first picked, so the run's graph draws without them.
const NodePanel = lazy(() => import("./NodePanel").then((m) => ({ default: m.NodePanel })));

type Detail = Schemas["RunDetailOut"];
type NodeRun = Schemas["NodeRunOut"];

/** What an event says a node's colour is now. */
const EVENT_STATUS: Record<string, string> = {
  "node:start": "running",
  "node:complete": "completed",
  "node:error": "failed",
  "node:skipped": "skipped",
  "node:stale": "stale",
  "node:overridden": "overridden",
  "node:queued": "pending",
  "node:rerun": "pending",
  "node:reviewed": "completed",
};

/** One run: the graph coloured live from the run's events, and per node what was recorded. */
export function RunPage({ runId }: { runId: string }) {
  const run = useApi(() => get<Detail>(`/api/runs/${q(runId)}`), [runId]);
  const detail = run.data;
  // A short id (as pages and the CLI show them) opens the run; the address then names it whole.
  useEffect(() => {
    if (detail && detail.id !== runId) replaceWith("runs", detail.id);
  }, [detail, runId]);
  const graphPath = detail ? `/api/graphs/${q(detail.graph_id)}?version=${detail.graph_version}` : null;
  const graph = useApi(
    () => (graphPath ? get<Schemas["GraphOut"]>(graphPath) : Promise.resolve(null)),
    [graphPath],
  );
  const [live, setLive] = useState<Record<string, string>>({});
  const [selected, setSelected] = useState<string | null>(null);
  const [view, setView] = useState<"node" | "ledger" | "diff">("node");
  const [problem, setProblem] = useState<unknown>(null);
  const reloadSoon = useDebounced(run.reload, 150);
  // The answers nodes are writing now, for the node panel; only while the page follows the run.
  const answers = useMemo(() => new LiveAnswers(), [runId]);

  const lastEvent = useRef(0);
  const onEvent = useCallback(
    (event: RunEvent) => {
      lastEvent.current = event.id;
      answers.take(event);
      const status = EVENT_STATUS[event.event];
      if (status && event.node_id) setLive((now) => ({ ...now, [event.node_id!]: status }));
      if (event.event.startsWith("run:") || event.event.startsWith("workflow:") || status === "completed") reloadSoon();
    },
    [reloadSoon, answers],
  );

  // Follow the events while the run can still change by itself; a run that ended starts again
  // only by a correction or a resume, and the read after it shows the run going again.
  const ended = detail ? ENDED.includes(detail.status) && !detail.executing_here : true;
  useEffect(() => {
    if (ended) return undefined;
    const stop = followRun(runId, onEvent, run.reload, lastEvent.current);
    return () => {
      stop();
      answers.clear();
    };
  }, [runId, ended, onEvent, run.reload, answers]);

  const current = useMemo(() => currentRuns(detail?.nodes ?? []), [detail]);
  const statuses = useMemo(() => {
    const stored: Record<string, string> = {};
    for (const [node, nodeRun] of Object.entries(current)) stored[node] = nodeRun.status;
    const doc = graph.data?.graph as GraphDoc | undefined;
    return { ...stored, ...(doc && detail ? shownStatuses(doc, detail, stored) : {}), ...live };
  }, [current, live, graph.data, detail]);

  // A fresh read of the run is the truth: the live colours only fill the gap until it comes.
  useEffect(() => setLive({}), [detail]);

  if (run.error) return <ErrorView error={run.error} />;
  if (!detail) return <p aria-busy="true">Loading…</p>;
  const doc = graph.data?.graph as GraphDoc | undefined;
  const waiting = doc?.nodes.find(
    (n) => n.type === "HUMAN_REVIEW" && detail.status === "paused" && current[n.id]?.status === "pending",
  );

  return (
    <section className="run-page">
      <div className="toolbar">
        <h1>
          Run <code data-testid="run-id">{detail.id.slice(0, 8)}</code>
        </h1>
        <span className={`pill status-${detail.status}`} data-testid="run-status">
          {detail.status}
        </span>
        <a href={href("graphs", detail.graph_id) + `?version=${detail.graph_version}`}>
          {detail.graph} v{detail.graph_version}
        </a>
        {detail.graph_latest_version > detail.graph_version ? (
          <span className="badge warn">graph has v{detail.graph_latest_version}</span>
        ) : null}
        <span className="muted">
          {when(detail.created_at)} · {detail.tokens_input + detail.tokens_output} tokens · ${detail.cost_usd.toFixed(4)} ·{" "}
          {detail.execution_s.toFixed(2)} s{detail.corrections ? ` · ${detail.corrections} corrections` : ""}
        </span>
        <RunActions
          run={detail}
          onDone={() => {
            setProblem(null);
            run.reload();
          }}
          onError={setProblem}
        />
      </div>
      <ErrorView error={problem ?? graph.error} onDismiss={problem ? () => setProblem(null) : undefined} />
      {detail.error ? <RunFailure error={detail.error as Record<string, unknown>} nodes={current} /> : null}
      <OutdatedBanner detail={detail} />
      <PausedBanner status={detail.status} decisions={decisionsOf(detail)} nodes={detail.nodes} />
      {detail.stale.length ? (
        <p className="warning" role="status">
          Stale: {detail.stale.join(", ")}. They read a value that was corrected since; rerun them to bring them up to date.
        </p>
      ) : null}
      {detail.status === "paused" && detail.wake_at ? (
        <p className="notice" role="status" data-testid="wake-at">
          Parked by a WAIT node: the run continues at {when(detail.wake_at)} (the server picks it up then).
        </p>
      ) : null}
      {waiting ? (
        <p className="notice" role="status">
          Waiting for your review at <button type="button" className="link" onClick={() => { setSelected(waiting.id); setView("node"); }}>{waiting.label || waiting.id}</button>.
        </p>
      ) : null}
      <div className="split">
        {doc ? (
          <GraphView graph={doc} statuses={statuses} selected={selected} onSelect={(n) => { setSelected(n); setView("node"); }} />
        ) : (
          <div className="canvas loading">Loading the graph…</div>
        )}
        <aside className="panel" aria-label="Details">
          <div role="tablist" className="tabs">
            {(["node", "ledger", "diff"] as const).map((name) => (
              <button key={name} role="tab" type="button" aria-selected={view === name} onClick={() => setView(name)}>
                {name === "node" ? "Node" : name === "ledger" ? "Ledger" : "Compare"}
              </button>
            ))}
          </div>
          <Suspense fallback={<p aria-busy="true">Loading…</p>}>
            {view === "node" ? (
              selected && doc ? (
                <NodePanel
                  key={selected}
                  run={detail}
                  graph={doc}
                  nodeId={selected}
                  nodeRuns={detail.nodes.filter((n) => n.node_id === selected)}
                  waiting={waiting?.id === selected}
                  downstream={downstreamOf(doc, selected)}
                  onChanged={run.reload}
                  answers={answers}
                />
              ) : (
                <RunSummary detail={detail} />
              )
            ) : null}
            {view === "ledger" ? <Ledger runId={detail.id} onChanged={run.reload} /> : null}
            {view === "diff" ? <RunDiff run={detail} /> : null}
</Suspense>
        </aside>
      </div>
    </section>
  );
}

/** Outputs shown as they were stored because the graph's schema moved on since the run: which
 * schema and versions, and the migration that would bring each forward, in words a person can act
 * on in the graph's YAML tab. */
function OutdatedBanner({ detail }: { detail: Detail }) {
  const outdated = detail.nodes.filter((n) => n.outdated);
  if (!outdated.length) return null;
  return (
    <div className="warning" role="status" data-testid="outdated-banner">
      <strong>
        {outdated.length === 1 ? "One output predates" : `${outdated.length} outputs predate`} the graph's current schema
        and {outdated.length === 1 ? "is" : "are"} shown as stored.
      </strong>
      <ul>
        {outdated.map((n) => {
          const notice = n.outdated!;
          const label = n.activation > 1 ? `${n.node_id} #${n.activation}` : n.node_id;
          return (
            <li key={n.id}>
              <code>{label}</code>: stored with schema <code>{notice.schema_id}</code> {notice.stored_version}; the graph
              now has {notice.current_version}.{" "}
              {notice.migration ? (
                <>
                  To show it in today's shape, add this migration to the graph (in the{" "}
                  <a href={href("graphs", detail.graph_id)}>graph's YAML tab</a>), with a migrate_expr that turns the old
                  value into the new one, and save:
                  <pre>{migrationYaml(notice.migration)}</pre>
                </>
              ) : (
                <>
                  {notice.message}. {notice.fix}.
                </>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function migrationYaml(m: { schema_id: string; from_version: string; to_version: string }): string {
  return [
    "migrations:",
    `  - schema_id: ${m.schema_id}`,
    `    from_version: ${m.from_version}`,
    `    to_version: ${m.to_version}`,
    "    migrate_expr: \"old => ({ ...old })\"",
  ].join("\n");
}

function RunSummary({ detail }: { detail: Detail }) {
  return (
    <div className="fields">
      <p className="muted">Select a node to see what it was given, what it answered, and to correct it.</p>
      <Decisions decisions={decisionsOf(detail).filter((d) => !d.node_id && !d.node_run_id)} label="Scheduling decisions on the run" />
      <h2>Input</h2>
      <pre>{JSON.stringify(detail.input, null, 2)}</pre>
      {detail.output !== null && detail.output !== undefined ? (
        <>
          <h2>Output</h2>
          <pre>{JSON.stringify(detail.output, null, 2)}</pre>
        </>
      ) : null}
    </div>
  );
}

/** The current activation of each node. */
function currentRuns(nodes: NodeRun[]): Record<string, NodeRun> {
  const at: Record<string, NodeRun> = {};
  for (const n of nodes) {
    const seen = at[n.node_id];
    if (n.current || !seen || n.activation > seen.activation) at[n.node_id] = n;
  }
  return at;
}

/** Every node after `nodeId` (what a downstream policy can touch), nearest first. */
export function downstreamOf(graph: GraphDoc, nodeId: string): string[] {
  return [...reached(graph, [nodeId], "down")].filter(([id, steps]) => steps > 0 && id !== END).map(([id]) => id);
}

function useDebounced(fn: () => void, ms: number): () => void {
  const timer = useRef<number | undefined>(undefined);
  return useCallback(() => {
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(fn, ms);
  }, [fn, ms]);
}

/** Why a run failed: the failed node's own error (kind, message, what to do) when a node failed. */
function RunFailure({ error, nodes }: { error: Record<string, unknown>; nodes: Record<string, { error?: unknown }> }) {
  const node = typeof error.node_id === "string" ? error.node_id : null;
  const own = node ? (nodes[node]?.error as Record<string, unknown> | null | undefined) : null;
  return <FailureView error={own ?? error} node={node} />;
}

/** What the canvas shows beyond each node's stored status: a review that waits for a person is
 * `waiting` (not `pending`, like a node not yet started), and a node that read, directly or
 * through other nodes, from a stale one is stale too: bringing it up to date reruns it. */
function shownStatuses(doc: GraphDoc, detail: Detail, stored: Record<string, string>): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const n of doc.nodes) {
    if (n.type === "HUMAN_REVIEW" && detail.status === "paused" && stored[n.id] === "pending") shown[n.id] = "waiting";
  }
  for (const [id, steps] of reached(doc, detail.stale, "down")) {
    if (steps > 0 && stored[id] === "completed") shown[id] = "stale"; // a person's override keeps its value
  }
  return shown;
}
