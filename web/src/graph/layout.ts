// Layered layout (the DAG by levels, left to right) computed by ELK in a web worker, so a
// big graph does not freeze the page while it is laid out.
import ELK from "elkjs/lib/elk-api";
import workerUrl from "elkjs/lib/elk-worker.min.js?url";
import { END, type GraphDoc, source, target } from "./model";

export const BOX_W = 200;
export const BOX_H = 64;

let elk: InstanceType<typeof ELK> | null = null;

function engine(): InstanceType<typeof ELK> {
  elk ??= new ELK({ workerFactory: () => new Worker(workerUrl) });
  return elk;
}

/** Each node's top-left corner, laid out by levels. */
export async function layout(graph: GraphDoc): Promise<Map<string, { x: number; y: number }>> {
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
