import { forBrowser } from "../api/wording";
import { describeDetail } from "./details";

/** A node's or a run's recorded error (`{kind, message, details?, hint?, node_id?}`) as a person
 * reads it: which node, what kind of failure, the message, and what to do; never a JSON string. */
export function FailureView({ error, node }: { error: Record<string, unknown>; node?: string | null }) {
  const kind = typeof error.kind === "string" ? error.kind : null;
  const message = typeof error.message === "string" && error.message ? error.message : "no message was recorded";
  const details = Array.isArray(error.details) ? error.details : [];
  const hint = forBrowser(typeof error.hint === "string" ? error.hint : null) ?? advice(kind);
  return (
    <div className="error failure" role="alert">
      <strong>
        {node ? `Node ${node} failed` : "Failed"}
        {kind ? ` (${kind.replaceAll("_", " ")})` : ""}:
      </strong>{" "}
      <span className="failure-message">{message}</span>
      {details.length ? (
        <ul className="details">
          {details.slice(0, 20).map((detail, index) => (
            <li key={index}>{typeof detail === "string" ? detail : describeDetail(detail)}</li>
          ))}
        </ul>
      ) : null}
      <div className="hint">What to do: {hint}</div>
    </div>
  );
}

const MISFIT =
  "the answer did not fit its edge's schema: correct it by hand (Override on the node's panel), or change the prompt or the schema on the canvas and Rerun the node.";

const ADVICE: Record<string, string> = {
  schema: MISFIT,
  output: MISFIT,
  precheck_failed: "the values this node reads do not fit the schema it expects: correct the upstream node's output (Override), then Rerun this node.",
  truncated: "the answer was cut at the token limit: raise the node's max_tokens on the canvas, save, and Rerun the node.",
  timeout: "the node ran out of time: raise its timeout on the canvas, or Rerun it when the model is less busy.",
  provider: "the model provider failed: Rerun the node once it answers again, or Resume the run.",
  rate_limit: "the model provider asked to slow down: Rerun the node or Resume the run in a moment.",
  server: "the model server failed: Rerun the node once it answers again, or Resume the run.",
  expression: "an expression of this node failed on these values: fix it on the canvas, save, and Rerun the node.",
  render: "a prompt template could not be filled in: fix it on the canvas, save, and Rerun the node.",
  input: "the run's input does not fit the graph's input form: start a new run with the missing or corrected fields.",
  budget: "the run reached its cost or token budget: raise the budget (the graph's or the server's), then Resume the run.",
  internal: "Plait failed unexpectedly (the server's log says why): Rerun the node to try again.",
};

function advice(kind: string | null): string {
  return (
    (kind && ADVICE[kind]) ||
    "once the cause is fixed, Rerun the node from its panel, or Resume the run from its page."
  );
}
