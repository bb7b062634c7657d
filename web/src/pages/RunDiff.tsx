import { useState } from "react";
import { get, q, type Schemas } from "../api/client";
import { ErrorView } from "../components/ErrorView";
import { useApi } from "../components/useApi";
import { Head } from "../components/bits";

interface NodeDiff {
  node_id: string;
  verdict: string;
  a?: { status?: string; output?: unknown } | null;
  b?: { status?: string; output?: unknown } | null;
  changes: { path: string; kind: string; old?: unknown; new?: unknown }[];
  notes: string[];
}

/** Compare this run with another of the same graph, node by node and field by field. */
export function RunDiff({ run }: { run: Schemas["RunDetailOut"] }) {
  const others = useApi(() => get<Schemas["RunPage"]>(`/api/runs?graph=${q(run.graph_id)}&limit=50`), [run.graph_id]);
  const [other, setOther] = useState("");
  const [diff, setDiff] = useState<Schemas["RunDiffOut"] | null>(null);
  const [problem, setProblem] = useState<unknown>(null);

  async function compare(id: string) {
    setOther(id);
    setProblem(null);
    setDiff(null);
    if (!id) return;
    try {
      setDiff(await get<Schemas["RunDiffOut"]>(`/api/runs/${q(run.id)}/diff/${q(id)}`));
    } catch (cause) {
      setProblem(cause);
    }
  }

  return (
    <div className="fields run-diff">
      <label>
        Compare with{" "}
        <select aria-label="Run to compare with" value={other} onChange={(e) => void compare(e.target.value)}>
          <option value="">choose a run…</option>
          {(others.data?.items ?? [])
            .filter((r) => r.id !== run.id)
            .map((r) => (
              <option key={r.id} value={r.id}>
                {r.id.slice(0, 8)} · {r.status} · v{r.graph_version}
              </option>
            ))}
        </select>
      </label>
      <ErrorView error={problem ?? others.error} />
      {diff ? (
        <div data-testid="run-diff">
          <p>
            {Object.entries(diff.counts)
              .map(([k, v]) => `${v} ${k}`)
              .join(" · ")}
            {diff.outputs_equal ? " · same output" : " · outputs differ"}
          </p>
          <table className="list">
            <Head labels={["Node", "Change", "Fields"]} />
            <tbody>
              {(diff.nodes as unknown as NodeDiff[]).map((n) => (
                <tr key={n.node_id} className={`change-${n.verdict}`} data-diff-node={n.node_id}>
                  <td>
                    <code>{n.node_id}</code>
                  </td>
                  <td>
                    {n.verdict}
                    {n.a?.status !== n.b?.status ? ` (${n.a?.status ?? "–"} → ${n.b?.status ?? "–"})` : ""}
                  </td>
                  <td>
                    {n.changes.length ? (
                      <ul>
                        {n.changes.map((c) => (
                          <li key={c.path}>
                            <code>{c.path}</code> {c.kind}: {JSON.stringify(c.old)} → {JSON.stringify(c.new)}
                          </li>
                        ))}
                      </ul>
                    ) : null}
                    {n.notes.map((note) => (
                      <div key={note} className="muted">
                        {note}
                      </div>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
