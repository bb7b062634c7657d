// Completing template paths in a node's prompts: after `{{ ` the names a template can read (the
// node's upstream nodes and `input`), after `name.` the fields the schema on that edge (or the
// graph's input_schema) declares, level by level.
import type { Completion, CompletionContext, CompletionResult, CompletionSource } from "@codemirror/autocomplete";
import { type GraphDoc, source, target } from "./model";

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  description?: string;
  $ref?: string;
}

/** What `name` can be read as in `nodeId`'s templates: the schema of its edge, or the input's. */
function schemaOf(graph: GraphDoc, nodeId: string, name: string): JsonSchema | null {
  if (name === "input") return (graph.input_schema as JsonSchema | null | undefined) ?? null;
  const edge = graph.edges.find((e) => source(e) === name && target(e) === nodeId && e.schema_id);
  const entry = graph.schemas?.find((s) => s.id === edge?.schema_id);
  return (entry?.schema as JsonSchema | undefined) ?? null;
}

function resolve(graph: GraphDoc, schema: JsonSchema | null): JsonSchema | null {
  if (schema?.$ref) {
    const entry = graph.schemas?.find((s) => s.id === schema.$ref);
    return (entry?.schema as JsonSchema | undefined) ?? null;
  }
  return schema;
}

/** The names a template of `nodeId` can start a path with. */
export function readable(graph: GraphDoc, nodeId: string): string[] {
  const upstream = graph.edges.filter((e) => target(e) === nodeId).map(source);
  return ["input", ...new Set(upstream)];
}

export function templateCompletion(graph: GraphDoc, nodeId: string): CompletionSource {
  return (context: CompletionContext): CompletionResult | null => {
    const before = context.state.sliceDoc(Math.max(0, context.pos - 200), context.pos);
    const open = before.lastIndexOf("{{");
    if (open < 0 || before.lastIndexOf("}}") > open) return null;
    const expression = before.slice(open + 2);
    const path = /([A-Za-z_]\w*)((?:\.\w+)*)\.(\w*)$/.exec(expression);
    if (path) {
      let schema = resolve(graph, schemaOf(graph, nodeId, path[1]));
      for (const part of path[2].split(".").filter(Boolean)) schema = resolve(graph, schema?.properties?.[part] ?? null);
      const fields = Object.entries(schema?.properties ?? {});
      if (!fields.length) return null;
      return {
        from: context.pos - path[3].length,
        options: fields.map(([name, field]): Completion => ({
          label: name,
          type: "property",
          detail: Array.isArray(field.type) ? field.type.join(" | ") : field.type,
          info: field.description,
        })),
      };
    }
    const word = /(?:^|[\s(|,])(\w*)$/.exec(expression);
    if (!word) return null;
    return {
      from: context.pos - word[1].length,
      options: readable(graph, nodeId).map((name): Completion => ({
        label: name,
        type: name === "input" ? "variable" : "class",
        detail: name === "input" ? "the run's input" : "upstream node",
      })),
    };
  };
}
