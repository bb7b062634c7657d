import { useId, useState } from "react";
import { post, q, type Schemas } from "../../api/client";
import { Notice } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { href } from "../../router";
import { type Evaluation, setOf, setRef, verdictOf } from "./model";

/** Promoting the evaluated version: through the gate (this evaluation's set) when the verdict
 * passes; when it does not, the button says why the gate refuses, and "Promote anyway…" forces
 * it with a note saying why (recorded with the promotion). */
export function Promote({
  evaluation,
  graph,
  onPromoted,
}: {
  evaluation: Evaluation;
  graph: Schemas["GraphOut"];
  onPromoted: () => void;
}) {
  const version = evaluation.candidate_version;
  const gate = setRef(setOf(evaluation));
  const verdict = verdictOf(evaluation);
  const [forcing, setForcing] = useState(false);
  const [note, setNote] = useState("");
  const [problem, setProblem] = useState<unknown>(null);
  const [said, setSaid] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const why = useId();
  const noteId = useId();

  if (evaluation.status !== "completed" && evaluation.status !== "failed") return null;
  if (graph.source_type === "system") {
    return (
      <p className="muted" data-testid="promotion">
        A system graph is never promoted: the version this Plait ships is the one that runs. Fork it to promote versions
        of your own.
      </p>
    );
  }
  const passed = verdict?.status === "pass";
  const refusal = verdict
    ? `the verdict is ${verdict.status}`
    : "the evaluation failed to run, so it has no verdict";
  const reasons = (verdict?.checks ?? []).filter((c) => c.status !== "pass").map((c) => c.text);

  async function promote(force: boolean) {
    setProblem(null);
    if (force && !note.trim()) {
      setProblem(new Error(`a forced promotion needs a note: say why version ${version} should run by default despite the gate`));
      return;
    }
    setSending(true);
    try {
      const done = await post<Schemas["PromotionOut"]>(`/api/graphs/${q(graph.id)}/promote`, {
        version,
        gate,
        ...(force ? { force: true, note: note.trim() } : {}),
      });
      setSaid(
        done.forced
          ? `Version ${done.version} now runs by default: promoted anyway, over the gate ${gate}, with your note.`
          : `Version ${done.version} now runs by default: promoted through the gate ${gate}.`,
      );
      setForcing(false);
      setNote("");
      onPromoted();
    } catch (cause) {
      setProblem(cause);
    } finally {
      setSending(false);
    }
  }

  return (
    <section className="promotion" aria-labelledby={`${why}-h`} data-testid="promotion">
      <h2 id={`${why}-h`}>Promotion</h2>
      <Notice>{said}</Notice>
      {graph.promoted_version === version ? (
        <p>
          Version {version} runs by default (
          <a href={href("graphs", graph.id) + "?tab=versions"}>the graph's versions and promotions</a>).
        </p>
      ) : passed ? (
        <div className="row">
          <button type="button" className="accept" disabled={sending} onClick={() => void promote(false)}>
            Promote version {version}
          </button>
          <span className="muted">through the gate {gate}: its verdict is pass.</span>
        </div>
      ) : (
        <>
          <div className="row">
            <button type="button" disabled aria-describedby={why}>
              Promote version {version}: refused, {refusal}
            </button>
            {!forcing ? (
              <button type="button" onClick={() => setForcing(true)}>
                Promote anyway…
              </button>
            ) : null}
          </div>
          <div id={why} className="refusal">
            The gate {gate} lets a version through only when its newest evaluation passes
            {reasons.length > 0 ? ": " : "."}
            {reasons.length > 0 ? (
              <ul className="compact">
                {reasons.map((r) => (
                  <li key={r}>{r}</li>
                ))}
              </ul>
            ) : null}
          </div>
          {forcing ? (
            <form
              className="force"
              aria-label={`Promote version ${version} anyway`}
              onSubmit={(event) => {
                event.preventDefault();
                void promote(true);
              }}
            >
              <label htmlFor={noteId} className="field-label">
                Why promote it anyway (required; kept with the promotion)
              </label>
              <textarea id={noteId} autoFocus value={note} maxLength={2000} onChange={(e) => setNote(e.target.value)} />
              <div className="row">
                <button type="submit" className="danger" disabled={sending}>
                  Promote version {version} anyway
                </button>
                <button
                  type="button"
                  onClick={() => {
                    setForcing(false);
                    setProblem(null);
                  }}
                >
                  Cancel
                </button>
              </div>
            </form>
          ) : null}
        </>
      )}
      <ErrorView error={problem} onDismiss={() => setProblem(null)} />
    </section>
  );
}
