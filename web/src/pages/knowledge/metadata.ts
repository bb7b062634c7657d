/** The metadata typed for an upload: one `key=value` a line (the values kept as text), or a
 * JSON object (for numbers and booleans); nothing typed is no metadata. */
export function parseMetadata(text: string): { value: Record<string, unknown> | null } | { problem: string } {
  const trimmed = text.trim();
  if (!trimmed) return { value: null };
  if (trimmed.startsWith("{")) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (cause) {
      return { problem: `the metadata is not valid JSON: ${cause instanceof Error ? cause.message : String(cause)}` };
    }
    if (value && typeof value === "object" && !Array.isArray(value)) return { value: value as Record<string, unknown> };
    return { problem: 'the metadata must be a JSON object, e.g. {"team": "support"}' };
  }
  const value: Record<string, string> = {};
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index].trim();
    if (!line) continue;
    const at = line.indexOf("=");
    const key = at > 0 ? line.slice(0, at).trim() : "";
    if (!key) {
      const where = `line ${index + 1} of the metadata, "${line}"`;
      return { problem: `${where}, is not key=value: write one key=value a line, or a JSON object` };
    }
    value[key] = line.slice(at + 1).trim();
  }
  return { value };
}
