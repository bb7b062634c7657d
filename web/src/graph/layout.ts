// Layered layout (the DAG by levels, left to right) computed by ELK in a web worker, so a
// big graph does not freeze the page while it is laid out.
import ELK, { type ElkExtendedEdge, type ElkNode, type ElkPort } from "elkjs/lib/elk-api";
import workerUrl from "elkjs/lib/elk-worker.min.js?url";
import { END, type GraphDoc, type GraphEdgeDef, source, target } from "./model";

export const BOX_W = 200;
export const BOX_H = 64;

/** From this many nodes on, the canvas is laid out by `quickLayout` instead of ELK. ELK's
 * first layout in a fresh worker spends most of its time compiling itself: ~1.8 s for 500 nodes
 * and ~5 s for 2,000 on these machines, whatever its options (bench/workbench.py); by levels
 * in one pass it is a few milliseconds, with more crossings. */
export const BIG = 150;

let elk: InstanceType<typeof ELK> | null = null;

function engine(): InstanceType<typeof ELK> {
  elk ??= new ELK({ workerFactory: () => new Worker(workerUrl) });
  return elk;
}

export interface Point {
  x: number;
  y: number;
}

/** A laid out graph: each node's top-left corner, and each edge's route (its start on the source
 * box's right side, its bends, its end on the target's left side), found by `routeKey`. */
export interface Layout {
  positions: Map<string, Point>;
  routes: Map<string, Point[]>;
}

/** The key of the route of an edge from `from` to `to` in `Layout.routes`. */
export function routeKey(from: string, to: string): string {
  return JSON.stringify([from, to]);
}

/** The graph laid out by levels: by ELK, with edges routed around the boxes; or by `quickLayout`
 * for a big graph, whose edges get no route. */
export async function layout(graph: GraphDoc): Promise<Layout> {
  if (graph.nodes.length >= BIG) return { positions: quickLayout(graph), routes: new Map() };
  return elkLayout(graph);
}

/** Levels by longest path from the entry nodes, each level a column in the nodes' order. A node
 * on a cycle (an invalid graph) goes in the first column, so every node is drawn. */
export function quickLayout(graph: GraphDoc): Map<string, { x: number; y: number }> {
  const ids = graph.nodes.map((n) => n.id);
  if (graph.edges.some((e) => target(e) === END)) ids.push(END);
  const level = new Map(ids.map((id) => [id, 0]));
  const incoming = new Map(ids.map((id) => [id, 0]));
  const next = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const e of graph.edges) {
    if (!level.has(source(e)) || !level.has(target(e))) continue;
    next.get(source(e))!.push(target(e));
    incoming.set(target(e), incoming.get(target(e))! + 1);
  }
  const ready = ids.filter((id) => incoming.get(id) === 0);
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i];
    for (const to of next.get(id)!) {
      level.set(to, Math.max(level.get(to)!, level.get(id)! + 1));
      incoming.set(to, incoming.get(to)! - 1);
      if (incoming.get(to) === 0) ready.push(to);
    }
  }
  const last = Math.max(0, ...[...level].filter(([id]) => id !== END).map(([, l]) => l));
  const rows = new Map<number, number>();
  const at = new Map<string, { x: number; y: number }>();
  for (const id of ids) {
    const column = id === END ? last + 1 : level.get(id)!;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    at.set(id, { x: column * (BOX_W + 140), y: row * (BOX_H + 30) });
  }
  return at;
}

type Side = "WEST" | "EAST";

/** A port's id: its node's, then a character no node id has, so that no two ids are the same. */
function portId(node: string, side: Side): string {
  return `${node}\u0000${side}`;
}

/** Each box has one port on each side, where React Flow draws its handles (GraphView's `Box`):
 * target on the left, source on the right, both halfway down. Fixed there, ELK's routes start and
 * end where the canvas connects its edges. */
function ports(id: string): ElkPort[] {
  const at = (side: Side) => ({
    id: portId(id, side),
    x: side === "WEST" ? 0 : BOX_W,
    y: BOX_H / 2,
    width: 0,
    height: 0,
    layoutOptions: { "elk.port.side": side },
  });
  return [at("WEST"), at("EAST")];
}

async function elkLayout(graph: GraphDoc): Promise<Layout> {
  const ids = graph.nodes.map((n) => n.id);
  if (graph.edges.some((e) => target(e) === END)) ids.push(END);
  const known = new Set(ids);
  const edges = graph.edges.filter((e) => known.has(source(e)) && known.has(target(e)));
  const result = await engine().layout(elkGraph(ids, edges));
  const positions = new Map((result.children ?? []).map((child) => [child.id, { x: child.x ?? 0, y: child.y ?? 0 }]));
  return { positions, routes: routesOf(result.edges ?? [], edges) };
}

/** ELK's input: the boxes with their ports, the edges between ports (each's id its index). */
function elkGraph(ids: string[], edges: GraphEdgeDef[]): ElkNode {
  return {
    id: "root",
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": "RIGHT",
      "elk.layered.spacing.nodeNodeBetweenLayers": "140",
      "elk.spacing.nodeNode": "30",
      // Edges in horizontal and vertical segments, kept off the boxes by a margin that a box a
      // little taller than BOX_H (a label on two lines) does not reach.
      "elk.edgeRouting": "ORTHOGONAL",
      "elk.spacing.edgeNode": "20",
    },
    children: ids.map((id) => ({
      id,
      width: BOX_W,
      height: BOX_H,
      layoutOptions: { "elk.portConstraints": "FIXED_POS" },
      ports: ports(id),
    })),
    edges: edges.map((e, index) => ({
      id: `e${index}`,
      sources: [portId(source(e), "EAST")],
      targets: [portId(target(e), "WEST")],
    })),
  };
}

/** Each routed edge's points, in the root's coordinates as the nodes' positions are. */
function routesOf(routed: ElkExtendedEdge[], edges: GraphEdgeDef[]): Map<string, Point[]> {
  const routes = new Map<string, Point[]>();
  for (const { id, sections } of routed) {
    const edge = edges[Number(id.slice(1))];
    // one source and one target make one section (more would need putting in order: unrouted)
    const [only, ...more] = sections ?? [];
    if (!edge || !only || more.length) continue;
    routes.set(routeKey(source(edge), target(edge)), [only.startPoint, ...(only.bendPoints ?? []), only.endPoint]);
  }
  return routes;
}
