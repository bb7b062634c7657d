import { useEffect, useRef, useState } from "react";
import { CodeEditor } from "../components/CodeEditor";
import { Committed } from "../components/Committed";
import { type FieldDef, fieldsOf, type Json, KINDS, type Kind, nameProblems, newField, schemaOf, withKind } from "./fields";

/** A JSON Schema of an object, edited as a form of fields (name, kind, required, description,
 * choices, nested fields) with its JSON a tab away. A schema the form cannot show opens as JSON,
 * saying why. Every edit hands the whole new schema to `onChange`. */
export function SchemaForm({ schema, label, onChange }: { schema: unknown; label: string; onChange: (schema: Json) => void }) {
  const fields = fieldsOf(schema);
  const [view, setView] = useState<"form" | "json">(fields ? "form" : "json");
  const [jsonError, setJsonError] = useState<string | null>(null);
  const around = (typeof schema === "object" && schema !== null ? schema : {}) as Json;
  return (
    <div className="schema-form" role="group" aria-label={label}>
      <div role="tablist" className="tabs small">
        <button type="button" role="tab" aria-selected={view === "form"} disabled={!fields} onClick={() => setView("form")}>
          Form
        </button>
        <button type="button" role="tab" aria-selected={view === "json"} onClick={() => setView("json")}>
          JSON
        </button>
      </div>
      {view === "form" && fields ? (
        <FieldList fields={fields} label={label} onChange={(next) => onChange(schemaOf(next, around))} />
      ) : (
        <>
          {!fields ? (
            <p className="muted">This schema uses more than the form shows (only objects of plain fields have a form): edit it as JSON.</p>
          ) : null}
          <JsonView schema={schema} label={`${label} as JSON`} onChange={onChange} onError={setJsonError} />
          {jsonError ? <p className="error">JSON: {jsonError}</p> : null}
        </>
      )}
    </div>
  );
}

/** The schema's JSON, edited as text: an edit that parses to an object becomes the schema; the
 * text is rewritten only when the schema changes from elsewhere (not while it is being typed). */
function JsonView({
  schema,
  label,
  onChange,
  onError,
}: {
  schema: unknown;
  label: string;
  onChange: (schema: Json) => void;
  onError: (message: string | null) => void;
}) {
  const mine = useRef<unknown>(undefined);
  const [text, setText] = useState(() => JSON.stringify(schema ?? {}, null, 2));
  useEffect(() => {
    if (schema !== mine.current) setText(JSON.stringify(schema ?? {}, null, 2));
  }, [schema]);
  return (
    <CodeEditor
      language="json"
      label={label}
      value={text}
      onChange={(next) => {
        setText(next);
        try {
          const parsed = JSON.parse(next) as unknown;
          if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("a schema is a JSON object");
          onError(null);
          mine.current = parsed;
          onChange(parsed as Json);
        } catch (cause) {
          onError((cause as Error).message);
        }
      }}
    />
  );
}

function FieldList({ fields, label, onChange }: { fields: FieldDef[]; label: string; onChange: (fields: FieldDef[]) => void }) {
  const problems = nameProblems(fields);
  const set = (index: number, field: FieldDef) => onChange(fields.map((f, i) => (i === index ? field : f)));
  return (
    <div className="field-list">
      {fields.length === 0 ? <p className="muted">No fields yet.</p> : null}
      {fields.map((field, index) => (
        <FieldRow
          key={index}
          field={field}
          problem={problems[index]}
          where={`${label}: field ${index + 1}`}
          onChange={(next) => set(index, next)}
          onRemove={() => onChange(fields.filter((_, i) => i !== index))}
        />
      ))}
      <button type="button" onClick={() => onChange([...fields, newField(fields)])}>
        Add field{label.includes(":") ? "" : ` to ${label}`}
      </button>
    </div>
  );
}

function FieldRow({
  field,
  problem,
  where,
  onChange,
  onRemove,
}: {
  field: FieldDef;
  problem?: string;
  where: string;
  onChange: (field: FieldDef) => void;
  onRemove: () => void;
}) {
  return (
    <fieldset className="field-row" aria-label={where} data-field={field.name}>
      <div className="row">
        <Committed label="Field name" placeholder="Field name" value={field.name} onCommit={(name) => onChange({ ...field, name })} />
        <select aria-label="Field type" value={field.kind} onChange={(e) => onChange(withKind(field, e.target.value as Kind))}>
          {Object.entries(KINDS).map(([kind, words]) => (
            <option key={kind} value={kind}>
              {words}
            </option>
          ))}
        </select>
        <label>
          <input type="checkbox" checked={field.required} onChange={(e) => onChange({ ...field, required: e.target.checked })} /> required
        </label>
        <button type="button" className="link danger" onClick={onRemove} aria-label={`Remove field ${field.name}`}>
          remove
        </button>
      </div>
      {problem ? <p className="error">{problem}</p> : null}
      <Committed label="Field description" placeholder="Field description" value={field.description} onCommit={(description) => onChange({ ...field, description })} />
      {field.kind === "enum" ? (
        <Committed
          label="Choices (comma-separated)"
          placeholder="Choices (comma-separated)"
          value={field.choices.join(", ")}
          onCommit={(text) => onChange({ ...field, choices: text.split(",").map((c) => c.trim()).filter(Boolean) })}
        />
      ) : null}
      {field.kind === "object" || field.kind === "object[]" ? (
        <div className="nested">
          <span className="muted">{field.kind === "object" ? "Its fields" : "Fields of each item"}</span>
          <FieldList fields={field.fields} label={`${where}: ${field.name}`} onChange={(fields) => onChange({ ...field, fields })} />
        </div>
      ) : null}
    </fieldset>
  );
}
