// The overview in the canvas's corner: every box as a dot of its run status, and the part of the
// graph in view. React Flow's own MiniMap draws an SVG element (and a component) per node, which
// on a 500-node graph costs about a quarter of the first draw and again on every status change;
// this draws the whole graph on one <canvas> in well under a millisecond.
import { Panel, useReactFlow, useStore, type Node, type ReactFlowState } from "@xyflow/react";
import { type PointerEvent, useEffect, useMemo, useRef } from "react";
import { BOX_H, BOX_W } from "./layout";
import type { BoxData } from "./model";

const WIDTH = 200;
const HEIGHT = 140;
const PLAIN = "#b1b1b7";
/** A status's colour in the overview: the boxes' colours, darker, so a dot stays visible. */
const STATUS_COLOURS: Record<string, string> = {
  running: "#0969da",
  completed: "#2da44e",
  failed: "#cf222e",
  overridden: "#8250df",
  stale: "#bf8700",
};

interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

const viewOf = (state: ReactFlowState): Rect => {
  const [tx, ty, zoom] = state.transform;
  return { x: -tx / zoom, y: -ty / zoom, width: state.width / zoom, height: state.height / zoom };
};
const sameRect = (a: Rect, b: Rect) => a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;

function around(nodes: Node<BoxData>[]): Rect {
  let [left, top, right, bottom] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const { position, measured } of nodes) {
    left = Math.min(left, position.x);
    top = Math.min(top, position.y);
    right = Math.max(right, position.x + (measured?.width ?? BOX_W));
    bottom = Math.max(bottom, position.y + (measured?.height ?? BOX_H));
  }
  return Number.isFinite(left) ? { x: left, y: top, width: right - left, height: bottom - top } : { x: 0, y: 0, width: 1, height: 1 };
}

/** The graph and the view, scaled into the overview: where a point of the graph is drawn. */
function frameFor(graph: Rect, view: Rect) {
  const x = Math.min(graph.x, view.x);
  const y = Math.min(graph.y, view.y);
  const width = Math.max(graph.x + graph.width, view.x + view.width) - x;
  const height = Math.max(graph.y + graph.height, view.y + view.height) - y;
  const scale = Math.min(WIDTH / width, HEIGHT / height);
  const left = (WIDTH - width * scale) / 2;
  const top = (HEIGHT - height * scale) / 2;
  return { x, y, scale, left, top };
}

/** The overview; dragging (or clicking) in it moves the view there, the wheel zooms. */
export function Overview({ nodes }: { nodes: Node<BoxData>[] }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const view = useStore(viewOf, sameRect);
  const zoom = useStore((state) => state.transform[2]);
  const flow = useReactFlow();
  const graph = useMemo(() => around(nodes), [nodes]);
  const frame = frameFor(graph, view);

  useEffect(() => {
    const context = canvas.current?.getContext("2d");
    if (!context) return;
    const ratio = window.devicePixelRatio || 1;
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, WIDTH, HEIGHT);
    const { x, y, scale, left, top } = frame;
    for (const node of nodes) {
      context.fillStyle = STATUS_COLOURS[node.data.status ?? ""] ?? PLAIN;
      const w = Math.max(1, (node.measured?.width ?? BOX_W) * scale);
      const h = Math.max(1, (node.measured?.height ?? BOX_H) * scale);
      context.fillRect(left + (node.position.x - x) * scale, top + (node.position.y - y) * scale, w, h);
    }
    context.strokeStyle = "#0a58ca";
    context.lineWidth = 1.5;
    context.strokeRect(left + (view.x - x) * scale, top + (view.y - y) * scale, view.width * scale, view.height * scale);
  });

  const moveTo = (event: PointerEvent<HTMLCanvasElement>) => {
    const box = event.currentTarget.getBoundingClientRect();
    const fx = frame.x + (event.clientX - box.left - frame.left) / frame.scale;
    const fy = frame.y + (event.clientY - box.top - frame.top) / frame.scale;
    void flow.setCenter(fx, fy, { zoom });
  };
  const ratio = typeof window === "undefined" ? 1 : window.devicePixelRatio || 1;
  return (
    <Panel position="bottom-right" className="overview">
      <canvas
        ref={canvas}
        width={WIDTH * ratio}
        height={HEIGHT * ratio}
        style={{ width: WIDTH, height: HEIGHT }}
        role="img"
        aria-label={`Overview of ${nodes.length} nodes; drag in it to move the view`}
        onPointerDown={(event) => {
          event.currentTarget.setPointerCapture(event.pointerId);
          moveTo(event);
        }}
        onPointerMove={(event) => {
          if (event.currentTarget.hasPointerCapture(event.pointerId)) moveTo(event);
        }}
        onWheel={(event) => void (event.deltaY < 0 ? flow.zoomIn() : flow.zoomOut())}
      />
    </Panel>
  );
}
