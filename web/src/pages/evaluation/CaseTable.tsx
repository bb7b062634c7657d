import { Head } from "../../components/bits";
import { href } from "../../router";
import {
  type CaseReport,
  type FieldDifference,
  type Outcome,
  OUTCOME_WORDS,
  OUTCOMES,
  type SetCase,
  count,
  differences,
  shownAt,
} from "./model";

/** The outcomes to show: every one, or one of them. */
export function OutcomeFilter({
  reports,
  shown,
  onShow,
}: {
  reports: CaseReport[];
  shown: Outcome | null;
  onShow: (outcome: Outcome | null) => void;
}) {
  const tally = (outcome: Outcome) => reports.filter((r) => r.outcome === outcome).length;
  return (
    <fieldset className="show outcome-filter">
      <legend>Show</legend>
      <label className="check">
        <input type="radio" name="outcome" checked={shown === null} onChange={() => onShow(null)} /> every case (
        {reports.length})
      </label>
      {OUTCOMES.map((outcome) => (
        <label className="check" key={outcome} title={OUTCOME_WORDS[outcome][1]}>
          <input type="radio" name="outcome" checked={shown === outcome} onChange={() => onShow(outcome)} />{" "}
          {OUTCOME_WORDS[outcome][0]} ({tally(outcome)})
        </label>
      ))}
    </fieldset>
  );
}

/** One row per case: where it came from, how it came out, the fields that differ (expected,
 * the candidate's answer, the original output), the runs behind it, and the person's note. */
export function CaseTable({
  reports,
  setCases,
  baselineVersion,
}: {
  reports: CaseReport[];
  setCases: Map<string, SetCase>;
  baselineVersion: number | null;
}) {
  return (
    <table className="list eval-cases" aria-label="Cases">
      <Head labels={["#", "Outcome", "Label", "Node", "Field differences", "Runs", "Note"]} />
      <tbody>
        {reports.map((report) => {
          const judged = setCases.get(report.case_id);
          return (
            <tr key={report.case_id} data-case={report.position} data-outcome={report.outcome ?? "pending"}>
              <td>{report.gate_id}</td>
              <td>
                {report.outcome ? (
                  <span className={`pill outcome-${report.outcome}`} title={OUTCOME_WORDS[report.outcome][1]}>
                    {OUTCOME_WORDS[report.outcome][0]}
                  </span>
                ) : (
                  <span className="muted">being scored</span>
                )}
                {report.reason ? <div className="reason">{report.reason}</div> : null}
                {report.critical ? <div className="badge warn">critical</div> : null}
              </td>
              <td>{report.label}</td>
              <td>
                {report.node_id ? <code>{report.node_id}</code> : <span className="muted">the run's output</span>}
                {report.level === "run" ? <div className="muted">run level</div> : null}
              </td>
              <td>
                <Differences report={report} judged={judged} baselineVersion={baselineVersion} />
              </td>
              <td className="case-runs">
                <Runs report={report} baselineVersion={baselineVersion} />
              </td>
              <td className="note">
                {judged?.note ? <span>“{judged.note}”</span> : <span className="muted">no note</span>}
                {judged?.judged_by ? <div className="muted">by {judged.judged_by}</div> : null}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function Runs({ report, baselineVersion }: { report: CaseReport; baselineVersion: number | null }) {
  const candidate = report.candidate.filter((r) => r.run_id);
  return (
    <ul className="compact">
      <li>
        <a href={href("runs", report.source_run_id)} title="The run a person judged">
          source run {report.source_run_id.slice(0, 8)}
        </a>
      </li>
      {candidate.map((r) => (
        <li key={r.repetition}>
          <a href={href("runs", r.run_id as string)} title="The run this evaluation made to answer the case">
            evaluation run{candidate.length > 1 ? ` ${r.repetition + 1}` : ""} {(r.run_id as string).slice(0, 8)}
          </a>
        </li>
      ))}
      {baselineVersion !== null && report.baseline?.run_id ? (
        <li>
          <a href={href("runs", report.baseline.run_id)} title={`The run version ${baselineVersion} answered the case with`}>
            baseline run {report.baseline.run_id.slice(0, 8)}
          </a>
        </li>
      ) : null}
    </ul>
  );
}

function Differences({
  report,
  judged,
  baselineVersion,
}: {
  report: CaseReport;
  judged: SetCase | undefined;
  baselineVersion: number | null;
}) {
  if (!report.outcome) return null;
  const found = differences(report);
  if (found.length === 0) {
    return <span className="muted">{report.outcome === "incomparable" ? "not scored" : "every field passes"}</span>;
  }
  const answer = report.candidate[0]?.output;
  const repetitions = report.candidate.length;
  return (
    <table className="field-diff" aria-label={`Fields of case ${report.gate_id}`}>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Expected</th>
          <th scope="col">Candidate{repetitions > 1 ? " (1st of " + count(repetitions, "run") + ")" : ""}</th>
          <th scope="col">{baselineVersion !== null ? `Baseline v${baselineVersion}` : "Original"}</th>
        </tr>
      </thead>
      <tbody>
        {found.map((d) => (
          <tr key={d.path} data-field={d.path}>
            <th scope="row">
              <code>{d.path}</code> <span className="muted">{d.rule}</span>
            </th>
            <td>
              <code>{judged ? shownAt(judged.expected, d.path) : "…"}</code>
            </td>
            <Side value={answer} field={d.candidate} path={d.path} />
            <Side
              value={baselineVersion !== null ? report.baseline?.output : judged?.original}
              field={d.baseline}
              path={d.path}
            />
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** One side's value at the field, and what the scorer said when it failed there. */
function Side({ value, field, path }: { value: unknown; field: FieldDifference["candidate"]; path: string }) {
  return (
    <td className={field && !field.passed ? "failed" : undefined}>
      <code>{value === undefined ? "…" : shownAt(value, path)}</code>
      {field && !field.passed ? <div className="why">✗ {field.detail || "fails"}</div> : null}
      {field && field.passed ? <div className="muted">✓ passes</div> : null}
    </td>
  );
}
