// Checking a value against an edge's JSON Schema in the browser, before it is sent, with the
// server's wording: `path: message`, the path's parts joined by `/` (`(root)` for the value
// itself), and the messages Python's jsonschema writes for the common keywords. The server
// checks again; this only saves a round trip and shows the problems while typing.
// The checker interprets the schema (@cfworker/json-schema): it compiles no code, so the page
// runs under a Content-Security-Policy without `unsafe-eval`, and a schema a graph's author
// wrote is only ever data here.
import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";

const compiled = new WeakMap<object, Validator>();
/** Keywords whose failure only says that a part below failed: the part's own errors are listed. */
const WRAPPERS = new Set([
  "properties", "items", "prefixItems", "additionalItems", "patternProperties", "$ref", "$dynamicRef",
  "$recursiveRef", "allOf", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "contains",
  "propertyNames", "if", "then", "else",
]);
/** Keywords listed as one error, as the server does, without the failures of each alternative. */
const ALTERNATIVES = new Set(["anyOf", "oneOf", "not"]);

/** Every way `value` breaks `schema`, as the server would list them (empty when valid). */
export function schemaErrors(schema: unknown, value: unknown): string[] {
  if (schema === null || (typeof schema !== "object" && typeof schema !== "boolean")) return [];
  const key = typeof schema === "object" ? schema : { boolean: schema };
  let validator = compiled.get(key);
  let errors: OutputUnit[];
  try {
    if (!validator) {
      validator = new Validator(schema as Schema | boolean, "2020-12", false);
      compiled.set(key, validator);
    }
    errors = validator.validate(value).errors;
  } catch (cause) {
    return [`(schema): ${(cause as Error).message}`];
  }
  return listed(errors).map((error) => `${path(error)}: ${message(error, schema, value)}`);
}

/** The errors the server lists: no wrapper, no error inside an alternative, no format (the server
 * checks none), and an unexpected property once (not again as its `false` schema). */
function listed(errors: OutputUnit[]): OutputUnit[] {
  const inside = errors.filter((e) => ALTERNATIVES.has(e.keyword)).map((e) => e.keywordLocation + "/");
  const unexpected = new Set(
    errors.filter((e) => e.keyword === "additionalProperties").map((e) => `${e.instanceLocation}/${extra(e)}`),
  );
  return errors.filter(
    (e) =>
      !WRAPPERS.has(e.keyword) &&
      e.keyword !== "format" &&
      !inside.some((prefix) => e.keywordLocation.startsWith(prefix)) &&
      !(e.keyword === "false" && unexpected.has(e.instanceLocation)),
  );
}

function pointerParts(pointer: string): string[] {
  return pointer
    .replace(/^#/, "")
    .split("/")
    .slice(1)
    .map((p) => decodeURIComponent(p).replace(/~1/g, "/").replace(/~0/g, "~"));
}

function path(error: OutputUnit): string {
  return pointerParts(error.instanceLocation).join("/") || "(root)";
}

/** The name of the property an `additionalProperties` error is about, as it appears in a pointer. */
function extra(error: OutputUnit): string {
  const name = /^Property "(.*)" does not match additional properties schema\.$/.exec(error.error)?.[1] ?? "";
  return encodeURI(name.replace(/~/g, "~0").replace(/\//g, "~1")).replace(/#/g, "%23");
}

/** The value of the keyword that failed (a limit, a type, an enum), read from the schema. */
function keywordValue(schema: unknown, error: OutputUnit): unknown {
  let here = schema;
  for (const part of pointerParts(error.keywordLocation)) {
    const node = here as Record<string, unknown> | null;
    if (part === "$ref" && node && typeof node.$ref === "string" && node.$ref.startsWith("#")) {
      here = pointerParts(node.$ref).reduce<unknown>((at, p) => (at as Record<string, unknown> | null)?.[p], schema);
    } else {
      here = node !== null && typeof node === "object" ? node[part] : undefined;
    }
  }
  return here;
}

function at(value: unknown, pointer: string): unknown {
  let here = value;
  for (const key of pointerParts(pointer)) {
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

function message(error: OutputUnit, schema: unknown, root: unknown): string {
  const value = at(root, error.instanceLocation);
  const limit = keywordValue(schema, error);
  switch (error.keyword) {
    case "type":
      return `${pyRepr(value)} is not of type ${[limit].flat().map((t) => `'${String(t)}'`).join(", ")}`;
    case "required":
      return `'${/required property "(.*)"\.$/.exec(error.error)?.[1] ?? ""}' is a required property`;
    case "minimum":
      return `${pyRepr(value)} is less than the minimum of ${String(limit)}`;
    case "maximum":
      return `${pyRepr(value)} is greater than the maximum of ${String(limit)}`;
    case "exclusiveMinimum":
      return `${pyRepr(value)} is less than or equal to the minimum of ${String(limit)}`;
    case "exclusiveMaximum":
      return `${pyRepr(value)} is greater than or equal to the maximum of ${String(limit)}`;
    case "maxLength":
    case "maxItems":
      return `${pyRepr(value)} is too long`;
    case "minLength":
    case "minItems":
      return Number(limit) === 1 ? `${pyRepr(value)} should be non-empty` : `${pyRepr(value)} is too short`;
    case "enum":
      return `${pyRepr(value)} is not one of ${pyRepr(Array.isArray(limit) ? limit : [])}`;
    case "const":
      return `${pyRepr(limit)} was expected`;
    case "additionalProperties":
      return `Additional properties are not allowed ('${decodeURIComponent(extra(error)).replace(/~1/g, "/").replace(/~0/g, "~")}' was unexpected)`;
    case "pattern":
      return `${pyRepr(value)} does not match ${pyRepr(limit)}`;
    case "false":
      return `False schema does not allow ${pyRepr(value)}`;
    default:
      return error.error;
  }
}
