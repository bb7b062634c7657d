// The run input as a form generated from a graph's `input_schema`: one control per property,
// text in a text area, anything else typed as JSON (a number, true, a list). "Start a run…" and
// "New schedule" ask for an input with it, so the two read the same.

export interface InputSchema {
  properties?: Record<string, { type?: string; default?: unknown; description?: string; enum?: unknown[] }>;
  required?: string[];
}

export type InputValues = Record<string, string>;

/** The properties the form asks for, in the schema's order. */
export function inputProperties(schema: unknown): [string, NonNullable<InputSchema["properties"]>[string]][] {
  const properties = (schema as InputSchema | null | undefined)?.properties;
  return properties && typeof properties === "object" ? Object.entries(properties) : [];
}

/** The input the typed values make: a text property as typed, another parsed as JSON when it
 * parses (else as typed, for the server to say why it is refused); empty ones left out. */
export function inputOf(schema: unknown, values: InputValues): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [name, prop] of inputProperties(schema)) {
    const raw = values[name];
    if (raw === undefined || raw === "") continue;
    input[name] = prop.type === "string" || prop.type === undefined ? raw : parsed(raw);
  }
  return input;
}

function parsed(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export function InputFields({ schema, values, onChange }: { schema: unknown; values: InputValues; onChange: (values: InputValues) => void }) {
  const required = (schema as InputSchema | null | undefined)?.required ?? [];
  return (
    <>
      {inputProperties(schema).map(([name, prop]) => {
        const hint = prop.default !== undefined ? String(prop.default) : prop.description ?? "";
        const set = (text: string) => onChange({ ...values, [name]: text });
        return (
          <label key={name} className="input-field">
            {name}
            {required.includes(name) ? " *" : ""}
            {prop.type === "string" || prop.type === undefined ? (
              <textarea name={name} value={values[name] ?? ""} placeholder={hint} onChange={(e) => set(e.target.value)} />
            ) : (
              <input name={name} value={values[name] ?? ""} placeholder={hint || `${prop.type} (JSON)`} onChange={(e) => set(e.target.value)} />
            )}
          </label>
        );
      })}
    </>
  );
}
