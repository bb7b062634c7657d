// Edits of a graph document as the canvas makes them: each returns a new document and leaves
// the old one untouched, so undo is keeping the old one.
import { STARTER_SCHEMA } from "../schema/fields";
import { END, type GraphDoc, type GraphEdgeDef, type GraphNodeDef, edgeId, source, target } from "./model";

export const NODE_TYPES = [
  "LLM_CALL",
  "TRANSFORM",
  "CONDITION",
  "MERGE",
  "HUMAN_REVIEW",
  "CODE",
  "TOOL",
  "WAIT",
  "SUBGRAPH",
  "MAP",
  "LOOP",
  "RETRIEVE",
  "PARSE",
  "CHUNK",
  "INDEX",
] as const;

/** What each node type does, in one line: shown beside the type picker before a node is added. */
export const NODE_DESCRIPTIONS: Record<(typeof NODE_TYPES)[number], string> = {
  LLM_CALL: "Asks a model: a prompt in, an answer checked against the edge's schema out.",
  TRANSFORM: "Computes a value from upstream outputs with a JavaScript expression; no model.",
  CONDITION: "Picks a branch: its expression gives the key of the edges that run next.",
  MERGE: "Waits for several branches and joins their outputs into one value.",
  HUMAN_REVIEW: "Pauses the run until a person approves or corrects the value.",
  CODE: "Runs a JavaScript (or, where the server allows it, Python) function body, sandboxed.",
  TOOL: "Runs a program the server's operator allowed, or calls an MCP tool.",
  WAIT: "Waits for a time, or until a date, then goes on (the run is parked meanwhile).",
  SUBGRAPH: "Runs another graph (or an inline one) as one step, with its own record.",
  MAP: "Runs a graph once per item of a list, in parallel, and collects the results.",
  LOOP: "Runs a graph again and again while a condition holds, up to a limit.",
  RETRIEVE: "Searches a knowledge base and passes on the best matching passages.",
  PARSE: "Reads a document stored in a knowledge base into sections under its headings.",
  CHUNK: "Splits the sections PARSE read into chunks of a bounded number of tokens.",
  INDEX: "Makes the chunks CHUNK made searchable in the document's knowledge base.",
};

/** Every node back where the layout puts it: a person's own placements forgotten. */
export function tidy(graph: GraphDoc): GraphDoc {
  if (!graph.nodes.some((n) => n.position)) return graph;
  return { ...graph, nodes: graph.nodes.map(({ position: _dropped, ...rest }) => rest as GraphNodeDef) };
}

/** A one-node inline body a new SUBGRAPH, MAP or LOOP starts with. */
const STEP_BODY = { nodes: [{ id: "step", type: "TRANSFORM", transform_expr: "current" }], edges: [] };

/** Fields a new node of each type starts with (the rest take their defaults). */
const STARTERS: Record<string, Partial<GraphNodeDef>> = {
  LLM_CALL: { system_prompt: "", user_prompt_tpl: "" },
  TRANSFORM: { transform_expr: "({})" },
  HUMAN_REVIEW: { review_prompt: "" },
  CONDITION: { condition_expr: "'yes'" },
  CODE: { code: "return {};" },
  TOOL: { command: ["echo", "{{ input }}"] },
  WAIT: { delay_s: 1 },
  SUBGRAPH: { body: STEP_BODY },
  MAP: { items: "input.items", body: STEP_BODY },
  LOOP: { while_expr: "last === null", max_iterations: 10, body: STEP_BODY },
  RETRIEVE: { knowledge_base: "", query: "{{ input.question }}" },
  PARSE: { document: "{{ input.document_id }}" },
};

/** The document without the fields that only say "the default" (null), as a person writes it. */
export function compact(graph: GraphDoc): GraphDoc {
  const strip = <T extends object>(value: T): T =>
    Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)) as T;
  return { ...strip(graph), nodes: graph.nodes.map(strip), edges: graph.edges.map(strip) };
}

/** A new node of `type` at `at`, with its type's starting fields and then `fields` (a SKILL
 * dragged in: its skill and inputs). Its id comes from its type, or from the skill's name. */
export function addNode(
  graph: GraphDoc,
  type: string,
  at: { x: number; y: number },
  fields: Partial<GraphNodeDef> = {},
): { graph: GraphDoc; id: string } {
  const named = typeof fields.skill === "string" ? fields.skill.split("@")[0] : type;
  const base = named.toLowerCase().replace(/[^a-z0-9_]+/g, "_").replace(/^_+|_+$/g, "") || "node";
  const taken = new Set(graph.nodes.map((n) => n.id));
  let n = 1;
  while (taken.has(`${base}_${n}`)) n += 1;
  const id = `${base}_${n}`;
  const node: GraphNodeDef = { id, type, ...STARTERS[type], ...fields, position: { x: Math.round(at.x), y: Math.round(at.y) } };
  return { graph: { ...graph, nodes: [...graph.nodes, node] }, id };
}

export function moveNode(graph: GraphDoc, id: string, at: { x: number; y: number }): GraphDoc {
  const position = { x: Math.round(at.x), y: Math.round(at.y) };
  return { ...graph, nodes: graph.nodes.map((n) => (n.id === id ? { ...n, position } : n)) };
}

export function connect(graph: GraphDoc, from: string, to: string): GraphDoc {
  if (from === to || from === END || graph.edges.some((e) => source(e) === from && target(e) === to)) return graph;
  const edge: GraphEdgeDef = { id: `${from}__${to}`, source_node_id: from, target_node_id: to };
  return { ...graph, edges: [...graph.edges, edge] };
}

export function removeNodes(graph: GraphDoc, ids: string[]): GraphDoc {
  const gone = new Set(ids);
  return {
    ...graph,
    nodes: graph.nodes.filter((n) => !gone.has(n.id)),
    edges: graph.edges.filter((e) => !gone.has(source(e)) && !gone.has(target(e))),
  };
}

export function removeEdges(graph: GraphDoc, ids: string[]): GraphDoc {
  const gone = new Set(ids);
  return { ...graph, edges: graph.edges.filter((e) => !gone.has(edgeId(e))) };
}

export function updateNode(graph: GraphDoc, id: string, fields: Partial<GraphNodeDef>): GraphDoc {
  return { ...graph, nodes: graph.nodes.map((n) => (n.id === id ? dropEmpty({ ...n, ...fields }) : n)) };
}

export function updateEdge(graph: GraphDoc, id: string, fields: Partial<GraphEdgeDef>): GraphDoc {
  return { ...graph, edges: graph.edges.map((e) => (edgeId(e) === id ? dropEmpty({ ...e, ...fields }) : e)) };
}

/** Renaming a node renames it in its edges too (templates that name it are the author's to fix:
 * validation points at each). */
export function renameNode(graph: GraphDoc, from: string, to: string): GraphDoc {
  if (!to || graph.nodes.some((n) => n.id === to)) return graph;
  const swap = (id: string) => (id === from ? to : id);
  return {
    ...graph,
    nodes: graph.nodes.map((n) => (n.id === from ? { ...n, id: to } : n)),
    edges: graph.edges.map((e) => {
      const { source: _from, target: _to, ...rest } = e;
      return { ...rest, source_node_id: swap(source(e)), target_node_id: swap(target(e)) };
    }),
  };
}

function dropEmpty<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== "" && v !== undefined && v !== null)) as T;
}

/** A new registry schema named after the edge's source (`classify_out`, `classify_out_2`...),
 * starting valid, bound to the edge. */
export function withNewSchema(graph: GraphDoc, edge: GraphEdgeDef): GraphDoc {
  const taken = new Set((graph.schemas ?? []).map((s) => s.id));
  const base = `${source(edge)}_out`;
  let id = base;
  for (let n = 2; taken.has(id); n += 1) id = `${base}_${n}`;
  const schemas = [...(graph.schemas ?? []), { id, schema: STARTER_SCHEMA }];
  return updateEdge({ ...graph, schemas }, edgeId(edge), { schema_id: id });
}
