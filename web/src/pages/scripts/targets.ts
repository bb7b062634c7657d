// A template's `schema_target` may name the schema version it was written for (`summary@1.0.0`).
// Tried on a run whose graph has a newer version of that schema, the editor says so: the fields
// the script asks the model for may have changed. It warns; it does not stop editing or generating.
import type { Schemas } from "../../api/client";

export interface OlderTarget {
  id: string;
  wanted: string;
  now: string;
}

/** The schema a target names and the version it names, when it names one: `id@1.2.0`. */
export function splitTarget(target: string): { id: string; version: string | null } {
  const at = target.lastIndexOf("@");
  return at > 0 ? { id: target.slice(0, at), version: target.slice(at + 1) } : { id: target, version: null };
}

/** -1, 0 or 1 as version `a` is lower, the same or higher than `b` (numeric parts, then text). */
export function compareVersions(a: string, b: string): number {
  const left = a.split(".");
  const right = b.split(".");
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const [x, y] = [left[i] ?? "0", right[i] ?? "0"];
    const [nx, ny] = [Number(x), Number(y)];
    const order = Number.isFinite(nx) && Number.isFinite(ny) ? Math.sign(nx - ny) : x.localeCompare(y);
    if (order) return order;
  }
  return 0;
}

/** The target's schema when `graph` has a newer version of it than the target names; else null. */
export function olderTarget(target: string | null, graph: Schemas["GraphOut"] | null): OlderTarget | null {
  if (!target || !graph) return null;
  const { id, version } = splitTarget(target);
  if (!version) return null;
  const schemas = (graph.graph as { schemas?: { id: string; version?: string | null }[] }).schemas ?? [];
  const now = schemas.find((s) => s.id === id)?.version;
  return now && compareVersions(version, now) < 0 ? { id, wanted: version, now } : null;
}
