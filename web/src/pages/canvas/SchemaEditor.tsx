import { useState } from "react";
import type { GraphDoc } from "../../graph/model";
import { STARTER_SCHEMA } from "../../schema/fields";
import { SchemaForm } from "../../schema/SchemaForm";

type Entry = NonNullable<GraphDoc["schemas"]>[number];

/** The graph's run input and its schema registry, each edited as a form (or as JSON); registry
 * entries added and removed. Versions are the server's to derive on save (patch, minor or
 * major, from what changed). */
export function SchemaEditor({
  graph,
  onChange,
  onInput,
}: {
  graph: GraphDoc;
  onChange: (schemas: Entry[]) => void;
  onInput: (schema: Record<string, unknown>) => void;
}) {
  const schemas = graph.schemas ?? [];
  const [name, setName] = useState("");
  const used = (id: string) => graph.edges.filter((e) => e.schema_id === id).length;

  return (
    <div className="fields schema-editor" data-testid="schema-editor">
      <details data-schema="(input)">
        <summary>
          Run input <span className="muted">— what a run starts with; its form is generated from this</span>
        </summary>
        <SchemaForm schema={graph.input_schema ?? { type: "object", properties: {} }} label="Run input" onChange={onInput} />
      </details>
      {schemas.map((entry, index) => (
        <details key={entry.id} data-schema={entry.id}>
          <summary>
            <code>{entry.id}</code> {entry.version ? `v${entry.version}` : <span className="muted">new: versioned when saved</span>} ·{" "}
            {used(entry.id)} edges {entry.description ? `— ${entry.description}` : ""}
          </summary>
          <SchemaForm
            schema={entry.schema}
            label={`Schema ${entry.id}`}
            onChange={(schema) => onChange(schemas.map((s, i) => (i === index ? { ...s, schema } : s)))}
          />
          <button
            type="button"
            className="link danger"
            disabled={used(entry.id) > 0}
            title={used(entry.id) ? "Edges use this schema: change them first" : undefined}
            onClick={() => onChange(schemas.filter((_, i) => i !== index))}
          >
            remove {entry.id}
          </button>
        </details>
      ))}
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          const id = name.trim();
          if (!id || schemas.some((s) => s.id === id)) return;
          onChange([...schemas, { id, schema: STARTER_SCHEMA }]);
          setName("");
        }}
      >
        <input aria-label="New schema id" placeholder="new schema id" value={name} onChange={(e) => setName(e.target.value)} />
        <button type="submit">Add schema</button>
      </form>
    </div>
  );
}
