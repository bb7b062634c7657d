// What resource-aware scheduling did to a run and its nodes: queued, paused, degraded or
// rejected, by which rule, why, and what the probe saw then (docs/configuration.md, [resources]).
import { Head } from "../components/bits";
import { when } from "../components/useApi";

export interface Decision {
  action: string;
  rule: string;
  reason: string;
  probe?: Record<string, unknown> | null;
  node_run_id?: string | null;
  node_id?: string | null;
  at: number;
}

/** The decisions of a run, as the run document carries them (its items are plain objects). */
export function decisionsOf(run: { decisions?: unknown[] }): Decision[] {
  return (run.decisions ?? []) as Decision[];
}

/** The decisions made on one node: by its id, or by one of its node runs. */
export function ofNode(all: Decision[], nodeId: string, nodeRunIds: string[]): Decision[] {
  return all.filter((d) => d.node_id === nodeId || (d.node_run_id && nodeRunIds.includes(d.node_run_id)));
}

const PERCENT = (v: number) => `${v.toFixed(0)} %`;

/** What the probe saw, in words: the known readings first, anything else by its key. */
export function probeWords(probe: Record<string, unknown> | null | undefined): string[] {
  if (!probe) return [];
  const said: string[] = [];
  const num = (key: string) => (typeof probe[key] === "number" ? (probe[key] as number) : null);
  if (num("cpu_percent") !== null) said.push(`CPU ${PERCENT(num("cpu_percent")!)}`);
  if (num("memory_percent") !== null) said.push(`memory ${PERCENT(num("memory_percent")!)}`);
  if (num("disk_free_gb") !== null) said.push(`disk ${num("disk_free_gb")!.toFixed(2)} GB free`);
  if ("capacity_percent" in probe) {
    said.push(num("capacity_percent") === null ? "capacity: no pool" : `capacity ${PERCENT(num("capacity_percent")!)} free`);
  }
  const known = new Set(["cpu_percent", "memory_percent", "disk_free_gb", "capacity_percent", "at"]);
  for (const [key, value] of Object.entries(probe)) {
    if (known.has(key)) continue;
    said.push(`${key.replace(/_/g, " ")}: ${reachability(value)}`);
  }
  return said;
}

/** A reachability reading: `{provider: true|false}` as "up a, down b"; anything else as JSON. */
function reachability(value: unknown): string {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.every(([, v]) => typeof v === "boolean")) {
      const up = entries.filter(([, v]) => v).map(([k]) => k);
      const down = entries.filter(([, v]) => !v).map(([k]) => k);
      return [up.length ? `reachable ${up.join(", ")}` : "", down.length ? `unreachable ${down.join(", ")}` : ""].filter(Boolean).join("; ") || "none";
    }
  }
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The decisions as a table: when, what, by which rule, why, and the probe. */
export function Decisions({ decisions, label }: { decisions: Decision[]; label: string }) {
  if (!decisions.length) return null;
  return (
    <details className="decisions" open>
      <summary>
        {label} ({decisions.length})
      </summary>
      <table className="list" aria-label={label}>
        <Head labels={["When", "Action", "Rule", "Why", "Probe"]} />
        <tbody>
          {decisions.map((d, i) => (
            <tr key={i} data-action={d.action}>
              <td>{when(d.at)}</td>
              <td>
                <span className={`pill decision-${d.action}`}>{d.action === "execute" ? "started" : d.action}</span>
              </td>
              <td>{d.rule || "–"}</td>
              <td>{d.reason}</td>
              <td className="probe">{probeWords(d.probe).join(" · ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

/** The run paused by a decision (every provider exhausted, or a rule whose action is pause):
 * why, and that resuming it decides again. Not once a node started after it (the run was
 * resumed since and paused for something else, such as a review). */
export function PausedBanner({
  status,
  decisions,
  nodes,
}: {
  status: string;
  decisions: Decision[];
  nodes: { started_at?: number | null }[];
}) {
  const last = decisions[decisions.length - 1];
  if (status !== "paused" || !last || last.action !== "pause") return null;
  if (nodes.some((n) => (n.started_at ?? 0) > last.at)) return null;
  const where = last.node_id ? ` before node ${last.node_id}` : "";
  const exhausted = last.rule === "providers";
  return (
    <div className="warning" role="status" data-testid="paused-banner">
      <strong>
        {exhausted ? "Paused: every provider is exhausted" : `Paused by the ${last.rule || "resource"} rule`}
        {where}.
      </strong>{" "}
      {last.reason}. Nothing is lost: Resume continues the run
      {exhausted ? " once a provider can serve it again" : ""}, deciding again then.
    </div>
  );
}
