// Completing a prompt script: the host APIs (getVar, getSchemaHint, readRoute, console.*, main)
// anywhere, and inside `getVar("…")` the paths the preview can read: the input's fields, `current`,
// `context.`, and with a run's node the outputs of that run's nodes (`nodes.<id>.<field>`).
import type { Completion, CompletionContext, CompletionResult, CompletionSource } from "@codemirror/autocomplete";
import type { RunDetail } from "./model";

const HOST_APIS: Completion[] = [
  { label: "getVar", type: "function", apply: 'getVar("', detail: "(path) → Promise", info: "A value of the run: input.x, nodes.<id>.x, current, context.x" },
  { label: "getSchemaHint", type: "function", apply: 'getSchemaHint("', detail: "(target) → Promise<string>", info: "A readable description of a schema (\"output\": the node's out-edge contract)" },
  { label: "readRoute", type: "function", apply: 'readRoute("', detail: "(route, params) → Promise", info: "A read-only GET route of Plait's API" },
  { label: "console.log", type: "method", detail: "(...args)" },
  { label: "console.info", type: "method", detail: "(...args)" },
  { label: "console.warn", type: "method", detail: "(...args)", info: "Shown as a warning" },
  { label: "console.error", type: "method", detail: "(...args)" },
  { label: "main", type: "function", apply: "async function main() {\n  \n}", detail: "async function main()", info: "Returns the prompt (a string)" },
  { label: "await", type: "keyword" },
  { label: "return", type: "keyword" },
];

const MAX_DEPTH = 3;

/** Every dotted path into `value` (objects only), `prefix` first. */
function paths(prefix: string, value: unknown, depth = 0): string[] {
  const found = [prefix];
  if (depth >= MAX_DEPTH || !value || typeof value !== "object" || Array.isArray(value)) return found;
  for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
    if (key.startsWith("_")) continue; // _schema_id, _schema_version: bookkeeping, not data
    found.push(...paths(`${prefix}.${key}`, inner, depth + 1));
  }
  return found;
}

/** The paths getVar can read: from a run's node when one is chosen, else from the input. */
export function readablePaths(input: Record<string, unknown>, run: RunDetail | null): Completion[] {
  const options: Completion[] = [];
  const source = run ? run.input : input;
  for (const path of paths("input", source)) options.push({ label: path, type: "variable", detail: run ? "the run's input" : "preview input" });
  options.push({ label: "current", type: "variable", detail: "the node's current value" });
  options.push({ label: "context.", type: "variable", detail: "the run's context" });
  for (const node of run?.nodes ?? []) {
    if (!node.current) continue;
    for (const path of paths(`nodes.${node.node_id}`, node.effective_output)) {
      options.push({ label: path, type: "property", detail: `output of ${node.node_id}` });
    }
  }
  return options;
}

/** A completion source reading the readable paths through `current()` (the editor keeps the
 * source it was created with, the paths change as the input is edited). */
export function scriptCompletion(current: () => Completion[]): CompletionSource {
  return (context: CompletionContext): CompletionResult | null => {
    const before = context.state.sliceDoc(Math.max(0, context.pos - 300), context.pos);
    const inGetVar = /getVar\(\s*["'`]([^"'`]*)$/.exec(before);
    if (inGetVar) {
      return { from: context.pos - inGetVar[1].length, options: current(), validFor: /^[\w./]*$/ };
    }
    const word = /[\w.]*$/.exec(before)![0];
    if (!word && !context.explicit) return null;
    return { from: context.pos - word.length, options: HOST_APIS, validFor: /^[\w.]*$/ };
  };
}
