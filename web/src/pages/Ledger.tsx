import { useState } from "react";
import { get, post, q } from "../api/client";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { Notice } from "../components/bits";

interface LedgerEntry {
  owner: string;
  version: number;
  kind: string;
  value: unknown;
  frozen: Record<string, unknown>;
  by: string;
  at: number;
  reason: string | null;
  node_run_id: string | null;
  consumed_by: { node_id: string; activation: number; node_run_id: string }[];
}

/** The run's field ledger: every version of the input and of each output, who wrote it, who read
 * it; any earlier version (or one field of it) can be restored. */
export function Ledger({ runId, onChanged }: { runId: string; onChanged: () => void }) {
  const { data, error, reload } = useApi(() => get<LedgerEntry[]>(`/api/runs/${q(runId)}/ledger`), [runId]);
  const [problem, setProblem] = useState<unknown>(null);
  const [said, setSaid] = useState<string | null>(null);
  const [field, setField] = useState<Record<string, string>>({});

  async function rollback(entry: LedgerEntry) {
    setProblem(null);
    const name = field[`${entry.owner}@${entry.version}`]?.trim();
    const targetName = name ? `${entry.owner}.${name}` : entry.owner;
    try {
      const result = await post<{ stale: string[] }>(`/api/runs/${q(runId)}/rollback`, {
        target: targetName,
        to_version: entry.version,
      });
      setSaid(`${targetName} is back at version ${entry.version}.${result.stale.length ? ` Stale now: ${result.stale.join(", ")}.` : ""}`);
      reload();
      onChanged();
    } catch (cause) {
      setProblem(cause);
    }
  }

  if (error) return <ErrorView error={error} />;
  const owners = [...new Set((data ?? []).map((e) => e.owner))];
  return (
    <div className="fields ledger" data-testid="ledger">
      <ErrorView error={problem} onDismiss={() => setProblem(null)} />
      <Notice>{said}</Notice>
      {owners.map((owner) => {
        const entries = (data ?? []).filter((e) => e.owner === owner);
        const latest = Math.max(...entries.map((e) => e.version));
        return (
          <section key={owner} aria-label={`Ledger of ${owner}`}>
            <h3>{owner}</h3>
            <ol>
              {entries.map((entry) => (
                <li key={entry.version} data-ledger={`${owner}@${entry.version}`}>
                  <strong>v{entry.version}</strong> {entry.kind} by {entry.by} · {when(entry.at)}
                  {entry.reason ? ` · ${entry.reason}` : ""}
                  {Object.keys(entry.frozen).length ? ` · frozen: ${Object.keys(entry.frozen).join(", ")}` : ""}
                  <div className="muted">
                    read by {entry.consumed_by.length ? entry.consumed_by.map((c) => `${c.node_id}#${c.activation}`).join(", ") : "nobody yet"}
                  </div>
                  <details>
                    <summary>value</summary>
                    <pre>{JSON.stringify(entry.value, null, 2)}</pre>
                  </details>
                  {entry.version < latest ? (
                    <div className="row">
                      <input
                        aria-label={`Field of ${owner} to restore (empty: all)`}
                        placeholder="field (empty: the whole value)"
                        value={field[`${owner}@${entry.version}`] ?? ""}
                        onChange={(e) => setField({ ...field, [`${owner}@${entry.version}`]: e.target.value })}
                      />
                      <button type="button" onClick={() => void rollback(entry)}>
                        Roll back to v{entry.version}
                      </button>
                    </div>
                  ) : null}
                </li>
              ))}
            </ol>
          </section>
        );
      })}
    </div>
  );
}
