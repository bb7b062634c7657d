import {
  applyEdgeChanges,
  applyNodeChanges,
  Background,
  Controls,
  type Edge,
  type EdgeChange,
  Handle,
  MiniMap,
  type Node,
  type NodeChange,
  type NodeProps,
  Position,
  ReactFlow,
  ReactFlowProvider,
  type ReactFlowState,
  useReactFlow,
  useStore,
} from "@xyflow/react";
import { memo, useCallback, useEffect, useMemo, useState } from "react";
import { BOX_H, BOX_W, layout } from "./layout";
import { type BoxData, END, type GraphDoc, source, target, toFlow } from "./model";

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
        className={`box far type-${kind.toLowerCase()} ${data.status ? `status-${data.status}` : ""} ${problems.length ? "has-problems" : ""}`}
        data-node={id}
        data-status={data.status ?? ""}
        title={def?.label || id}
      >
        <Handle type="target" position={Position.Left} />
        {id !== END ? <Handle type="source" position={Position.Right} /> : null}
      </div>
    );
  }
  return (
    <div
      className={`box type-${kind.toLowerCase()} ${data.status ? `status-${data.status}` : ""} ${selected ? "selected" : ""} ${problems.length ? "has-problems" : ""}`}
      data-node={id}
      data-status={data.status ?? ""}
      title={problems.join("\n") || undefined}
    >
      <Handle type="target" position={Position.Left} />
      <div className="box-type">{kind}</div>
      <div className="box-label">{def?.label || id}</div>
      {def && def.label ? <div className="box-id">{id}</div> : null}
      {data.status ? <div className="box-status">{data.status}</div> : null}
      {problems.length ? (
        <div className="box-problems" role="note" aria-label={`${problems.length} problems on ${id}`}>
          ⚠ {problems.length}
        </div>
      ) : null}
      {id !== END ? <Handle type="source" position={Position.Right} /> : null}
    </div>
  );
});

const NODE_TYPES = { box: Box };

/** Below this zoom, boxes are drawn without text and edges without labels. */
const FAR = 0.45;
const zoomedOut = (state: ReactFlowState) => state.transform[2] < FAR;

export interface GraphViewProps {
  graph: GraphDoc;
  /** Nodes can be moved, connected and deleted; each edit is reported, the caller applies it. */
  editable?: boolean;
  onMoved?: (nodeId: string, at: { x: number; y: number }) => void;
  onConnected?: (from: string, to: string) => void;
  onRemoved?: (nodeIds: string[], edgeIds: string[]) => void;
  /** Filled with a function that gives a free spot for a new node (right of everything drawn). */
  freeSpot?: { current: (() => { x: number; y: number }) | null };
  /** A node to bring into view (a node just added). */
  focus?: string | null;
  statuses?: Record<string, string>;
  problems?: Record<string, string[]>;
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
  const { graph, statuses = NONE, problems = NONE, selected = null, onSelect } = props;
  const { editable = false, onMoved, onConnected, onRemoved, freeSpot, focus } = props;
  const viewport = useReactFlow();
  const [laidOut, setLaidOut] = useState<Map<string, { x: number; y: number }> | null>(null);
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
    const at = new Map(laidOut);
    for (const n of graph.nodes) if (n.position) at.set(n.id, n.position);
    return at;
  }, [laidOut, graph]);

  useEffect(() => {
    if (!freeSpot) return;
    freeSpot.current = () => {
      const drawn = [...(positions?.values() ?? [])].filter((_, i) => i < graph.nodes.length + 1);
      const right = Math.max(0, ...drawn.map((p) => p.x));
      const top = Math.min(...drawn.map((p) => p.y), 0);
      return { x: right + BOX_W + 80, y: top };
    };
  }, [freeSpot, positions, graph.nodes.length]);

  useEffect(() => {
    const at = focus ? positions?.get(focus) : undefined;
    if (at) void viewport.setCenter(at.x + BOX_W / 2, at.y + BOX_H / 2, { zoom: viewport.getZoom() });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [focus, positions]);

  const flow = useMemo(() => (positions ? toFlow(graph, positions) : null), [graph, positions]);
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
          data: { ...node.data, status: statuses[node.id], problems: problems[node.id] },
        };
      });
    });
  }, [flow, statuses, problems, selected]);
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
        label: far ? undefined : edge.label,
        selected: picked.has(edge.id),
        className: problems[edge.id]?.length ? "edge-problem" : undefined,
        animated: statuses[edge.source] === "running",
      }));
    });
  }, [flow, problems, statuses, far]);
  const onEdgesChange = useCallback((changes: EdgeChange[]) => setEdges((drawn) => applyEdgeChanges(changes, drawn)), []);

  if (!flow || nodes.length === 0) return <div className="canvas loading" aria-busy="true">Laying out {graph.nodes.length} nodes…</div>;
  return (
    <div className="canvas" data-testid="canvas" data-nodes={nodes.length}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        fitView
        minZoom={0.05}
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
        <Background />
        <Controls showInteractive={false} />
        {nodes.length > 30 ? <MiniMap pannable zoomable /> : null}
      </ReactFlow>
    </div>
  );
}
