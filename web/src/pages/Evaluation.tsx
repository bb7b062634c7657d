import { useEffect, useMemo, useState } from "react";
import { get, q, type Schemas } from "../api/client";
import { followStream } from "../api/events";
import { Hint, ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { href, replaceQuery } from "../router";
import { CaseTable, OutcomeFilter } from "./evaluation/CaseTable";
import {
  type Evaluation,
  type Outcome,
  ENDED,
  OUTCOMES,
  cases,
  count,
  setOf,
  setRef,
  verdictOf,
} from "./evaluation/model";
import { Promote } from "./evaluation/Promote";

interface StreamEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** One evaluation (`#/evaluations/ID?outcome=`): its progress live from its event stream, then
 * the gate's verdict in the API's own lines, the fields that regressed or were fixed, every case
 * with the fields that differ and the runs behind it, and promoting the version it evaluated. */
export function EvaluationPage({ evaluationId, outcome }: { evaluationId: string; outcome: string | null }) {
  const report = useApi(() => get<Evaluation>(`/api/evaluations/${q(evaluationId)}`), [evaluationId]);
  const evaluation = report.data;
  const graphId = evaluation?.graph_id ?? null;
  const graph = useApi(
    () => (graphId ? get<Schemas["GraphOut"]>(`/api/graphs/${q(graphId)}`) : Promise.resolve(null)),
    [graphId],
  );
  const set = evaluation ? setOf(evaluation) : null;
  const shownSet = useApi(
    () =>
      graphId && set
        ? get<Schemas["EvalSetShownOut"]>(`/api/graphs/${q(graphId)}/eval-sets/${q(set.name)}?revision=${set.revision}`)
        : Promise.resolve(null),
    [graphId, set?.id],
  );
  const [scored, setScored] = useState<number | null>(null);
  const [shown, setShown] = useState<Outcome | null>(OUTCOMES.includes(outcome as Outcome) ? (outcome as Outcome) : null);
  const status = evaluation?.status ?? null;
  const { reload } = report;

  // Live while it runs: each scored case moves the count on; the verdict (or its failure) reads it again.
  useEffect(() => {
    if (status === null || ENDED.includes(status)) return;
    return followStream<StreamEvent>(
      `/api/evaluations/${q(evaluationId)}/events`,
      (event) => {
        if (event.event === "case") setScored((n) => Math.max(n ?? 0, event.id));
        else reload();
      },
      reload,
    );
  }, [evaluationId, status, reload]);

  const setCases = useMemo(() => new Map((shownSet.data?.cases ?? []).map((c) => [c.id, c])), [shownSet.data]);
  if (report.error) return <ErrorView error={report.error} />;
  if (!evaluation || !set) return <p aria-busy="true">Loading…</p>;
  const reports = cases(evaluation);
  const verdict = verdictOf(evaluation);
  const ended = ENDED.includes(evaluation.status);
  const done = Math.max(scored ?? 0, reports.filter((r) => r.outcome).length);
  const listed = shown ? reports.filter((r) => r.outcome === shown) : reports;
  const slug = graph.data?.slug ?? evaluation.graph_id;
  const rules = evaluation.rules as Record<string, number | boolean>;

  return (
    <section className="evaluation">
      <div className="toolbar">
        <h1>
          Evaluation of <a href={href("graphs", evaluation.graph_id)}>{slug}</a> version {evaluation.candidate_version}
        </h1>
        <span className="muted">
          on the set <code>{setRef(set)}</code> ({count(reports.length, "case")}) against{" "}
          {evaluation.baseline_version === null ? "the recorded outputs" : `version ${evaluation.baseline_version}`} ·{" "}
          {count(evaluation.repetitions, "repetition")} · started {when(evaluation.created_at)} by {evaluation.created_by}
        </span>
      </div>
      <p className="muted rules">
        The gate: at most {String(rules.max_regressions ?? 0)} regressions · McNemar alpha {String(rules.alpha ?? 0.05)} ·
        approved pass rate may drop by {percent(Number(rules.max_approved_drop ?? 0))} · at least{" "}
        {String(rules.min_comparable ?? 10)} comparable cases{rules.time_split ? " · split by time" : ""}
      </p>
      <ErrorView error={graph.error ?? shownSet.error} />
      {!ended ? (
        <div className="progress" role="status">
          <progress aria-label="Cases scored" max={Math.max(reports.length, 1)} value={done} /> {done} of{" "}
          {count(reports.length, "case")} scored{evaluation.status === "pending" ? " (starting)" : ""}
        </div>
      ) : null}
      {!ended && !evaluation.driving ? (
        <p className="warning">
          This server is not driving this evaluation. If the count does not move, start the same evaluation again from
          the graph's Versions tab: it goes on where it stopped, and nothing is scored twice.
        </p>
      ) : null}
      {evaluation.status === "failed" ? <Failure error={evaluation.error} /> : null}
      {verdict ? (
        <section aria-labelledby="verdict" className={`verdict verdict-${verdict.status}`}>
          <h2 id="verdict">
            Verdict: <span className={`pill verdict-${verdict.status}`}>{verdict.status}</span>
          </h2>
          <pre aria-label="Verdict lines" data-testid="verdict-lines">
            {verdict.lines.join("\n")}
          </pre>
        </section>
      ) : null}
      {graph.data && ended ? <Promote evaluation={evaluation} graph={graph.data} onPromoted={graph.reload} /> : null}
      {verdict && verdict.fields.length > 0 ? (
        <section aria-labelledby="field-report">
          <h2 id="field-report">Fields</h2>
          <ul className="compact" aria-label="Field report">
            {verdict.fields.map((f) => (
              <li key={f.path} data-field={f.path}>
                <code>{f.path}</code> regressed in {count(f.regressed, "case")}, fixed in {count(f.fixed, "case")}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      {ended ? (
        <section aria-labelledby="cases">
          <div className="toolbar">
            <h2 id="cases">Cases</h2>
            <OutcomeFilter
              reports={reports}
              shown={shown}
              onShow={(picked) => {
                setShown(picked);
                replaceQuery("outcome", picked);
              }}
            />
          </div>
          {listed.length > 0 ? (
            <CaseTable reports={listed} setCases={setCases} baselineVersion={evaluation.baseline_version} />
          ) : (
            <p className="muted">No case came out this way.</p>
          )}
        </section>
      ) : null}
    </section>
  );
}

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}

/** Why an evaluation stopped without a verdict, in the server's words. */
function Failure({ error }: { error: Record<string, unknown> | null }) {
  const message = typeof error?.message === "string" ? error.message : "it stopped without saying why";
  const hint = typeof error?.hint === "string" ? error.hint : null;
  return (
    <div className="error" role="alert">
      <strong>The evaluation failed to run: {message}</strong>
      <Hint hint={hint} />
    </div>
  );
}
