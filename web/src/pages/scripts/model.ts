// What the prompt-script editor works with: templates, console events, the request bodies of
// preview and generate, and the session that makes a newer preview cancel the older one.
import type { Schemas } from "../../api/client";

export type Template = Schemas["TemplateOut"];
export type RunDetail = Schemas["RunDetailOut"];

/** Where a script failed (`kind`: syntax, no_main, not_async, thrown, not_string, too_large,
 * timeout, memory, host_calls, cancelled), 1-based line and column when known. */
export interface ScriptFailure {
  kind: string;
  message: string;
  line: number | null;
  column: number | null;
}

/** A console entry (`log`, `warning`, `error`), as the sandbox reports it; the last `error` of a
 * failed script has level `script` and the failure. */
export interface ConsoleEntry {
  type: string;
  level: string;
  args: unknown[];
  ts: number;
  error?: ScriptFailure;
}

export const SKELETON = `async function main() {
  const topic = await getVar("input.topic");
  return \`Write about \${topic}\`;
}
`;

export const DEFAULT_INPUT = `{\n  "topic": "birds in winter"\n}`;

/** One id per page load: the server cancels a session's older preview (or generation) when a
 * newer one starts. */
export const SESSION = `editor-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

/** What the script runs against: an input alone, or a run's node (both ids, or neither). */
export interface Target {
  inputText: string;
  runId: string;
  nodeId: string;
}

/** The run input of the target, or the reason it is not a JSON object. */
export function parseInput(text: string): { input: Record<string, unknown> } | { problem: string } {
  if (!text.trim()) return { input: {} };
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return { input: value as Record<string, unknown> };
    return { problem: "the preview input must be a JSON object" };
  } catch (cause) {
    return { problem: `the preview input is not JSON: ${(cause as Error).message}` };
  }
}

/** The body preview and generate share: the stored template when the editor shows it unchanged
 * (so that it counts as used), else the editor's text; the input or the run's node. */
export function scriptBody(code: string, template: Template | null, target: Target): Record<string, unknown> {
  const parsed = parseInput(target.inputText);
  if ("problem" in parsed) throw new Error(parsed.problem);
  const body: Record<string, unknown> =
    template && template.script_code === code ? { template_id: template.id } : { script_code: code };
  body.input = parsed.input;
  const runId = target.runId.trim();
  const nodeId = target.nodeId.trim();
  if (runId || nodeId) {
    body.run_id = runId || null;
    body.node_id = nodeId || null;
  }
  body.session = SESSION;
  return body;
}

/** A console argument as text: strings as they are, anything else as JSON. */
export function shown(args: unknown[]): string {
  return args.map((arg) => (typeof arg === "string" ? arg : JSON.stringify(arg))).join(" ");
}

export function where(failure: { line?: number | null; column?: number | null }): string {
  if (failure.line === null || failure.line === undefined) return "";
  return failure.column === null || failure.column === undefined
    ? `line ${failure.line}`
    : `line ${failure.line}, column ${failure.column}`;
}

export function isAbort(cause: unknown): boolean {
  return cause instanceof DOMException && cause.name === "AbortError";
}
