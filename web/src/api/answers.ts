// The answers a run's nodes are streaming now, as the run's events tell them (`node:delta`,
// `node:stream_reset`), by run and node. Kept outside React state: a few deltas a second then
// re-render the panel that shows one answer, not the run page and its graph.
import { useCallback, useSyncExternalStore } from "react";
import type { RunEvent } from "./events";

export interface LiveAnswer {
  /** The text of the current attempt so far (plain text: never rendered as HTML). */
  text: string;
  attempt: number;
  /** Why the node last asked the model again (what it had written so far was dropped). */
  again: string | null;
  /** The server had stopped keeping this answer when the page connected: its beginning is missing. */
  incomplete: boolean;
}

interface Entry {
  runId: string;
  nodeId: string;
  /** For a child run's node: the nodes above it, outermost first. */
  path: { run_id: string; node_id: string }[];
  answer: LiveAnswer;
}

/** After one of these the node's committed output is the record: its streamed text goes. */
const NODE_ENDS = new Set(["node:complete", "node:error", "node:skipped", "run:paused"]);
/** After one of these nothing of the run streams any more. */
const RUN_ENDS = new Set(["workflow:complete", "workflow:error", "run:cancelled"]);

const key = (runId: string, nodeId: string) => JSON.stringify([runId, nodeId]);

export class LiveAnswers {
  private entries = new Map<string, Entry>();
  private listeners = new Set<() => void>();

  /** Take in one event of the run's stream, of any kind: the ones that end an answer drop it. */
  take(event: RunEvent): void {
    const { run_id: runId, node_id: nodeId } = event;
    if (RUN_ENDS.has(event.event) || (event.event === "run:paused" && !nodeId)) {
      this.drop((e) => e.runId === runId || e.path.some((p) => p.run_id === runId));
      return;
    }
    if (!nodeId) return;
    if (NODE_ENDS.has(event.event)) {
      // A SUBGRAPH node's end ends its child run's answers too (their own ends are on the child's stream).
      this.drop(
        (e) => (e.runId === runId && e.nodeId === nodeId) || e.path.some((p) => p.run_id === runId && p.node_id === nodeId),
      );
      return;
    }
    if (event.event !== "node:delta" && event.event !== "node:stream_reset") return;
    const at = key(runId, nodeId);
    const before = this.entries.get(at)?.answer;
    const data = event.data as {
      text?: string;
      attempt?: number;
      snapshot?: boolean;
      incomplete?: boolean;
      reason?: string;
    };
    const attempt = data.attempt ?? before?.attempt ?? 1;
    let answer: LiveAnswer;
    if (event.event === "node:stream_reset") {
      answer = { text: "", attempt, again: data.reason ?? "", incomplete: false };
    } else {
      // A reconnect's snapshot is the whole text so far, and a new attempt starts afresh: both replace.
      const fresh = data.snapshot || !before || before.attempt !== attempt;
      const incomplete = data.snapshot ? Boolean(data.incomplete) : !fresh && before.incomplete;
      answer = {
        text: (fresh ? "" : before.text) + (data.text ?? ""),
        attempt,
        again: before?.again ?? null,
        incomplete,
      };
    }
    this.entries.set(at, { runId, nodeId, path: event.path ?? [], answer });
    this.changed();
  }

  get(runId: string, nodeId: string): LiveAnswer | undefined {
    return this.entries.get(key(runId, nodeId))?.answer;
  }

  /** Forget every answer (the page stopped following the run; a reconnect's snapshot brings them back). */
  clear(): void {
    this.drop(() => true);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private drop(which: (entry: Entry) => boolean): void {
    let dropped = false;
    for (const [at, entry] of this.entries)
      if (which(entry)) {
        this.entries.delete(at);
        dropped = true;
      }
    if (dropped) this.changed();
  }

  private changed(): void {
    this.listeners.forEach((listener) => listener());
  }
}

/** The answer `nodeId` of `runId` is streaming now, if any; re-renders as it grows. */
export function useLiveAnswer(answers: LiveAnswers, runId: string, nodeId: string): LiveAnswer | undefined {
  const subscribe = useCallback((listener: () => void) => answers.subscribe(listener), [answers]);
  return useSyncExternalStore(subscribe, () => answers.get(runId, nodeId));
}
