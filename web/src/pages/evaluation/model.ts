// What an evaluation says, typed for the page: the API keeps its cases, verdict and set as plain
// JSON objects (docs/evaluation.md), read here once so the components need not guess.
import type { Schemas } from "../../api/client";

export type Evaluation = Schemas["EvaluationOut"];
export type SetCase = Schemas["EvalCaseOut"];

export const OUTCOMES = ["fixed", "regressed", "still_wrong", "still_right", "incomparable"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** An outcome in words, and what it means (its tooltip). */
export const OUTCOME_WORDS: Record<Outcome, [string, string]> = {
  fixed: ["fixed", "the baseline failed the case, the candidate passes it"],
  regressed: ["regressed", "the baseline passed the case, the candidate fails it"],
  still_wrong: ["still wrong", "both fail the case"],
  still_right: ["still right", "both pass the case"],
  incomparable: ["incomparable", "one side could not answer the case: the reason says why"],
};

export interface FieldScore {
  path: string;
  rule: string;
  passed: boolean;
  score: number;
  required: boolean;
  detail: string;
  critical?: boolean;
}

export interface Result {
  repetition: number;
  run_id: string | null;
  passed: boolean | null;
  score: number | null;
  level: string | null;
  note: string | null;
  incomparable: string | null;
  output: unknown;
  fields: FieldScore[];
}

export interface CaseReport {
  position: number;
  case_id: string;
  gate_id: string;
  level: string;
  label: string;
  critical: boolean;
  node_id: string | null;
  source_run_id: string;
  outcome: Outcome | null;
  reason: string | null;
  baseline: Result | null;
  candidate: Result[];
}

export interface Check {
  name: string;
  status: string;
  text: string;
}

export interface Verdict {
  status: "pass" | "fail" | "inconclusive";
  exit_code: number;
  lines: string[];
  checks: Check[];
  fields: { path: string; regressed: number; fixed: number }[];
}

export interface SetRef {
  id: string;
  name: string;
  revision: number;
}

export const cases = (evaluation: Evaluation) => evaluation.cases as unknown as CaseReport[];
export const verdictOf = (evaluation: Evaluation) => evaluation.verdict as unknown as Verdict | null;
export const setOf = (evaluation: { set: Record<string, unknown> }) => evaluation.set as unknown as SetRef;
export const setRef = (found: SetRef) => `${found.name}@${found.revision}`;
export const ENDED = ["completed", "failed"];

/** `n case(s)`. */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

const META = new Set(["_schema_id", "_schema_version", "_routed", "_prompt_graph_run_id"]);

/** A value without the keys Plait adds to outputs (its schema's id and version...). */
export function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([key]) => !META.has(key))
        .map(([key, inner]) => [key, plain(inner)]),
    );
  }
  return value;
}

type Step = { name: string } | { each: true };

/** A field path as the scorer writes it (`chapters[].start`, `meta["a.b"]`, `$`) in steps. */
export function steps(path: string): Step[] | null {
  if (path === "$") return [];
  const found: Step[] = [];
  const part = /^(?:\.?([^.[\]\s"]+)|\[("(?:[^"\\]|\\.)*")\]|\[\])/;
  let rest = path;
  while (rest) {
    const m = part.exec(rest);
    if (!m) return null;
    if (m[1] !== undefined) found.push({ name: m[1] });
    else if (m[2] !== undefined) found.push({ name: JSON.parse(m[2]) as string });
    else found.push({ each: true });
    rest = rest.slice(m[0].length);
  }
  return found;
}

const ABSENT = Symbol("absent");

/** The value at `path` in `value` (under `[]`, the list of each item's), or ABSENT. */
function at(value: unknown, path: Step[]): unknown {
  let here: unknown = value;
  for (let i = 0; i < path.length; i++) {
    const step = path[i];
    if ("each" in step) {
      if (!Array.isArray(here)) return ABSENT;
      const rest = path.slice(i + 1);
      return here.map((item) => at(item, rest)).filter((v) => v !== ABSENT);
    }
    if (!here || typeof here !== "object" || Array.isArray(here) || !(step.name in (here as object))) return ABSENT;
    here = (here as Record<string, unknown>)[step.name];
  }
  return here;
}

/** The value at a field path, as the table shows it: JSON cut past 160 characters, or "(absent)". */
export function shownAt(value: unknown, path: string): string {
  const parsed = steps(path);
  if (parsed === null) return "(see the whole value)";
  const found = at(plain(value), parsed);
  if (found === ABSENT) return "(absent)";
  const text = JSON.stringify(found) ?? "null";
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

export interface FieldDifference {
  path: string;
  rule: string;
  candidate: FieldScore | null;
  baseline: FieldScore | null;
}

/** The fields a case failed on either side (the candidate's first answer, the baseline), in the
 * scorer's order. An object's own line is left out when a field inside it says more. */
export function differences(report: CaseReport): FieldDifference[] {
  const candidate = report.candidate[0]?.fields ?? [];
  const baseline = report.baseline?.fields ?? [];
  const paths: string[] = [];
  for (const f of [...candidate, ...baseline]) if (!paths.includes(f.path)) paths.push(f.path);
  const failed = paths
    .map((path) => ({
      path,
      candidate: candidate.find((f) => f.path === path) ?? null,
      baseline: baseline.find((f) => f.path === path) ?? null,
    }))
    .filter((d) => d.candidate?.passed === false || d.baseline?.passed === false)
    .map((d) => ({ ...d, rule: (d.candidate ?? d.baseline)?.rule ?? "" }));
  const inner = failed.filter((d) => d.rule !== "fields");
  return inner.length > 0 ? inner : failed;
}
