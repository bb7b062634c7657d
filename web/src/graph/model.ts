// A stored graph (the file format's fields, as GET /api/graphs/{ref} returns them) as the
// canvas draws it: one box per node, one arrow per edge, plus the virtual END.
import type { Edge, Node } from "@xyflow/react";

export interface GraphNodeDef {
  id: string;
  type: string;
  label?: string | null;
  position?: { x?: number; y?: number } | null;
  [field: string]: unknown;
}

export interface GraphEdgeDef {
  id?: string | null;
  source_node_id?: string;
  target_node_id?: string;
  source?: string;
  target?: string;
  schema_id?: string | null;
  label?: string | null;
  condition_key?: string | null;
}

export interface GraphDoc {
  id: string;
  name?: string | null;
  nodes: GraphNodeDef[];
  edges: GraphEdgeDef[];
  schemas?: { id: string; version?: string | null; schema: unknown; description?: string | null }[];
  input_schema?: Record<string, unknown> | null;
  [field: string]: unknown;
}

export const END = "END";

/** The drag data of a node dropped on the canvas from the palette: the node's fields as JSON. */
export const NODE_MIME = "application/x-plait-node";

/** What a draft does to a node or an edge, drawn over the graph. */
export type DiffMark = "added" | "removed" | "changed";

export interface BoxData extends Record<string, unknown> {
  def: GraphNodeDef | null;
  status?: string;
  problems?: string[];
  mark?: DiffMark;
  markNote?: string;
}

export function source(edge: GraphEdgeDef): string {
  return edge.source_node_id ?? edge.source ?? "";
}

export function target(edge: GraphEdgeDef): string {
  return edge.target_node_id ?? edge.target ?? "";
}

export function edgeId(edge: GraphEdgeDef): string {
  return edge.id ?? `${source(edge)}__${target(edge)}`;
}

/** Every node reached from `from` along the edges (`down`: to their targets, `up`: to their
 * sources), each with the fewest edges it takes, nearest first; `from` itself at 0. */
export function reached(graph: GraphDoc, from: string[], way: "down" | "up"): Map<string, number> {
  const next = new Map<string, string[]>();
  for (const e of graph.edges) {
    const [a, b] = way === "down" ? [source(e), target(e)] : [target(e), source(e)];
    next.set(a, [...(next.get(a) ?? []), b]);
  }
  const steps = new Map(from.map((id) => [id, 0]));
  const queue = [...from];
  for (let i = 0; i < queue.length; i++) {
    for (const to of next.get(queue[i]) ?? []) {
      if (steps.has(to)) continue;
      steps.set(to, steps.get(queue[i])! + 1);
      queue.push(to);
    }
  }
  return steps;
}

/** Where a node was put, with a missing coordinate read as 0 (files written by hand, and graphs
 * stored before positions were kept in full, leave out a coordinate that is 0). */
export function placed(def: GraphNodeDef): { x: number; y: number } | null {
  return def.position ? { x: def.position.x ?? 0, y: def.position.y ?? 0 } : null;
}

/** React Flow's nodes and edges for `graph`, at `positions` (laid out or stored). END is drawn
 * when an edge ends there, or with `end` (an editable canvas: something to connect a last node to). */
export function toFlow(
  graph: GraphDoc,
  positions: Map<string, { x: number; y: number }>,
  end = false,
): { nodes: Node<BoxData>[]; edges: Edge[] } {
  const nodes: Node<BoxData>[] = graph.nodes.map((def) => ({
    id: def.id,
    type: "box",
    position: positions.get(def.id) ?? placed(def) ?? { x: 0, y: 0 },
    data: { def },
  }));
  if (graph.edges.some((e) => target(e) === END) || (end && graph.nodes.length > 0)) {
    nodes.push({ id: END, type: "box", position: positions.get(END) ?? { x: 0, y: 0 }, data: { def: null } });
  }
  const edges: Edge[] = graph.edges.map((edge) => ({
    id: edgeId(edge),
    source: source(edge),
    target: target(edge),
    label: [edge.label, edge.schema_id ? `⟨${edge.schema_id}⟩` : null, edge.condition_key ? `if ${edge.condition_key}` : null]
      .filter(Boolean)
      .join(" "),
    data: { def: edge },
  }));
  return { nodes, edges };
}
