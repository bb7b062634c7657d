import {
  applyNodeChanges,
  Background,
  Controls,
  type Edge,
  Handle,
  MiniMap,
  type Node,
  type NodeChange,
  type NodeProps,
  Position,
  ReactFlow,
  ReactFlowProvider,
} from "@xyflow/react";
import { memo, useCallback, useEffect, useMemo, useState } from "react";
import { layout } from "./layout";
import { type BoxData, END, type GraphDoc, toFlow } from "./model";

/** One node on the canvas: its type gives the look, its run status the colour. */
const Box = memo(function Box({ id, data, selected }: NodeProps<Node<BoxData>>) {
  const def = data.def;
  const kind = def ? def.type : "END";
  const problems = data.problems ?? [];
  return (
    <div
      className={`box type-${kind.toLowerCase()} ${data.status ? `status-${data.status}` : ""} ${selected ? "selected" : ""} ${problems.length ? "has-problems" : ""}`}
      data-node={id}
      data-status={data.status ?? ""}
      title={problems.join("\n") || undefined}
    >
      {id !== END ? <Handle type="target" position={Position.Left} /> : <Handle type="target" position={Position.Left} />}
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

export interface GraphViewProps {
  graph: GraphDoc;
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

function Canvas({ graph, statuses = NONE, problems = NONE, selected = null, onSelect }: GraphViewProps) {
  const [positions, setPositions] = useState<Map<string, { x: number; y: number }> | null>(null);
  const shape = useMemo(
    () => JSON.stringify([graph.nodes.map((n) => n.id), graph.edges.map((e) => [e.source_node_id ?? e.source, e.target_node_id ?? e.target])]),
    [graph],
  );

  useEffect(() => {
    let live = true;
    const stored = graph.nodes.every((n) => n.position);
    if (stored) {
      const at = new Map(graph.nodes.map((n) => [n.id, n.position!]));
      const right = Math.max(0, ...graph.nodes.map((n) => n.position!.x));
      at.set(END, { x: right + 280, y: 0 });
      setPositions(at);
      return;
    }
    layout(graph).then((at) => live && setPositions(at));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape]);

  const flow = useMemo(() => (positions ? toFlow(graph, positions) : null), [graph, positions]);
  // React Flow measures each node after it is drawn and shows it only once measured; the nodes
  // live in state, so a new colour keeps the measurement instead of hiding the node again.
  const [nodes, setNodes] = useState<Node<BoxData>[]>([]);
  useEffect(() => {
    setNodes((drawn) => {
      const before = new Map(drawn.map((n) => [n.id, n]));
      return (flow?.nodes ?? []).map((node) => {
        const old = before.get(node.id);
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
  const edges: Edge[] = useMemo(
    () =>
      (flow?.edges ?? []).map((edge) => ({
        ...edge,
        className: problems[edge.id]?.length ? "edge-problem" : undefined,
        animated: statuses[edge.source] === "running",
      })),
    [flow, problems, statuses],
  );

  if (!flow || nodes.length === 0) return <div className="canvas loading" aria-busy="true">Laying out {graph.nodes.length} nodes…</div>;
  return (
    <div className="canvas" data-testid="canvas" data-nodes={nodes.length}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        onNodesChange={onNodesChange}
        fitView
        minZoom={0.05}
        onlyRenderVisibleElements
        nodesConnectable={false}
        nodesDraggable={false}
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
