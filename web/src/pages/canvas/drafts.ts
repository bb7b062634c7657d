// Unsaved edits kept in this browser while a person works: a reload, a closed tab or a visit to
// a run page does not lose them. One draft per graph, with the version it started from, so that
// coming back after someone else saved says so instead of silently basing the edit on theirs.
import type { GraphDoc } from "../../graph/model";

export interface Draft {
  graph: GraphDoc;
  /** The stored version the edit started from. */
  base: number;
  savedAt: number;
}

const PREFIX = "plait:draft:";

function key(graphId: string): string {
  return PREFIX + graphId;
}

export function readDraft(graphId: string): Draft | null {
  try {
    const raw = localStorage.getItem(key(graphId));
    if (!raw) return null;
    const draft = JSON.parse(raw) as Draft;
    return draft && typeof draft === "object" && draft.graph && Array.isArray(draft.graph.nodes) ? draft : null;
  } catch {
    return null; // unreadable (changed by hand, or a browser that refuses storage): as if none
  }
}

export function writeDraft(graphId: string, graph: GraphDoc, base: number): void {
  try {
    localStorage.setItem(key(graphId), JSON.stringify({ graph, base, savedAt: Date.now() } satisfies Draft));
  } catch {
    // storage full or refused: the edit still lives in the page, only not across a reload
  }
}

export function dropDraft(graphId: string): void {
  try {
    localStorage.removeItem(key(graphId));
  } catch {
    // nothing to drop
  }
}
