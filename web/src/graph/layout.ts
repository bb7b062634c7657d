// Layered layout (the DAG by levels, left to right) computed by ELK in a web worker, so a
// big graph does not freeze the page while it is laid out.
import ELK from "elkjs/lib/elk-api";
import workerUrl from "elkjs/lib/elk-worker.min.js?url";
import { END, type GraphDoc, source, target } from "./model";

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

/** Each node's top-left corner, laid out by levels: by ELK, or by `quickLayout` for a big graph. */
export async function layout(graph: GraphDoc): Promise<Map<string, { x: number; y: number }>> {
  if (graph.nodes.length >= BIG) return quickLayout(graph);
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

async function elkLayout(graph: GraphDoc): Promise<Map<string, { x: number; y: number }>> {
  const ids = graph.nodes.map((n) => n.id);
  if (graph.edges.some((e) => target(e) === END)) ids.push(END);
  const known = new Set(ids);
  const result = await engine().layout({
    id: "root",
    layoutOptions: {
      "elk.algorithm": "layered",
      "elk.direction": "RIGHT",
      "elk.layered.spacing.nodeNodeBetweenLayers": "140",
      "elk.spacing.nodeNode": "30",
      "elk.edgeRouting": "POLYLINE",
    },
    children: ids.map((id) => ({ id, width: BOX_W, height: BOX_H })),
    edges: graph.edges
      .filter((e) => known.has(source(e)) && known.has(target(e)))
      .map((e, index) => ({ id: `e${index}`, sources: [source(e)], targets: [target(e)] })),
  });
  return new Map((result.children ?? []).map((child) => [child.id, { x: child.x ?? 0, y: child.y ?? 0 }]));
}
