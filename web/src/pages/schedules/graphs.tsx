import { get, type Schemas } from "../../api/client";
import { useApi } from "../../components/useApi";
import { href } from "../../router";

export type GraphSummary = Schemas["GraphSummaryOut"];

/** The stored graphs (for the picker, and to name a schedule's graph), by id. */
export function useGraphs(): { graphs: GraphSummary[]; byId: Map<string, GraphSummary>; error: unknown } {
  const { data, error } = useApi(() => get<Schemas["GraphPage"]>("/api/graphs?limit=500"), []);
  const graphs = data?.items ?? [];
  return { graphs, byId: new Map(graphs.map((g) => [g.id, g])), error };
}

/** A schedule's graph: its name and slug, linking to its canvas (its id when it is gone). */
export function GraphLink({ graphId, graph }: { graphId: string; graph: GraphSummary | undefined }) {
  return (
    <a href={href("graphs", graphId)}>
      {graph ? (
        <>
          {graph.name} <code>{graph.slug}</code>
        </>
      ) : (
        <code>{graphId.slice(0, 8)}</code>
      )}
    </a>
  );
}
