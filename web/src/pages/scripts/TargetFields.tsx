import { useEffect, useState } from "react";
import { get, q } from "../../api/client";
import { parseInput, type RunDetail, type Target } from "./model";

/** The run whose node a preview reads, looked up once its id has stayed unchanged a moment:
 * its input and node outputs complete getVar's paths, its node ids the node field. */
export function useRunDetail(runId: string): { run: RunDetail | null; problem: string | null } {
  const [run, setRun] = useState<RunDetail | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    const id = runId.trim();
    setRun(null);
    setProblem(null);
    if (!id) return;
    let live = true;
    const timer = window.setTimeout(() => {
      get<RunDetail>(`/api/runs/${q(id)}`).then(
        (found) => live && setRun(found),
        (cause: Error) => live && setProblem(cause.message),
      );
    }, 350);
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [runId]);
  return { run, problem };
}

/** What the script runs against: a run input (JSON), or a run's node (run id and node id). */
export function TargetFields({
  target,
  onChange,
  run,
  runProblem,
}: {
  target: Target;
  onChange: (target: Target) => void;
  run: RunDetail | null;
  runProblem: string | null;
}) {
  const parsed = parseInput(target.inputText);
  const nodeIds = [...new Set((run?.nodes ?? []).map((n) => n.node_id))];
  return (
    <fieldset className="target">
      <legend>Run against</legend>
      <label className="field">
        <span className="field-label">Preview input (JSON)</span>
        <textarea
          className="code"
          rows={4}
          spellCheck={false}
          value={target.inputText}
          onChange={(e) => onChange({ ...target, inputText: e.target.value })}
          aria-invalid={"problem" in parsed}
          disabled={Boolean(target.runId.trim())}
        />
      </label>
      {"problem" in parsed ? <p className="warning">{parsed.problem}</p> : null}
      <div className="row">
        <label className="field">
          <span className="field-label">Run id (optional)</span>
          <input
            value={target.runId}
            onChange={(e) => onChange({ ...target, runId: e.target.value })}
            placeholder="a run's id"
            spellCheck={false}
          />
        </label>
        <label className="field">
          <span className="field-label">Node id</span>
          <input
            value={target.nodeId}
            onChange={(e) => onChange({ ...target, nodeId: e.target.value })}
            list="script-run-nodes"
            placeholder="a node of that run"
            spellCheck={false}
          />
        </label>
        <datalist id="script-run-nodes">
          {nodeIds.map((id) => (
            <option key={id} value={id} />
          ))}
        </datalist>
      </div>
      {target.runId.trim() ? (
        <p className="muted" data-testid="run-target">
          {runProblem
            ? `run not found: ${runProblem}`
            : run
              ? `the script sees node ${target.nodeId.trim() || "(choose one)"} of run ${run.id.slice(0, 8)} (${run.graph}); the input above is not used`
              : "looking the run up…"}
        </p>
      ) : null}
    </fieldset>
  );
}
