import type { Answer } from "../../api/client";
import { href } from "../../router";

export type Scope = Answer<"/api/memory">[number];
export type Fact = Answer<"/api/memory/facts">[number];
export type FactDetail = Answer<"/api/memory/facts/{fact_id}">;

/** The API path of a fact (and what follows it: `correct`, `retract`). */
export function factPath(id: string, ...rest: string[]): string {
  return ["/api/memory/facts", id, ...rest].map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join("/");
}

/** The page of a memory, with a fact open and superseded and retracted facts shown when asked:
 * what is open stays in the address, so a reload or a shared link opens the same view. */
export function memoryHref(scope: string, fact: string | null = null, all = false): string {
  const query = new URLSearchParams();
  if (fact) query.set("fact", fact);
  if (all) query.set("show", "all");
  const rest = query.toString();
  return `${href("memory", scope)}${rest ? `?${rest}` : ""}`;
}

/** What each status means, for the pill's tooltip. */
export const STATUS: Record<string, string> = {
  active: "remembered: the chat recalls it",
  superseded: "replaced by a correction: kept in the history, never recalled",
  retracted: "said to be wrong: kept in the history, never recalled",
};

/** A fact as one line: "ada · lives in · paris". */
export function triple(fact: Fact): string {
  return `${fact.subject} · ${fact.predicate} · ${fact.object}`;
}

/** An id as pages show it (the first 8 characters; the whole one in the title). */
export function short(id: string): string {
  return id.slice(0, 8);
}
