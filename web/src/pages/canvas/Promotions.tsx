import { get, q, type Schemas } from "../../api/client";
import { Head } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { useApi, when } from "../../components/useApi";
import { href } from "../../router";
import { setOf, setRef } from "../evaluation/model";

/** Which version of the graph runs by default, how it came to (every promotion, newest first),
 * and the graph's evaluations, each linking to its page. */
export function Promotions({ graph }: { graph: Schemas["GraphOut"] }) {
  const evaluations = useApi(
    () => get<Schemas["EvaluationListedOut"][]>(`/api/graphs/${q(graph.id)}/evaluations`),
    [graph.id, graph.latest_version],
  );
  const promotions = graph.promotions ?? [];
  const listed = evaluations.data ?? [];
  return (
    <section aria-labelledby="promotions-title" data-testid="promotions">
      <h3 id="promotions-title">Promotion</h3>
      <p data-testid="runs-by-default">
        {graph.promoted_version
          ? `Version ${graph.promoted_version} runs by default: runs that name no version use it.`
          : `No version was promoted: runs that name no version use the latest (version ${graph.latest_version}).`}
      </p>
      {promotions.length > 0 ? (
        <ol reversed aria-label="Promotion history" className="compact promotion-history">
          {promotions.map((p) => (
            <li key={`${p.promoted_at}-${p.version}`}>
              v{p.version}
              {p.previous_version ? ` (was v${p.previous_version})` : ""} ·{" "}
              {p.forced ? <span className="badge warn">forced</span> : "through the gate"}
              {p.gate ? (
                <>
                  {p.forced ? " over " : " "}
                  <code>{p.gate}</code>
                  {p.verdict ? ` (${p.verdict})` : ""}
                </>
              ) : null}
              {p.evaluation_id ? (
                <>
                  {" "}
                  · <a href={href("evaluations", p.evaluation_id)}>its evaluation</a>
                </>
              ) : null}{" "}
              · by {p.promoted_by} · {when(p.promoted_at)}
              {p.note ? (
                <div className="note">“{p.note}”</div>
              ) : null}
            </li>
          ))}
        </ol>
      ) : null}
      <h3>Evaluations</h3>
      <ErrorView error={evaluations.error} />
      {evaluations.data && listed.length === 0 ? (
        <p className="muted">None yet: “Evaluate against corrections…” on a version scores it on what people corrected and approved.</p>
      ) : null}
      {listed.length > 0 ? (
        <table className="list" aria-label="Evaluations">
          <Head labels={["Version", "Set", "Verdict", "Started"]} />
          <tbody>
            {listed.slice(0, 20).map((e) => (
              <tr key={e.id} data-evaluation={e.id}>
                <td>
                  <a href={href("evaluations", e.id)}>v{e.candidate_version}</a>
                </td>
                <td>
                  <code>{setRef(setOf(e))}</code>
                </td>
                <td>
                  {e.verdict ? (
                    <span className={`pill verdict-${e.verdict}`}>{e.verdict}</span>
                  ) : (
                    <span className="muted">{e.status === "failed" ? "failed to run" : e.status}</span>
                  )}
                </td>
                <td>{when(e.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
