// Checking a value against an edge's JSON Schema in the browser, before it is sent, with the
// server's wording: `path: message`, the path's parts joined by `/` (`(root)` for the value
// itself), and the messages Python's jsonschema writes for the common keywords. The server
// checks again; this only saves a round trip and shows the problems while typing.
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const compiled = new WeakMap<object, ValidateFunction>();

/** Every way `value` breaks `schema`, as the server would list them (empty when valid). */
export function schemaErrors(schema: unknown, value: unknown): string[] {
  if (!schema || typeof schema !== "object") return [];
  let validate = compiled.get(schema);
  if (!validate) {
    try {
      validate = ajv.compile(schema as object);
    } catch (cause) {
      return [`(schema): ${(cause as Error).message}`];
    }
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${path(error)}: ${message(error, value)}`);
}

function path(error: ErrorObject): string {
  const parts = error.instancePath.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  return parts.join("/") || "(root)";
}

function at(value: unknown, pointer: string): unknown {
  let here = value;
  for (const part of pointer.split("/").slice(1)) {
    const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
    here = here !== null && typeof here === "object" ? (here as Record<string, unknown>)[key] : undefined;
  }
  return here;
}

/** A value as Python's `repr` shows it (what jsonschema's messages quote). */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  if (typeof value === "number") return String(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  return `{${Object.entries(value as object).map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(", ")}}`;
}

function message(error: ErrorObject, root: unknown): string {
  const value = at(root, error.instancePath);
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "type":
      return `${pyRepr(value)} is not of type ${String(p.type).split(",").map((t) => `'${t}'`).join(", ")}`;
    case "required":
      return `'${String(p.missingProperty)}' is a required property`;
    case "minimum":
      return `${pyRepr(value)} is less than the minimum of ${String(p.limit)}`;
    case "maximum":
      return `${pyRepr(value)} is greater than the maximum of ${String(p.limit)}`;
    case "exclusiveMinimum":
      return `${pyRepr(value)} is less than or equal to the minimum of ${String(p.limit)}`;
    case "exclusiveMaximum":
      return `${pyRepr(value)} is greater than or equal to the maximum of ${String(p.limit)}`;
    case "maxLength":
    case "maxItems":
      return `${pyRepr(value)} is too long`;
    case "minLength":
      return Number(p.limit) === 1 ? `${pyRepr(value)} should be non-empty` : `${pyRepr(value)} is too short`;
    case "minItems":
      return Number(p.limit) === 1 ? `${pyRepr(value)} should be non-empty` : `${pyRepr(value)} is too short`;
    case "enum":
      return `${pyRepr(value)} is not one of ${pyRepr((error.schema as unknown[]) ?? [])}`;
    case "const":
      return `${pyRepr(p.allowedValue)} was expected`;
    case "additionalProperties":
      return `Additional properties are not allowed ('${String(p.additionalProperty)}' was unexpected)`;
    case "pattern":
      return `${pyRepr(value)} does not match ${pyRepr(p.pattern)}`;
    default:
      return error.message ?? error.keyword;
  }
}
