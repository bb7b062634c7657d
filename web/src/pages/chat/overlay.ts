// A chat's proposed draft drawn over the graph it changes: the draft's graph, with the nodes and
// edges it removes put back (from the version it started from) so they can be shown struck out,
// and every node and edge marked added, removed or changed as the draft's diff says. A draft of
// a new graph has no version it started from: everything in it is added.
import { useEffect, useState } from "react";
import { type Answer, get, q, type Schemas } from "../../api/client";
import { type DiffMark, edgeId, type GraphDoc, type GraphEdgeDef, source, target } from "../../graph/model";

export type ChatDraft = Answer<"/api/chat/sessions/{session_id}/drafts/{draft_id}">;

/** The draft a conversation proposes now (its message's number: a later proposal of the same
 * draft is another one to draw). */
export interface DraftRef {
  sessionId: string;
  draftId: string;
  seq: number;
}

interface Changes {
  added?: string[];
  removed?: string[];
  changed?: Record<string, string[]>;
}

export interface Overlay {
  draftId: string;
  graph: GraphDoc;
  /** By node id and by edge id (as the canvas names edges). */
  marks: Record<string, DiffMark>;
  /** The fields a changed node or edge changes, in words. */
  notes: Record<string, string>;
  /** How many nodes and edges each mark has. */
  counts: { nodes: Record<DiffMark, number>; edges: Record<DiffMark, number> };
}

const pair = (edge: GraphEdgeDef) => `${source(edge)}->${target(edge)}`;

function asDoc(document: unknown, fallbackId: string): GraphDoc {
  const doc = (document && typeof document === "object" ? document : {}) as Partial<GraphDoc>;
  return {
    ...doc,
    id: typeof doc.id === "string" ? doc.id : fallbackId,
    nodes: Array.isArray(doc.nodes) ? doc.nodes : [],
    edges: Array.isArray(doc.edges) ? doc.edges : [],
  } as GraphDoc;
}

/** The draft's graph with what it removes from `base` put back, and the marks of its diff. */
export function overlayOf(draft: ChatDraft, base: GraphDoc | null): Overlay {
  const proposed = asDoc(draft.graph, draft.id);
  const diff = draft.diff as { nodes?: Changes; edges?: Changes };
  const nodes = diff.nodes ?? {};
  const edges = diff.edges ?? {};
  const gone = new Set(nodes.removed ?? []);
  const cut = new Set(edges.removed ?? []);
  const graph: GraphDoc = {
    ...proposed,
    nodes: [...proposed.nodes, ...(base?.nodes ?? []).filter((n) => gone.has(n.id))],
    edges: [...proposed.edges, ...(base?.edges ?? []).filter((e) => cut.has(pair(e)))],
  };
  const marks: Record<string, DiffMark> = {};
  const notes: Record<string, string> = {};
  for (const id of nodes.added ?? []) marks[id] = "added";
  for (const id of nodes.removed ?? []) marks[id] = "removed";
  for (const [id, fields] of Object.entries(nodes.changed ?? {})) {
    marks[id] = "changed";
    notes[id] = `changed: ${fields.join(", ")}`;
  }
  const counts = { nodes: { added: 0, removed: 0, changed: 0 }, edges: { added: 0, removed: 0, changed: 0 } };
  for (const mark of Object.values(marks)) counts.nodes[mark] += 1;
  const edgeMarks = new Map<string, DiffMark>();
  for (const key of edges.added ?? []) edgeMarks.set(key, "added");
  for (const key of edges.removed ?? []) edgeMarks.set(key, "removed");
  for (const key of Object.keys(edges.changed ?? {})) edgeMarks.set(key, "changed");
  for (const edge of graph.edges) {
    const mark = edgeMarks.get(pair(edge));
    if (mark) {
      marks[edgeId(edge)] = mark;
      counts.edges[mark] += 1;
    }
  }
  return { draftId: draft.id, graph, marks, notes, counts };
}

/** The overlay of the draft `shown` (null: none), loaded when it changes: the draft, and the
 * version of the graph it started from. */
export function useDraftOverlay(shown: DraftRef | null): { overlay: Overlay | null; error: unknown } {
  const [state, setState] = useState<{ key: string; overlay: Overlay | null; error: unknown }>({
    key: "",
    overlay: null,
    error: null,
  });
  const key = shown ? `${shown.sessionId}/${shown.draftId}/${shown.seq}` : "";
  useEffect(() => {
    if (!shown) {
      setState({ key: "", overlay: null, error: null });
      return;
    }
    let live = true;
    (async () => {
      const draft = await get<ChatDraft>(`/api/chat/sessions/${q(shown.sessionId)}/drafts/${q(shown.draftId)}`);
      let base: GraphDoc | null = null;
      if (draft.base_graph_id && draft.base_version) {
        const stored = await get<Schemas["GraphOut"]>(`/api/graphs/${q(draft.base_graph_id)}?version=${draft.base_version}`);
        base = asDoc(stored.graph, stored.slug);
      }
      if (live) setState({ key, overlay: overlayOf(draft, base), error: null });
    })().catch((error) => {
      if (live) setState({ key, overlay: null, error });
    });
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  // what was loaded for another draft is not shown while this one loads
  return state.key === key ? { overlay: state.overlay, error: state.error } : { overlay: null, error: null };
}
