// Edits not yet stored as a version are kept on the server as the graph's draft while a person
// works, valid or not: a reload, another browser or a visit to a run page does not lose them,
// and a graph being built (invalid until it is finished) exists from its first edit. The draft
// names the version it started from, so coming back after someone else saved says so instead of
// silently basing the edit on theirs.
import { type Answer, ApiError, del, get, headers, put, q, type Schemas } from "../../api/client";
import type { GraphDoc } from "../../graph/model";

export type DraftOut = Answer<"/api/drafts/{slug}">;

/** What the canvas opens: a stored graph (and its draft, if it has one), or the draft of a graph
 * never stored. */
export interface Opened {
  stored: Schemas["GraphOut"] | null;
  draft: DraftOut | null;
}

export async function openGraph(ref: string, version: string | null): Promise<Opened> {
  let stored: Schemas["GraphOut"];
  try {
    stored = await get<Schemas["GraphOut"]>(`/api/graphs/${q(ref)}${version ? `?version=${q(version)}` : ""}`);
  } catch (cause) {
    if (!(cause instanceof ApiError) || cause.status !== 404 || version) throw cause;
    const draft = await draftOf(ref);
    if (!draft) throw cause; // neither stored nor being built: the graph's own "not found"
    return { stored: null, draft };
  }
  return { stored, draft: stored.source_type === "system" ? null : await draftOf(stored.slug) };
}

/** The draft of graph `slug`, or null when it has none. */
export async function draftOf(slug: string): Promise<DraftOut | null> {
  try {
    return await get<DraftOut>(`/api/drafts/${q(slug)}`);
  } catch (cause) {
    if (cause instanceof ApiError && cause.status === 404) return null;
    throw cause;
  }
}

/** A graph never stored, as the canvas shows a stored one: version 0, nothing to run yet. */
export function unstored(draft: DraftOut): Schemas["GraphOut"] {
  const graph = draft.graph as GraphDoc;
  return {
    id: draft.slug,
    slug: draft.slug,
    name: typeof graph.name === "string" && graph.name ? graph.name : draft.slug,
    version: 0,
    latest_version: 0,
    schema_version: "",
    source_type: "user",
    nodes: graph.nodes?.length ?? 0,
    created_at: draft.saved_at,
    updated_at: draft.saved_at,
    parent_id: null,
    parent_updated: false,
    graph: { id: draft.slug, nodes: [], edges: [] },
  };
}

export type KeepState =
  | { state: "idle" }
  | { state: "keeping" }
  | { state: "kept"; draft: DraftOut }
  | { state: "failed"; error: unknown };

type Job = { graph: GraphDoc; base: number | null } | "drop";

/** Sends a graph's draft as it changes: one request at a time, and of edits made meanwhile only
 * the latest (typing sends no request per keystroke once one is on its way). */
export class DraftKeeper {
  private pending: Job | null = null;
  private sending = false;
  /** What the server holds (as sent), or null when it holds no draft. */
  private kept: string | null;

  constructor(
    private readonly slug: string,
    onServer: DraftOut | null,
    private readonly report: (state: KeepState) => void,
  ) {
    this.kept = onServer ? sent(onServer.graph as GraphDoc, onServer.base_version) : null;
  }

  /** Keep `graph` as the draft, unless the server holds just that already. */
  keep(graph: GraphDoc, base: number | null): void {
    if (this.pending === null && !this.sending && sent(graph, base) === this.kept) return;
    this.pending = { graph, base };
    void this.pump();
  }

  /** Forget the draft, if one is kept (the edits were stored, or discarded). */
  drop(): void {
    if (this.kept === null && !this.sending) {
      this.pending = null;
      return;
    }
    this.pending = "drop";
    void this.pump();
  }

  /** The page is going away: send what is waiting in a request that outlives it. */
  flush(): void {
    const job = this.pending;
    if (job === null || job === "drop") return;
    this.pending = null;
    void fetch(`/api/drafts/${q(this.slug)}`, {
      method: "PUT",
      keepalive: true,
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body(job)),
    }).catch(() => undefined);
  }

  private async pump(): Promise<void> {
    if (this.sending || this.pending === null) return;
    const job = this.pending;
    this.pending = null;
    this.sending = true;
    try {
      if (job === "drop") {
        await del(`/api/drafts/${q(this.slug)}`).catch((cause) => {
          if (!(cause instanceof ApiError && cause.status === 404)) throw cause;
        });
        this.kept = null;
        this.report({ state: "idle" });
      } else {
        this.report({ state: "keeping" });
        const draft = await put<DraftOut>(`/api/drafts/${q(this.slug)}`, body(job));
        this.kept = sent(job.graph, job.base);
        if (this.pending === null) this.report({ state: "kept", draft });
      }
    } catch (error) {
      this.report({ state: "failed", error });
    } finally {
      this.sending = false;
      void this.pump();
    }
  }
}

function body(job: { graph: GraphDoc; base: number | null }): Schemas["DraftIn"] {
  return { graph: job.graph, ...(job.base ? { base_version: job.base } : {}) };
}

function sent(graph: GraphDoc, base: number | null): string {
  return JSON.stringify([{ ...graph, id: undefined }, base]);
}
