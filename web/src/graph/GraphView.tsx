import {
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  Controls,
  type Edge,
  type EdgeChange,
  Handle,
  type Node,
  type NodeChange,
  type NodeProps,
  getBezierPath,
  getViewportForBounds,
  Position,
  ReactFlow,
  ReactFlowProvider,
  type ReactFlowState,
  useReactFlow,
  useStore,
  type Viewport,
  ViewportPortal,
} from "@xyflow/react";
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { BOX_H, BOX_W, type Layout, layout, routeKey } from "./layout";
import { type BoxData, type DiffMark, END, type GraphDoc, NODE_MIME, placed, source, target, toFlow } from "./model";
import { Overview } from "./Overview";
import { RoutedEdge } from "./RoutedEdge";

/** One node on the canvas: its type gives the look, its run status the colour. */
const Box = memo(function Box({ id, data, selected }: NodeProps<Node<BoxData>>) {
  const def = data.def;
  const kind = def ? def.type : "END";
  const problems = data.problems ?? [];
  const far = useStore(zoomedOut);
  if (far) {
    // Too small to read: a light box in the node's colours, so big graphs draw fast.
    return (
      <div
        className={`box far type-${kind.toLowerCase()} ${data.status ? `status-${data.status}` : ""} ${problems.length ? "has-problems" : ""} ${data.mark ? `diff-${data.mark}` : ""}`}
        data-node={id}
        data-status={data.status ?? ""}
        data-diff={data.mark ?? undefined}
        title={def?.label || id}
      >
        <Handle type="target" position={Position.Left} />
        {id !== END ? <Handle type="source" position={Position.Right} /> : null}
      </div>
    );
  }
  return (
    <div
      className={`box type-${kind.toLowerCase()} ${data.status ? `status-${data.status}` : ""} ${selected ? "selected" : ""} ${problems.length ? "has-problems" : ""} ${data.mark ? `diff-${data.mark}` : ""}`}
      data-node={id}
      data-status={data.status ?? ""}
      data-diff={data.mark ?? undefined}
      title={problems.join("\n") || undefined}
    >
      <Handle type="target" position={Position.Left} />
      <div className="box-type">{kind}</div>
      <div className="box-label" title={def?.label || id}>
        {def?.label || id}
      </div>
      {def && def.label ? <div className="box-id">{id}</div> : null}
      {data.mark ? (
        <div className="box-diff" title={data.markNote}>
          {MARK_WORDS[data.mark]}
        </div>
      ) : null}
      {data.status ? (
        <div className="box-status">{data.status === "waiting" ? "waiting for a person" : data.status}</div>
      ) : null}
      {problems.length ? (
        <div className="box-problems" role="note" aria-label={`${problems.length} problems on ${id}`}>
          ⚠ {problems.length}
        </div>
      ) : null}
      {id !== END ? <Handle type="source" position={Position.Right} /> : null}
    </div>
  );
});

/** A draft's marks in words: the colour is never the only sign. */
const MARK_WORDS: Record<DiffMark, string> = { added: "added", removed: "removed", changed: "changed" };

const NODE_TYPES = { box: Box };
const NO_EDGES: Edge[] = [];

/** Every edge as one SVG path, for a view zoomed out too far to pick an edge: a big graph's
 * hundreds of edges then cost one element instead of a component (and two paths) each. An edge
 * with a problem keeps its colour, drawn in a second path. */
const FarEdges = memo(function FarEdges({ nodes, edges }: { nodes: Node<BoxData>[]; edges: Edge[] }) {
  const [plain, flagged] = useMemo(() => {
    const at = new Map(nodes.map((n) => [n.id, n]));
    const parts: [string[], string[]] = [[], []];
    for (const edge of edges) {
      const from = at.get(edge.source);
      const to = at.get(edge.target);
      if (!from || !to) continue;
      const [d] = getBezierPath({
        sourceX: from.position.x + (from.measured?.width ?? BOX_W),
        sourceY: from.position.y + (from.measured?.height ?? BOX_H) / 2,
        sourcePosition: Position.Right,
        targetX: to.position.x,
        targetY: to.position.y + (to.measured?.height ?? BOX_H) / 2,
        targetPosition: Position.Left,
      });
      parts[edge.className?.includes("edge-problem") ? 1 : 0].push(d);
    }
    return parts.map((p) => p.join(" "));
  }, [nodes, edges]);
  // The view is scaled by a CSS transform, which `vector-effect: non-scaling-stroke` does not
  // undo: the width is set in the graph's units, so that a line stays a pixel wide on screen.
  const pixel = 1 / useStore((state) => state.transform[2]);
  return (
    <ViewportPortal>
      <svg className="far-edges" aria-hidden="true">
        <path d={plain} strokeWidth={pixel} />
        {flagged ? <path className="flagged" d={flagged} strokeWidth={2 * pixel} /> : null}
      </svg>
    </ViewportPortal>
  );
});

/** Below this zoom, boxes are drawn without text and edges without labels. */
const FAR = 0.45;
const zoomedOut = (state: ReactFlowState) => state.transform[2] < FAR;
const MIN_ZOOM = 0.05;
const MAX_ZOOM = 2;
/** Edges run in horizontal and vertical segments with rounded corners, from a box's right side
 * to the next one's left: they read as a flow chart. Each follows the route the layout found
 * around the boxes; one whose route no longer meets its boxes is a smooth step, which at least
 * goes around its own two. `RoutedEdge` takes React Flow's `smoothstep` name, being that edge
 * (its fallback) drawn along a route when there is one. */
const EDGE_OPTIONS = { type: "smoothstep" } as const;
const EDGE_TYPES = { smoothstep: RoutedEdge };
/** A first view shows boxes at most at their own size: one node does not fill the canvas. */
const FIRST_MAX_ZOOM = 1;
/** The zoom at which a box's label (13 px, styles.css) is drawn at 11 px: a first view never
 * shrinks a graph below it; a graph too big to read whole starts at its beginning instead, the
 * rest a scroll away. */
export const READABLE_ZOOM = 11 / 13;

/** The free place nearest `want` for a new box, trying rings of places around it (a box's width
 * and height apart, plus a gap): a node added appears where the person is looking, on no other. */
function roomNear(want: { x: number; y: number }, taken: { x: number; y: number }[]): { x: number; y: number } {
  const free = (at: { x: number; y: number }) =>
    taken.every((p) => Math.abs(p.x - at.x) >= BOX_W + 20 || Math.abs(p.y - at.y) >= BOX_H + 20);
  const [dx, dy] = [BOX_W + 40, BOX_H + 40];
  // graphs read left to right: of one ring, places to the right and on the same row come first
  const cost = ([cx, cy]: number[]) => Math.abs(cy) * 3 + (cx < 0 ? 10 : 0) + Math.abs(cx);
  for (let ring = 0; ring < 12; ring++) {
    const places: number[][] = [];
    for (let i = -ring; i <= ring; i++) places.push([i, -ring], [i, ring], [-ring, i], [ring, i]);
    for (const [cx, cy] of places.sort((a, b) => cost(a) - cost(b))) {
      const at = { x: Math.round(want.x + cx * dx), y: Math.round(want.y + cy * dy) };
      if (free(at)) return at;
    }
  }
  return { x: Math.round(want.x), y: Math.round(want.y) };
}

/** The first view of boxes at `positions` in a frame of `width` × `height`: every box, as
 * React Flow's `fitView` would show them, when that keeps the labels readable; else readable, at
 * the graph's beginning (top left, centred in height when it fits). Starting there (instead of at
 * zoom 1 until the boxes are measured) draws a big graph once, not twice. */
function firstView(positions: Map<string, { x: number; y: number }>, width: number, height: number): Viewport {
  let [left, top, right, bottom] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const { x, y } of positions.values()) {
    left = Math.min(left, x);
    top = Math.min(top, y);
    right = Math.max(right, x + BOX_W);
    bottom = Math.max(bottom, y + BOX_H);
  }
  if (!Number.isFinite(left)) return { x: 0, y: 0, zoom: 1 };
  const bounds = { x: left, y: top, width: right - left, height: bottom - top };
  const fit = getViewportForBounds(bounds, width, height, MIN_ZOOM, FIRST_MAX_ZOOM, 0.1);
  if (fit.zoom >= READABLE_ZOOM) return fit;
  const zoom = READABLE_ZOOM;
  const margin = 24;
  const tall = bounds.height * zoom;
  const y = tall + 2 * margin <= height ? (height - tall) / 2 - top * zoom : margin - top * zoom;
  return { x: margin - left * zoom, y, zoom };
}

export interface GraphViewProps {
  graph: GraphDoc;
  /** Nodes can be moved, connected and deleted; each edit is reported, the caller applies it. */
  editable?: boolean;
  onMoved?: (nodeId: string, at: { x: number; y: number }) => void;
  onConnected?: (from: string, to: string) => void;
  onRemoved?: (nodeIds: string[], edgeIds: string[]) => void;
  /** Filled with a function that gives a free spot for a new node (in view, on no other box). */
  freeSpot?: { current: (() => { x: number; y: number }) | null };
  /** A node dragged in from the palette (`NODE_MIME`: its fields) and dropped at `at`. */
  onDropNode?: (fields: { type: string; [field: string]: unknown }, at: { x: number; y: number }) => void;
  /** A node to bring into view (a node just added). */
  focus?: string | null;
  statuses?: Record<string, string>;
  problems?: Record<string, string[]>;
  /** A draft drawn over the graph: nodes and edges (by id) added, removed or changed, with a
   * note (the fields changed) shown on hover. */
  marks?: Record<string, DiffMark>;
  markNotes?: Record<string, string>;
  selected?: string | null;
  onSelect?: (nodeId: string | null, edgeId: string | null) => void;
}

/** The graph as a DAG laid out by levels; nodes coloured by `statuses`, pinned with `problems`. */
export function GraphView(props: GraphViewProps) {
  return (
    <ReactFlowProvider>
      <Canvas {...props} />
    </ReactFlowProvider>
  );
}

const NONE: Record<string, never> = {};

function Canvas(props: GraphViewProps) {
  const { graph, statuses = NONE, problems = NONE, marks = NONE, markNotes = NONE, selected = null, onSelect } = props;
  const { editable = false, onMoved, onConnected, onRemoved, freeSpot, focus, onDropNode } = props;
  const viewport = useReactFlow();
  const frame = useRef<HTMLDivElement>(null);
  const [frameSize, setFrameSize] = useState<{ width: number; height: number } | null>(null);
  useLayoutEffect(() => {
    const box = frame.current?.getBoundingClientRect();
    if (box) setFrameSize({ width: box.width, height: box.height });
  }, []);
  const [laidOut, setLaidOut] = useState<Layout | null>(null);
  const shape = useMemo(
    () => JSON.stringify([graph.nodes.map((n) => n.id), graph.edges.map((e) => [source(e), target(e)])]),
    [graph],
  );

  // Laid out by levels; a node with a stored `position` stays where its author put it.
  useEffect(() => {
    let live = true;
    performance.mark("plait:layout-start"); // read by bench/workbench.py
    layout(graph).then((at) => {
      performance.mark("plait:layout-end");
      if (live) setLaidOut(at);
    });
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape]);
  const positions = useMemo(() => {
    if (!laidOut) return null;
    const at = new Map(laidOut.positions);
    for (const n of graph.nodes) {
      const where = placed(n);
      if (where) at.set(n.id, where);
    }
    // END has no stored place. It goes where the layout put it, unless its author placed every
    // node (the layout's place means nothing then) or a placed node is there now (END would hide
    // it); and on an editable canvas it is there before anything ends in it, to connect a last
    // node to. Then it waits to the right of every node.
    const end = at.get(END);
    const overlaps = (p: { x: number; y: number }) => Math.abs(p.x - end!.x) < BOX_W && Math.abs(p.y - end!.y) < BOX_H;
    const everyPlaced = graph.nodes.every((n) => n.position);
    const moved = end ? everyPlaced || graph.nodes.some((n) => n.position && overlaps(at.get(n.id)!)) : editable;
    if (moved && graph.nodes.length > 0) {
      const right = Math.max(...graph.nodes.map((n) => at.get(n.id)?.x ?? 0));
      const from = graph.edges.find((e) => target(e) === END);
      const top = Math.min(...graph.nodes.map((n) => at.get(n.id)?.y ?? 0));
      at.set(END, { x: right + BOX_W + 140, y: (from && at.get(source(from))?.y) ?? top });
    }
    return at;
  }, [laidOut, graph, editable]);

  useEffect(() => {
    if (!freeSpot) return;
    freeSpot.current = () => {
      const box = frame.current?.getBoundingClientRect();
      const middle = box
        ? viewport.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 3 })
        : { x: 0, y: 0 };
      // END is not in the way: it waits right of the nodes, wherever they are
      const taken = graph.nodes.map((n) => positions?.get(n.id)).filter((p) => p !== undefined);
      return roomNear({ x: middle.x - BOX_W / 2, y: middle.y - BOX_H / 2 }, taken);
    };
  }, [freeSpot, positions, viewport, graph.nodes]);

  useEffect(() => {
    const at = focus ? positions?.get(focus) : undefined;
    const box = frame.current?.getBoundingClientRect();
    if (!at || !box) return;
    // brought into view only when it is not in view already: the view does not jump for nothing
    const from = viewport.screenToFlowPosition({ x: box.left, y: box.top });
    const to = viewport.screenToFlowPosition({ x: box.right, y: box.bottom });
    const seen = at.x >= from.x && at.y >= from.y && at.x + BOX_W <= to.x && at.y + BOX_H <= to.y;
    if (!seen) void viewport.setCenter(at.x + BOX_W / 2, at.y + BOX_H / 2, { zoom: viewport.getZoom() });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focus, positions]);

  const flow = useMemo(() => (positions ? toFlow(graph, positions, editable) : null), [graph, positions, editable]);
  // React Flow measures each node after it is drawn and shows it only once measured; the nodes
  // live in state, so a new colour keeps the measurement instead of hiding the node again.
  const [nodes, setNodes] = useState<Node<BoxData>[]>([]);
  useEffect(() => {
    setNodes((drawn) => {
      const before = new Map(drawn.map((n) => [n.id, n]));
      return (flow?.nodes ?? []).map((node) => {
        const old = before.get(node.id);
        if (
          old &&
          old.data.def === node.data.def &&
          old.data.status === statuses[node.id] &&
          old.data.problems === problems[node.id] &&
          old.data.mark === marks[node.id] &&
          old.data.markNote === markNotes[node.id] &&
          old.selected === (node.id === selected) &&
          old.position.x === node.position.x &&
          old.position.y === node.position.y
        ) {
          return old; // unchanged: the same object, so React Flow does not draw this box again
        }
        return {
          ...node,
          measured: old?.measured,
          selected: node.id === selected,
          data: {
            ...node.data,
            status: statuses[node.id],
            problems: problems[node.id],
            mark: marks[node.id],
            markNote: markNotes[node.id],
          },
        };
      });
    });
  }, [flow, statuses, problems, marks, markNotes, selected]);
  const onNodesChange = useCallback(
    (changes: NodeChange<Node<BoxData>>[]) => setNodes((drawn) => applyNodeChanges(changes, drawn)),
    [],
  );
  const [edges, setEdges] = useState<Edge[]>([]);
  const far = useStore(zoomedOut);
  useEffect(() => {
    setEdges((drawn) => {
      const picked = new Set(drawn.filter((e) => e.selected).map((e) => e.id));
      return (flow?.edges ?? []).map((edge) => ({
        ...edge,
        label: edge.label,
        // a route meets the boxes where the layout put them; RoutedEdge checks it still does
        data: { ...edge.data, route: laidOut?.routes.get(routeKey(edge.source, edge.target)) },
        selected: picked.has(edge.id),
        className:
          [problems[edge.id]?.length ? "edge-problem" : "", marks[edge.id] ? `edge-${marks[edge.id]}` : ""]
            .filter(Boolean)
            .join(" ") || undefined,
        ariaLabel: marks[edge.id] ? `Edge from ${edge.source} to ${edge.target}, ${MARK_WORDS[marks[edge.id]]}` : undefined,
        animated: statuses[edge.source] === "running",
      }));
    });
  }, [flow, problems, statuses, marks, laidOut]);
  const onEdgesChange = useCallback((changes: EdgeChange[]) => setEdges((drawn) => applyEdgeChanges(changes, drawn)), []);

  const start = useMemo(
    () => (positions && frameSize ? firstView(positions, frameSize.width, frameSize.height) : undefined),
    // Only the first view matters: React Flow owns the view once it is drawn.
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [positions === null, frameSize],
  );

  if (!flow || (nodes.length === 0 && flow.nodes.length > 0)) {
    return (
      <div className="canvas loading" aria-busy="true" ref={frame}>
        Laying out {graph.nodes.length} nodes…
      </div>
    );
  }
  return (
    <div
      className="canvas"
      data-testid="canvas"
      data-nodes={nodes.length}
      ref={frame}
      onDragOver={(event) => {
        if (!editable || !onDropNode || !event.dataTransfer.types.includes(NODE_MIME)) return;
        event.preventDefault();
        event.dataTransfer.dropEffect = "copy";
      }}
      onDrop={(event) => {
        const data = editable && onDropNode ? event.dataTransfer.getData(NODE_MIME) : "";
        if (!data) return;
        event.preventDefault();
        const at = viewport.screenToFlowPosition({ x: event.clientX, y: event.clientY });
        onDropNode!(JSON.parse(data), { x: at.x - BOX_W / 2, y: at.y - BOX_H / 2 });
      }}
    >
      {nodes.length === 0 ? (
        <p className="canvas-empty" role="status">
          {editable ? "No nodes yet: add one from the palette on the left." : "This graph has no nodes."}
        </p>
      ) : null}
      <ReactFlow
        defaultViewport={start}
        nodes={nodes}
        edges={far ? NO_EDGES : edges}
        nodeTypes={NODE_TYPES}
        edgeTypes={EDGE_TYPES}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        panOnScroll
        defaultEdgeOptions={EDGE_OPTIONS}
        minZoom={MIN_ZOOM}
        maxZoom={MAX_ZOOM}
        onlyRenderVisibleElements
        nodesConnectable={editable}
        nodesDraggable={editable}
        deleteKeyCode={editable ? ["Delete", "Backspace"] : null}
        onNodeDragStop={(_, node) => onMoved?.(node.id, node.position)}
        onConnect={(connection) => onConnected?.(connection.source, connection.target)}
        onDelete={({ nodes: gone, edges: cut }) => onRemoved?.(gone.map((n) => n.id), cut.map((e) => e.id))}
        onNodeClick={(_, node) => onSelect?.(node.id, null)}
        onEdgeClick={(_, edge) => onSelect?.(null, edge.id)}
        onPaneClick={() => onSelect?.(null, null)}
      >
        {far ? <FarEdges nodes={nodes} edges={edges} /> : null}
        <Background />
        <Controls showInteractive={false} fitViewOptions={{ maxZoom: FIRST_MAX_ZOOM, padding: 0.1 }} />
        {nodes.length > 30 ? <Overview nodes={nodes} /> : null}
      </ReactFlow>
    </div>
  );
}
