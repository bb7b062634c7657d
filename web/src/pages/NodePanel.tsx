import { useLayoutEffect, useRef, useState } from "react";
import { type LiveAnswer, type LiveAnswers, useLiveAnswer } from "../api/answers";
import { get, post, q, type Schemas } from "../api/client";
import { CodeEditor } from "../components/CodeEditor";
import { ErrorView } from "../components/ErrorView";
import { FailureView } from "../components/FailureView";
import { useApi, when } from "../components/useApi";
import { END, type GraphDoc, source, target } from "../graph/model";
import { schemaErrors } from "../schema/check";
import { Head, Notice } from "../components/bits";
import { Decisions, decisionsOf, ofNode } from "./Decisions";

type NodeRun = Schemas["NodeRunOut"];
type Detail = Schemas["NodeRunDetailOut"];

const POLICIES = {
  KEEP: "Keep: downstream stays as it is",
  INVALIDATE: "Invalidate: the direct downstream becomes stale",
  RERUN: "Rerun the direct downstream",
  RERUN_ALL: "Rerun everything downstream",
} as const;
type Policy = keyof typeof POLICIES;

/** One node of a run: what it was given, what it answered, and the corrections a person can make. */
export function NodePanel(props: {
  run: Schemas["RunDetailOut"];
  graph: GraphDoc;
  nodeId: string;
  nodeRuns: NodeRun[];
  waiting: boolean;
  downstream: string[];
  onChanged: () => void;
  answers: LiveAnswers;
}) {
  const { run, graph, nodeId, nodeRuns, waiting, downstream, onChanged, answers } = props;
  const def = graph.nodes.find((n) => n.id === nodeId);
  const current = nodeRuns.find((n) => n.current) ?? nodeRuns[nodeRuns.length - 1];
  const detail = useApi(
    () => (current ? get<Detail>(`/api/node-runs/${q(current.id)}`) : Promise.resolve(null)),
    [current?.id, current?.status],
  );
  const [problem, setProblem] = useState<unknown>(null);
  const [said, setSaid] = useState<string | null>(null);
  const live = useLiveAnswer(answers, run.id, nodeId);

  async function correct(path: string, body: unknown, what: string) {
    setProblem(null);
    setSaid(null);
    try {
      const result = await post<Schemas["CorrectionOut"]>(`/api/runs/${q(run.id)}/${path}`, body);
      setSaid(
        `${what}.` +
          (result.stale.length ? ` Stale now: ${result.stale.join(", ")}.` : "") +
          (result.queued.length ? ` Queued: ${result.queued.join(", ")}.` : ""),
      );
      onChanged();
    } catch (cause) {
      setProblem(cause);
    }
  }

  if (!def) return <p className="muted">{nodeId} is not a node of this graph.</p>;
  const outEdges = graph.edges.filter((e) => source(e) === nodeId && e.schema_id);
  const schemas = [...new Set(outEdges.map((e) => e.schema_id))] // two edges, one schema: checked once
    .map((id) => graph.schemas?.find((s) => s.id === id))
    .filter((s): s is NonNullable<typeof s> => Boolean(s));

  return (
    <div className="fields node-panel" data-testid="node-panel">
      <h2>
        {def.type} {def.label || nodeId} <code>{nodeId}</code>
      </h2>
      {/* The page's read of the run may predate the node's start: its answer shows all the same. */}
      {!current ? live ? <AnswerSoFar answer={live} /> : <p className="muted">Not executed in this run.</p> : null}
      <Decisions decisions={ofNode(decisionsOf(run), nodeId, nodeRuns.map((n) => n.id))} label="Scheduling decisions" />
      {current ? (
        <>
          <p>
            <span className={`pill status-${current.status}`}>{current.status}</span> activation {current.activation}
            {current.started_at ? ` · ${when(current.started_at)}` : ""}
            {current.duration_s !== null && current.duration_s !== undefined ? ` · ${current.duration_s.toFixed(2)} s` : ""} ·{" "}
            {current.tokens_input}+{current.tokens_output} tokens · ${current.cost_usd.toFixed(4)}
          </p>
          {current.status === "stale" ? (
            <p className="warning">
              This output read a value that was corrected since.{" "}
              <button type="button" onClick={() => void correct(`nodes/${q(nodeId)}/rerun`, {}, `${nodeId} runs again`)}>
                Rerun {nodeId}
              </button>
            </p>
          ) : null}
          {current.error ? <FailureView error={current.error as Record<string, unknown>} /> : null}
          {current.override !== null && current.override !== undefined ? (
            <p className="muted">
              Overridden by {current.override_by}
              {current.override_note ? `: ${current.override_note}` : ""}. The model's original is kept below.
            </p>
          ) : null}
          {live ? (
            <AnswerSoFar answer={live} />
          ) : (
            <>
              <h3>Effective output</h3>
              <pre data-testid="effective-output" tabIndex={0}>{JSON.stringify(current.effective_output, null, 2)}</pre>
            </>
          )}
          {current.override !== null && current.override !== undefined ? (
            <details>
              <summary>Original output</summary>
              <pre>{JSON.stringify(current.output, null, 2)}</pre>
            </details>
          ) : null}
          <details>
            <summary>Input snapshot (rendered prompts, response_format, tools)</summary>
            {detail.error ? <ErrorView error={detail.error} /> : null}
            <pre>{detail.data ? JSON.stringify(detail.data.input_snapshot, null, 2) : "…"}</pre>
          </details>
          <Attempts attempts={current.attempts as Attempt[]} />
          <ToolRounds rounds={(detail.data?.input_snapshot as { tool_rounds?: ToolRound[] } | null)?.tool_rounds} />
          {nodeRuns.length > 1 ? (
            <details>
              <summary>Earlier activations ({nodeRuns.length - 1})</summary>
              <ul>
                {nodeRuns
                  .filter((n) => n !== current)
                  .map((n) => (
                    <li key={n.id}>
                      #{n.activation} {n.status} <code>{n.id.slice(0, 8)}</code>
                    </li>
                  ))}
              </ul>
            </details>
          ) : null}
          {def.type === "LLM_CALL" ? <Replay nodeRunId={current.id} /> : null}
        </>
      ) : null}
      {waiting ? (
        <Review
          value={detail.data?.input_snapshot ? (detail.data.input_snapshot as { value?: unknown }).value : undefined}
          prompt={detail.data?.input_snapshot ? String((detail.data.input_snapshot as { review_prompt?: string }).review_prompt ?? "") : ""}
          schemas={schemas}
          onApprove={(note) => void correct(`nodes/${q(nodeId)}/review`, { approve: true, note }, "Approved")}
          onSubmit={(value, note) => void correct(`nodes/${q(nodeId)}/review`, { value, note }, "Review submitted")}
        />
      ) : current && ["completed", "overridden", "stale", "failed"].includes(current.status) ? (
        <Override
          initial={current.effective_output}
          schemas={schemas}
          downstream={downstream}
          direct={graph.edges.filter((e) => source(e) === nodeId && target(e) !== END).map(target)}
          onSave={(value, policy, note) =>
            void correct(`nodes/${q(nodeId)}/override`, { value, policy, note }, `${nodeId} overridden (${policy})`)
          }
          onRerun={() => void correct(`nodes/${q(nodeId)}/rerun`, {}, `${nodeId} runs again`)}
        />
      ) : null}
      <ErrorView error={problem} onDismiss={() => setProblem(null)} />
      <Notice>{said}</Notice>
    </div>
  );
}

/** The answer the model is writing now, as plain text, kept scrolled to its end unless the reader
 * scrolled up; the committed output replaces it when the node ends. */
function AnswerSoFar({ answer }: { answer: LiveAnswer }) {
  const box = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  useLayoutEffect(() => {
    if (box.current && following.current) box.current.scrollTop = box.current.scrollHeight;
  }, [answer.text]);
  return (
    <>
      <h3>
        Answer so far{answer.attempt > 1 ? <span className="muted"> (attempt {answer.attempt})</span> : null}
      </h3>
      {answer.again !== null ? (
        <p className="muted" data-testid="asked-again">
          asked again: {answer.again}
        </p>
      ) : null}
      {answer.incomplete ? (
        <p className="muted" data-testid="answer-incomplete">
          The beginning of this answer was not kept for pages opened while it arrived; the whole answer shows
          here when the node completes.
        </p>
      ) : null}
      <pre
        ref={box}
        className="answer"
        role="log"
        aria-live="polite"
        aria-label="Answer so far"
        data-testid="live-answer"
        onScroll={(e) => {
          const el = e.currentTarget;
          following.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
        }}
      >
        {answer.text}
      </pre>
    </>
  );
}

type SchemaEntry = NonNullable<GraphDoc["schemas"]>[number];

function withoutMeta(value: unknown): unknown {
  if (!value || typeof value !== "object" || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !key.startsWith("_schema_") && key !== "_routed"));
}

/** Edit a value as JSON, checked against the out-edge schemas in the browser as you type. */
function ValueEditor({
  initial,
  schemas,
  onValue,
}: {
  initial: unknown;
  schemas: SchemaEntry[];
  onValue: (value: unknown, errors: string[]) => void;
}) {
  const [text, setText] = useState(() => JSON.stringify(withoutMeta(initial), null, 2));
  const [errors, setErrors] = useState<string[]>([]);
  function changed(next: string) {
    setText(next);
    let found: string[];
    let value: unknown;
    try {
      value = JSON.parse(next);
      found = schemas.flatMap((s) => schemaErrors(s.schema, value).map((e) => `${s.id}: ${e}`));
    } catch (cause) {
      found = [`not JSON: ${(cause as Error).message}`];
    }
    setErrors(found);
    onValue(value, found);
  }
  return (
    <>
      <CodeEditor language="json" value={text} onChange={changed} label="Corrected value (JSON)" />
      {errors.length ? (
        <ul className="diagnostics" aria-label="Schema errors">
          {errors.map((e) => (
            <li key={e} className="error">
              {e}
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted">
          {schemas.length ? `Matches ${schemas.map((s) => s.id).join(", ")}.` : "No schema on this node's out-edges."}
        </p>
      )}
    </>
  );
}

function Override(props: {
  initial: unknown;
  schemas: SchemaEntry[];
  downstream: string[];
  direct: string[];
  onSave: (value: unknown, policy: Policy, note: string | null) => void;
  onRerun: () => void;
}) {
  const [open, setOpen] = useState(false);
  const [policy, setPolicy] = useState<Policy>("INVALIDATE");
  const [note, setNote] = useState("");
  const [value, setValue] = useState<unknown>(withoutMeta(props.initial));
  const [errors, setErrors] = useState<string[]>([]);
  const touched = policy === "KEEP" ? [] : policy === "RERUN_ALL" ? props.downstream : props.direct;
  if (!open)
    return (
      <div className="row">
        <button type="button" onClick={() => setOpen(true)}>
          Override…
        </button>
        <button type="button" onClick={props.onRerun}>
          Rerun
        </button>
      </div>
    );
  return (
    <form
      className="override"
      aria-label="Override"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSave(value, policy, note || null);
        setOpen(false);
      }}
    >
      <h3>Override</h3>
      <ValueEditor initial={props.initial} schemas={props.schemas} onValue={(v, found) => { setValue(v); setErrors(found); }} />
      <label>
        Downstream{" "}
        <select aria-label="Downstream policy" value={policy} onChange={(e) => setPolicy(e.target.value as Policy)}>
          {Object.entries(POLICIES).map(([key, text]) => (
            <option key={key} value={key}>
              {text}
            </option>
          ))}
        </select>
      </label>
      <p className="muted" data-testid="policy-preview">
        {policyPreview(policy, touched, props.downstream.filter((n) => !props.direct.includes(n)))}
      </p>
      <label>
        Note <input value={note} onChange={(e) => setNote(e.target.value)} aria-label="Note" />
      </label>
      <div className="row">
        <button type="submit" disabled={errors.length > 0}>
          Save override
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function Review(props: {
  value: unknown;
  prompt: string;
  schemas: SchemaEntry[];
  onApprove: (note: string | null) => void;
  onSubmit: (value: unknown, note: string | null) => void;
}) {
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState<unknown>(props.value);
  const [errors, setErrors] = useState<string[]>([]);
  const [note, setNote] = useState("");
  return (
    <div className="review" role="region" aria-label="Review">
      <h3>Review</h3>
      {props.prompt ? <p>{props.prompt}</p> : null}
      {editing ? (
        <ValueEditor initial={props.value} schemas={props.schemas} onValue={(v, found) => { setValue(v); setErrors(found); }} />
      ) : (
        <pre>{JSON.stringify(props.value, null, 2)}</pre>
      )}
      <label>
        Note <input value={note} onChange={(e) => setNote(e.target.value)} aria-label="Review note" />
      </label>
      <div className="row">
        {editing ? (
          <button type="button" disabled={errors.length > 0} onClick={() => props.onSubmit(value, note || null)}>
            Submit corrected value
          </button>
        ) : (
          <>
            <button type="button" onClick={() => props.onApprove(note || null)}>
              Approve
            </button>
            <button type="button" onClick={() => setEditing(true)}>
              Edit…
            </button>
          </>
        )}
      </div>
    </div>
  );
}

function Replay({ nodeRunId }: { nodeRunId: string }) {
  const [result, setResult] = useState<unknown>(null);
  const [problem, setProblem] = useState<unknown>(null);
  return (
    <div className="row">
      <button
        type="button"
        onClick={() => {
          setProblem(null);
          post(`/api/node-runs/${q(nodeRunId)}/replay`).then(setResult, setProblem);
        }}
      >
        Replay the model call
      </button>
      <ErrorView error={problem} />
      {result ? <pre data-testid="replay">{JSON.stringify(result, null, 2)}</pre> : null}
    </div>
  );
}

interface Attempt {
  attempt: number;
  started_at?: number;
  duration_ms?: number;
  provider?: string;
  model?: string;
  usage?: { input?: number; output?: number };
  error?: string;
  kind?: string;
  decisions?: { event: string; to?: string; target?: string; error?: string }[];
  /** The answer as the model gave it, and why the edge's schema refused it (when it did). */
  content?: string;
  violations?: string[];
  [field: string]: unknown;
}

/** An attempt whose answer came back but did not fit the schema: the answer and each violation. */
function Rejected({ answer, violations }: { answer?: string; violations: string[] }) {
  return (
    <div className="rejected">
      <span className="reason">rejected by the schema</span>
      <ul className="details">
        {violations.map((v) => (
          <li key={v}>{v}</li>
        ))}
      </ul>
      {answer !== undefined ? (
        <details>
          <summary>the answer</summary>
          <pre>{answer.length > 4000 ? `${answer.slice(0, 4000)}… (${answer.length} characters)` : answer}</pre>
        </details>
      ) : null}
    </div>
  );
}

interface ToolRound {
  round: number;
  calls: { tool: string; source?: string; arguments: unknown; result: unknown }[];
}

/** Each attempt of the node: where it went, how long it took, what it cost, how it failed, and
 * what the provider pool decided on the way (failover, degraded, busy). */
function Attempts({ attempts }: { attempts: Attempt[] }) {
  return (
    <details open={attempts.some((a) => a.error)}>
      <summary>Attempts ({attempts.length})</summary>
      <table className="list" aria-label="Attempts">
        <Head labels={["#", "Model", "Time", "Tokens", "Outcome"]} />
        <tbody>
          {attempts.map((a) => (
            <tr key={a.attempt} data-attempt={a.attempt}>
              <td>{a.attempt}</td>
              <td>{[a.provider, a.model].filter(Boolean).join(" / ") || "–"}</td>
              <td>{a.duration_ms !== undefined ? `${Math.round(a.duration_ms)} ms` : ""}</td>
              <td>{a.usage ? `${a.usage.input ?? 0}+${a.usage.output ?? 0}` : ""}</td>
              <td>
                {a.error ? (
                  <span className="reason">{a.kind ? `${a.kind}: ` : ""}{a.error}</span>
                ) : a.violations?.length ? (
                  <Rejected answer={a.content} violations={a.violations} />
                ) : (
                  "answered"
                )}
                {a.decisions?.map((d, i) => (
                  <div key={i} className="muted">
                    pool: {d.event} {d.to ?? d.target ?? ""} {d.error ? `(${d.error})` : ""}
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

/** The tool calls the model made, round by round, with their arguments and results. */
function ToolRounds({ rounds }: { rounds?: ToolRound[] }) {
  if (!rounds?.length) return null;
  return (
    <details>
      <summary>Tool rounds ({rounds.length})</summary>
      <ol aria-label="Tool rounds">
        {rounds.map((r) => (
          <li key={r.round}>
            {r.calls.map((c, i) => (
              <div key={i}>
                <code>{c.tool}</code>
                {c.source ? <span className="muted"> ({c.source})</span> : null}
                <pre>{JSON.stringify({ arguments: c.arguments, result: c.result }, null, 2)}</pre>
              </div>
            ))}
          </li>
        ))}
      </ol>
    </details>
  );
}

/** What a correction with `policy` does to the other nodes: which rerun and which end stale. */
function policyPreview(policy: Policy, touched: string[], beyond: string[]): string {
  if (policy === "KEEP" || touched.length === 0) return "No other node is touched.";
  if (policy === "RERUN_ALL") return `Reruns: ${touched.join(", ")}`;
  if (policy === "RERUN")
    return `Reruns: ${touched.join(", ")}${beyond.length ? `. Marks stale: ${beyond.join(", ")}` : ""}`;
  return `Marks stale: ${touched.join(", ")}${beyond.length ? `. Stale through them until they rerun: ${beyond.join(", ")}` : ""}`;
}
