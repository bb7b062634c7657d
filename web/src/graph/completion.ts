// Completing template paths in a node's prompts: after `{{ ` the names a template can read (the
// node's upstream nodes and `input`), after `name.` the fields the schema on that edge (or the
// graph's input_schema) declares, level by level.
import type { Completion, CompletionContext, CompletionResult, CompletionSource } from "@codemirror/autocomplete";
import { type GraphDoc, reached, source, target } from "./model";

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  description?: string;
  $ref?: string;
}

/** What `name` can be read as in `nodeId`'s templates: the schema of its edge to this node (or,
 * for a node further upstream, of any edge leaving it), or the input's. */
function schemaOf(graph: GraphDoc, nodeId: string, name: string): JsonSchema | null {
  if (name === "input") return (graph.input_schema as JsonSchema | null | undefined) ?? null;
  const leaving = graph.edges.filter((e) => source(e) === name && e.schema_id);
  const edge = leaving.find((e) => target(e) === nodeId) ?? leaving[0];
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

/** Every node a template of `nodeId` can read besides `input` (any node upstream of it, not only
 * its direct predecessors), nearest first, with how many edges away it is. */
function upstreamOf(graph: GraphDoc, nodeId: string): Map<string, number> {
  const found = reached(graph, [nodeId], "up");
  found.delete(nodeId);
  return found;
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
    const upstream = upstreamOf(graph, nodeId);
    return {
      from: context.pos - word[1].length,
      options: ["input", ...upstream.keys()].map((name): Completion => ({
        label: name,
        type: name === "input" ? "variable" : "class",
        detail: name === "input" ? "the run's input" : upstream.get(name) === 1 ? "upstream node" : "upstream node, further back",
      })),
    };
  };
}
