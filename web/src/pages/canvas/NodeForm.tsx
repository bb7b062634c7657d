import { useMemo, useState } from "react";
import { CodeEditor } from "../../components/CodeEditor";
import { templateCompletion } from "../../graph/completion";
import { type GraphDoc, type GraphEdgeDef, type GraphNodeDef, edgeId } from "../../graph/model";

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
          </div>
        ),
      )}
      <Others key={node.id} value={others} onChange={(value) => onChange(value)} />
    </div>
  );
}

/** A one-line field, stored when it loses focus or on Enter (one undo step per edit). */
function Line({ label, value, onCommit }: { label: string; value: string; onCommit: (text: string) => void }) {
  const [text, setText] = useState(value);
  const [was, setWas] = useState(value);
  if (value !== was) {
    setWas(value);
    setText(value);
  }
  return (
    <label className="field">
      <span className="field-label">{label}</span>
      <input
        aria-label={label}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={() => text !== value && onCommit(text)}
        onKeyDown={(e) => e.key === "Enter" && text !== value && onCommit(text)}
      />
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

/** Edit one edge: its schema (from the registry), label and condition. */
export function EdgeForm({
  graph,
  edge,
  problems,
  onChange,
}: {
  graph: GraphDoc;
  edge: GraphEdgeDef;
  problems?: string[];
  onChange: (fields: Partial<GraphEdgeDef>) => void;
}) {
  return (
    <div className="fields edge-form" data-testid="edge-form">
      <h2>
        edge <code>{edgeId(edge)}</code>
      </h2>
      {problems?.map((p) => (
        <p key={p} className="error">
          {p}
        </p>
      ))}
      <label className="field">
        <span className="field-label">Schema</span>
        <select aria-label="Edge schema" value={edge.schema_id ?? ""} onChange={(e) => onChange({ schema_id: e.target.value || null })}>
          <option value="">(no contract)</option>
          {(graph.schemas ?? []).map((s) => (
            <option key={s.id} value={s.id}>
              {s.id} v{s.version}
            </option>
          ))}
        </select>
      </label>
      <Line label="Edge label" value={edge.label ?? ""} onCommit={(label) => onChange({ label })} />
      <Line label="Condition key" value={edge.condition_key ?? ""} onCommit={(condition_key) => onChange({ condition_key })} />
    </div>
  );
}
