import { useMemo, useState } from "react";
import { CodeEditor } from "../../components/CodeEditor";
import { Committed } from "../../components/Committed";
import { templateCompletion } from "../../graph/completion";
import { updateEdge, withNewSchema } from "../../graph/edit";
import { type GraphDoc, type GraphEdgeDef, type GraphNodeDef, edgeId } from "../../graph/model";
import { SchemaForm } from "../../schema/SchemaForm";

interface Field {
  name: string;
  label: string;
  kind: "text" | "template" | "javascript" | "code" | "number" | "line" | "argv";
}

/** The fields each node type is edited by; anything else is in "Other fields". */
const FIELDS: Record<string, Field[]> = {
  LLM_CALL: [
    { name: "system_prompt", label: "System prompt", kind: "template" },
    { name: "user_prompt_tpl", label: "User prompt", kind: "template" },
    { name: "model_role", label: "Model role", kind: "line" },
    { name: "max_retries", label: "Retries", kind: "number" },
  ],
  TRANSFORM: [{ name: "transform_expr", label: "Transform (JavaScript)", kind: "javascript" }],
  HUMAN_REVIEW: [{ name: "review_prompt", label: "Review prompt", kind: "template" }],
  CONDITION: [{ name: "condition_expr", label: "Condition (JavaScript)", kind: "javascript" }],
  CODE: [
    { name: "language", label: "Language (js or python)", kind: "line" },
    { name: "code", label: "Code", kind: "code" },
    { name: "timeout_s", label: "Timeout (s)", kind: "number" },
  ],
  TOOL: [
    { name: "command", label: "Command (the program, then one argument per line)", kind: "argv" },
    { name: "stdin", label: "Standard input", kind: "template" },
    { name: "parse", label: "Read stdout as (text or json)", kind: "line" },
    { name: "timeout_s", label: "Timeout (s)", kind: "number" },
  ],
  SUBGRAPH: [
    { name: "graph", label: "Graph (stored id, or a graph file; an inline body is under Other fields)", kind: "line" },
    { name: "graph_version", label: "Graph version (empty: the newest)", kind: "number" },
  ],
  MAP: [
    { name: "items", label: "Items (path of the list)", kind: "line" },
    { name: "item_name", label: "Item name", kind: "line" },
    { name: "max_concurrency", label: "Items at once", kind: "number" },
    { name: "on_item_error", label: "On a failed item (fail, skip or collect)", kind: "line" },
    { name: "graph", label: "Graph (stored id, or a graph file; an inline body is under Other fields)", kind: "line" },
  ],
  LOOP: [
    { name: "while_expr", label: "Repeat while (JavaScript)", kind: "javascript" },
    { name: "max_iterations", label: "Most iterations", kind: "number" },
    { name: "on_max_iterations", label: "At the limit (fail or stop)", kind: "line" },
    { name: "graph", label: "Graph (stored id, or a graph file; an inline body is under Other fields)", kind: "line" },
  ],
  RETRIEVE: [
    { name: "knowledge_base", label: "Knowledge base (its name)", kind: "line" },
    { name: "query", label: "Query", kind: "template" },
    { name: "mode", label: "Mode (hybrid, keyword or dense)", kind: "line" },
    { name: "top_k", label: "Results (1 to 50)", kind: "number" },
    { name: "min_score", label: "Lowest score (empty: any)", kind: "number" },
    { name: "expand", label: "Text of a hit (chunk or section)", kind: "line" },
    { name: "settings_from", label: "Search settings from the run input (a path such as input.search)", kind: "line" },
  ],
  PARSE: [{ name: "document", label: "Document (its id, as a template)", kind: "template" }],
  SKILL: [{ name: "skill", label: "Skill (a stored one as name@version, or a skill file)", kind: "line" }],
  CHUNK: [{ name: "max_tokens", label: "Chunk size in tokens (empty: the knowledge base's)", kind: "number" }],
};

/** The editor language of a field: a CODE node's code is JavaScript or Python (shown as text). */
function editorLanguage(field: Field, node: GraphNodeDef): "javascript" | "text" {
  if (field.kind === "javascript") return "javascript";
  if (field.kind === "code") return node.language === "python" ? "text" : "javascript";
  return "text";
}
const ALWAYS = ["id", "type", "label", "position"];

/** Edit one node: its id and label, the fields of its type, and the rest as JSON. */
export function NodeForm({
  graph,
  node,
  problems,
  onChange,
  onRename,
}: {
  graph: GraphDoc;
  node: GraphNodeDef;
  problems?: string[];
  onChange: (fields: Partial<GraphNodeDef>) => void;
  onRename: (to: string) => void;
}) {
  const fields = FIELDS[node.type] ?? [];
  const complete = useMemo(() => templateCompletion(graph, node.id), [graph, node.id]);
  const known = new Set([...ALWAYS, ...fields.map((f) => f.name)]);
  const others = Object.fromEntries(Object.entries(node).filter(([k]) => !known.has(k)));
  return (
    <div className="fields node-form" data-testid="node-form">
      <h2>
        {node.type} <code>{node.id}</code>
      </h2>
      {problems?.map((p) => (
        <p key={p} className="error">
          {p}
        </p>
      ))}
      <Line label="Id" value={node.id} onCommit={onRename} />
      <Line label="Label" value={String(node.label ?? "")} onCommit={(label) => onChange({ label })} />
      {fields.map((field) =>
        field.kind === "line" || field.kind === "number" ? (
          <Line
            key={`${node.id}:${field.name}`}
            label={field.label}
            value={node[field.name] === undefined ? "" : String(node[field.name])}
            onCommit={(text) => onChange({ [field.name]: field.kind === "number" && text !== "" ? Number(text) : text })}
          />
        ) : (
          <div key={`${node.id}:${field.name}`} className="field">
            <span className="field-label">{field.label}</span>
            <CodeEditor
              language={editorLanguage(field, node)}
              label={field.label}
              value={field.kind === "argv" ? ((node[field.name] as string[] | undefined) ?? []).join("\n") : String(node[field.name] ?? "")}
              onChange={(text) =>
                onChange({ [field.name]: field.kind === "argv" ? text.split("\n").filter((line) => line !== "") : text })
              }
              complete={field.kind === "template" || field.kind === "argv" ? complete : undefined}
            />
            {field.kind === "javascript" ? (
              <span className="muted field-help">
                Reads the run input as <code>input.field</code> and an upstream node's output as <code>nodes.id.field</code>.
              </span>
            ) : null}
          </div>
        ),
      )}
      <Others key={node.id} value={others} onChange={(value) => onChange(value)} />
    </div>
  );
}

/** A one-line field, stored when it loses focus or on Enter (one undo step per edit). */
function Line({ label, value, onCommit }: { label: string; value: string; onCommit: (text: string) => void }) {
  return (
    <label className="field">
      <span className="field-label">{label}</span>
      <Committed label={label} value={value} onCommit={onCommit} />
    </label>
  );
}

function Others({ value, onChange }: { value: Record<string, unknown>; onChange: (fields: Record<string, unknown>) => void }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <details className="field">
      <summary>Other fields (JSON)</summary>
      <CodeEditor
        language="json"
        label="Other fields (JSON)"
        value={JSON.stringify(value, null, 2)}
        onChange={(text) => {
          try {
            const parsed = JSON.parse(text);
            setError(null);
            const cleared = Object.fromEntries(Object.keys(value).filter((k) => !(k in parsed)).map((k) => [k, undefined]));
            onChange({ ...cleared, ...parsed });
          } catch (cause) {
            setError((cause as Error).message);
          }
        }}
      />
      {error ? <p className="error">{error}</p> : null}
    </details>
  );
}

/** Edit one edge: its schema (from the registry, edited here as a form, or a new one made for
 * it), label and condition. */
export function EdgeForm({
  graph,
  edge,
  problems,
  onGraph,
}: {
  graph: GraphDoc;
  edge: GraphEdgeDef;
  problems?: string[];
  onGraph: (next: GraphDoc, coalesce?: string) => void;
}) {
  const id = edgeId(edge);
  const change = (fields: Partial<GraphEdgeDef>) => onGraph(updateEdge(graph, id, fields));
  const schemas = graph.schemas ?? [];
  const bound = schemas.find((s) => s.id === edge.schema_id);
  return (
    <div className="fields edge-form" data-testid="edge-form">
      <h2>
        edge <code>{id}</code>
      </h2>
      {problems?.map((p) => (
        <p key={p} className="error">
          {p}
        </p>
      ))}
      <label className="field">
        <span className="field-label">Schema</span>
        <select aria-label="Edge schema" value={edge.schema_id ?? ""} onChange={(e) => change({ schema_id: e.target.value || null })}>
          <option value="">(no contract)</option>
          {schemas.map((s) => (
            <option key={s.id} value={s.id}>
              {s.id} {s.version ? `v${s.version}` : "(new)"}
            </option>
          ))}
        </select>
      </label>
      <button type="button" onClick={() => onGraph(withNewSchema(graph, edge))}>
        New schema for this edge
      </button>
      {bound ? (
        <SchemaForm
          key={bound.id}
          schema={bound.schema}
          label={`Schema ${bound.id}`}
          onChange={(schema) =>
            onGraph({ ...graph, schemas: schemas.map((s) => (s.id === bound.id ? { ...s, schema } : s)) }, `schema:${bound.id}`)
          }
        />
      ) : null}
      <Line label="Edge label" value={edge.label ?? ""} onCommit={(label) => change({ label })} />
      <Line label="Condition key" value={edge.condition_key ?? ""} onCommit={(condition_key) => change({ condition_key })} />
    </div>
  );
}
