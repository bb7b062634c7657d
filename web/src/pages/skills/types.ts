// Stored skills as GET /api/skills and GET /api/skills/{name} answer them.
import { type Answer, get } from "../../api/client";
import type { GraphDoc } from "../../graph/model";
import { href } from "../../router";

/** A declared parameter (the API gives parameters as plain objects). */
export interface Parameter {
  name: string;
  schema?: unknown;
  default?: unknown;
  description?: string | null;
  required?: boolean | null;
}

export type SkillSummary = Answer<"/api/skills">[number];
export type SkillDetail = Answer<"/api/skills/{name}">;

/** A skill's parameters, typed. */
export function parametersOf(skill: { parameters: Record<string, unknown>[] }): Parameter[] {
  return skill.parameters as unknown as Parameter[];
}

/** A skill's graph as the canvas draws it. */
export function graphOf(skill: SkillDetail): GraphDoc {
  return skill.graph as unknown as GraphDoc;
}

/** The API path of a skill (and what follows it: `versions/2`, `export`). */
export function skillPath(name: string, ...rest: string[]): string {
  return ["/api/skills", name, ...rest].map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join("/");
}

/** The stored skills, filtered as the server filters them (empty filters: all of them). */
export function listSkills(filters: { tag?: string; category?: string; q?: string } = {}): Promise<SkillSummary[]> {
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v && v.trim()) as [string, string][]);
  const rest = query.toString();
  return get<SkillSummary[]>(`/api/skills${rest ? `?${rest}` : ""}`);
}

/** The page of a skill, at a version when one is picked. */
export function skillHref(name: string, version: number | null = null): string {
  return `${href("skills", name)}${version !== null ? `?version=${version}` : ""}`;
}

/** The SKILL node a skill becomes when dragged into a graph: pinned to its version, its inputs
 * starting from the parameters' defaults (a required one without a default reads the graph's
 * input of its name, a start the author edits; an optional one is left out). */
export function skillNode(skill: SkillSummary): { type: string; skill: string; inputs: Record<string, unknown> } {
  const inputs = Object.fromEntries(
    parametersOf(skill)
      .filter((p) => "default" in p || p.required !== false)
      .map((p) => [p.name, "default" in p ? p.default : `{{ input.${p.name} }}`]),
  );
  return { type: "SKILL", skill: `${skill.name}@${skill.version}`, inputs };
}
