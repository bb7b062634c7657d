// A JSON Schema of an object as a list of fields, the way a form shows it, and back. Only the
// common shapes have a form (text, numbers, yes/no, a choice, lists, nested objects); a schema
// using anything else ($ref, anyOf, patternProperties...) is edited as JSON. Keywords the form
// does not show (maxLength, minimum, format...) are kept as they were, in their place.

export type Json = Record<string, unknown>;

export const KINDS = {
  string: "text",
  number: "number",
  integer: "whole number",
  boolean: "yes / no",
  enum: "one of (choice)",
  "string[]": "list of text",
  "object[]": "list of objects",
  object: "object",
} as const;

export type Kind = keyof typeof KINDS;

export interface FieldDef {
  name: string;
  kind: Kind;
  required: boolean;
  description: string;
  /** The choices of an `enum` field. */
  choices: string[];
  /** The fields of an `object` or of the items of an `object[]`. */
  fields: FieldDef[];
  /** The field's other keywords, kept as they were. */
  rest: Json;
  /** Of an `object[]`: the items' other keywords (`additionalProperties`...), kept as they were. */
  itemsRest: Json;
}

const SCALARS = new Set(["string", "number", "integer", "boolean"]);
const SHOWN = new Set(["type", "description", "enum", "items", "properties", "required", "additionalProperties"]);

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function restOf(schema: Json, keep: string[] = []): Json {
  return Object.fromEntries(Object.entries(schema).filter(([key]) => !SHOWN.has(key) || keep.includes(key)));
}

/** Keywords that make an object more than its fields: a schema with one is edited as JSON. */
const BEYOND = ["anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref", "$dynamicRef", "patternProperties",
  "dependentSchemas", "dependentRequired", "unevaluatedProperties", "propertyNames"];

/** The fields of an object schema, or null when the form cannot show it (edit it as JSON). */
export function fieldsOf(schema: unknown): FieldDef[] | null {
  if (!isObject(schema) || BEYOND.some((key) => key in schema)) return null;
  if (schema.type !== "object" && !(schema.type === undefined && isObject(schema.properties))) return null;
  if (schema.properties !== undefined && !isObject(schema.properties)) return null;
  if (schema.additionalProperties !== undefined && typeof schema.additionalProperties !== "boolean") return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const fields: FieldDef[] = [];
  for (const [name, property] of Object.entries((schema.properties as Json | undefined) ?? {})) {
    const field = fieldOf(name, property, required.has(name));
    if (!field) return null;
    fields.push(field);
  }
  return fields;
}

function fieldOf(name: string, schema: unknown, required: boolean): FieldDef | null {
  if (!isObject(schema)) return null;
  const description = typeof schema.description === "string" ? schema.description : "";
  const base = { name, required, description, choices: [], fields: [], itemsRest: {} };
  if (Array.isArray(schema.enum)) {
    if (!schema.enum.every((v) => typeof v === "string") || (schema.type !== undefined && schema.type !== "string")) return null;
    return { ...base, kind: "enum", choices: schema.enum as string[], rest: restOf(schema) };
  }
  if (typeof schema.type === "string" && SCALARS.has(schema.type)) return { ...base, kind: schema.type as Kind, rest: restOf(schema) };
  if (schema.type === "object") {
    const fields = fieldsOf(schema);
    return fields ? { ...base, kind: "object", fields, rest: restOf(schema, ["additionalProperties"]) } : null;
  }
  if (schema.type === "array" && isObject(schema.items)) {
    const items = schema.items;
    if (items.type === "string" && Object.keys(items).every((k) => k === "type")) return { ...base, kind: "string[]", rest: restOf(schema) };
    if (items.type === "object") {
      const fields = fieldsOf(items);
      const itemsRest = restOf(items, ["additionalProperties"]);
      return fields ? { ...base, kind: "object[]", fields, rest: restOf(schema), itemsRest } : null;
    }
  }
  return null;
}

/** The object schema of `fields`; `around` is the schema they came from (its other keywords and
 * its `additionalProperties` are kept). */
export function schemaOf(fields: FieldDef[], around: Json = {}): Json {
  const properties = Object.fromEntries(fields.map((field) => [field.name, propertyOf(field)]));
  const required = fields.filter((field) => field.required).map((field) => field.name);
  const { properties: _p, required: _r, type: _t, ...others } = around;
  return { type: "object", ...others, properties, ...(required.length ? { required } : {}) };
}

function propertyOf(field: FieldDef): Json {
  const described = field.description ? { description: field.description } : {};
  switch (field.kind) {
    case "enum":
      return { type: "string", enum: field.choices, ...described, ...field.rest };
    case "string[]":
      return { type: "array", items: { type: "string" }, ...described, ...field.rest };
    case "object[]":
      return { type: "array", items: schemaOf(field.fields, field.itemsRest), ...described, ...field.rest };
    case "object":
      return { ...schemaOf(field.fields, field.rest), ...described };
    default:
      return { type: field.kind, ...described, ...field.rest };
  }
}

/** What a new schema starts as: one required text field, nothing else allowed; valid as it is. */
export const STARTER_SCHEMA: Json = {
  type: "object",
  properties: { text: { type: "string" } },
  required: ["text"],
  additionalProperties: false,
};

/** A new field: a required text field with a name no sibling has. */
export function newField(taken: FieldDef[]): FieldDef {
  const names = new Set(taken.map((field) => field.name));
  let n = taken.length + 1;
  while (names.has(`field_${n}`)) n += 1;
  return { name: `field_${n}`, kind: "string", required: true, description: "", choices: [], fields: [], rest: {}, itemsRest: {} };
}

/** The field as another kind: what only the old kind meant (choices, sub-fields, limits) goes.
 * A new object (or list of objects) allows no fields but its own, as a new schema does. */
export function withKind(field: FieldDef, kind: Kind): FieldDef {
  const fields = kind === "object" || kind === "object[]" ? (field.fields.length ? field.fields : [newField([])]) : [];
  const choices = kind === "enum" ? (field.choices.length ? field.choices : ["a", "b"]) : [];
  const closed = { additionalProperties: false };
  return { ...field, kind, fields, choices, rest: kind === "object" ? closed : {}, itemsRest: kind === "object[]" ? closed : {} };
}

/** What is wrong with the field names at one level, by field index: empty, repeated, or not a
 * name a template can use (`{{ node.my field }}` cannot be written). */
export function nameProblems(fields: FieldDef[]): Record<number, string> {
  const problems: Record<number, string> = {};
  const seen = new Map<string, number>();
  fields.forEach((field, index) => {
    if (!field.name) problems[index] = "a field needs a name";
    else if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field.name)) problems[index] = "use letters, digits and _, not starting with a digit";
    else if (seen.has(field.name)) problems[index] = `another field is named ${field.name}`;
    seen.set(field.name, index);
  });
  return problems;
}
