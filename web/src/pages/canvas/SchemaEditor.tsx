import { useState } from "react";
import { CodeEditor } from "../../components/CodeEditor";
import type { GraphDoc } from "../../graph/model";

type Entry = NonNullable<GraphDoc["schemas"]>[number];

/** The graph's schema registry: each entry's JSON edited in place, entries added and removed.
 * Versions are the server's to derive on save (patch, minor or major, from what changed). */
export function SchemaEditor({ graph, onChange }: { graph: GraphDoc; onChange: (schemas: Entry[]) => void }) {
  const schemas = graph.schemas ?? [];
  const [name, setName] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const used = (id: string) => graph.edges.filter((e) => e.schema_id === id).length;

  return (
    <div className="fields schema-editor" data-testid="schema-editor">
      {schemas.map((entry, index) => (
        <details key={entry.id} data-schema={entry.id}>
          <summary>
            <code>{entry.id}</code> {entry.version ? `v${entry.version}` : <span className="muted">new: versioned when saved</span>} ·{" "}
            {used(entry.id)} edges {entry.description ? `— ${entry.description}` : ""}
          </summary>
          <CodeEditor
            language="json"
            label={`Schema ${entry.id}`}
            value={JSON.stringify(entry.schema, null, 2)}
            onChange={(text) => {
              try {
                const schema = JSON.parse(text);
                setErrors({ ...errors, [entry.id]: "" });
                onChange(schemas.map((s, i) => (i === index ? { ...s, schema } : s)));
              } catch (cause) {
                setErrors({ ...errors, [entry.id]: (cause as Error).message });
              }
            }}
          />
          {errors[entry.id] ? <p className="error">{errors[entry.id]}</p> : null}
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
          onChange([...schemas, { id, version: "1.0.0", schema: { type: "object", properties: {} } }]);
          setName("");
        }}
      >
        <input aria-label="New schema id" placeholder="new schema id" value={name} onChange={(e) => setName(e.target.value)} />
        <button type="submit">Add schema</button>
      </form>
    </div>
  );
}
