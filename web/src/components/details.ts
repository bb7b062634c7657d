import { forBrowser } from "../api/wording";

/** One item of an error's `details` as a line a person reads: where (a field, a path, a node or an
 * edge), what is wrong, and the hint in the workbench's words; an object without a message is its
 * fields, never a JSON string. */
export function describeDetail(detail: unknown): string {
  if (!detail || typeof detail !== "object") return String(detail);
  const d = detail as Record<string, unknown>;
  const where = d.where ?? d.path ?? d.node_id ?? d.edge_id ?? "";
  const text =
    d.message ??
    d.problem ??
    Object.entries(d)
      .map(([key, value]) => `${key}: ${typeof value === "object" ? JSON.stringify(value) : String(value)}`)
      .join(", ");
  const said = forBrowser(d.hint ? String(d.hint) : null);
  return `${where ? `${String(where)}: ` : ""}${String(text)}${said ? ` (hint: ${said})` : ""}`;
}
