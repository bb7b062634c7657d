// A conversation as the chat panel shows it, built from its event stream: the messages in order
// (each once, whether it came on the stream or as the answer to Accept or Reject), the progress
// lines said between them (designer rounds, runs started), and what the runs the chat started
// are doing (each node's progress and its answer as the model writes it).
import type { ChatMessage } from "../../api/chatEvents";
import type { RunEvent } from "../../api/events";
import type { DraftRef } from "./overlay";

export interface ProgressLine {
  /** Shown after the message of this number (0: before the first). */
  after: number;
  round?: number;
  /** The designer's run of a round, or a run the chat started. */
  runId?: string;
  kind: "round" | "run";
}

export interface NodeProgress {
  id: string;
  status: string;
  /** The node's answer as the model writes it (plain text, never HTML). */
  text: string;
  attempt: number;
}

export interface RunProgress {
  status: string;
  nodes: NodeProgress[];
}

export interface Conversation {
  messages: ChatMessage[];
  progress: ProgressLine[];
  /** The runs the chat started (not the designer's), by id. */
  runs: Record<string, RunProgress>;
}

export const EMPTY: Conversation = { messages: [], progress: [], runs: {} };

export type Action =
  | { type: "message"; message: ChatMessage }
  | { type: "progress"; progress: Record<string, unknown> }
  | { type: "run"; event: RunEvent }
  | { type: "reset" };

const NODE_STATUS: Record<string, string> = {
  "node:start": "running",
  "node:complete": "completed",
  "node:error": "failed",
  "node:skipped": "skipped",
  "run:paused": "waiting",
};
const RUN_STATUS: Record<string, string> = {
  "workflow:complete": "completed",
  "workflow:error": "failed",
  "run:cancelled": "cancelled",
};

function lastSeq(state: Conversation): number {
  return state.messages.length ? state.messages[state.messages.length - 1].seq : 0;
}

function withRun(state: Conversation, runId: string): Conversation {
  if (state.runs[runId]) return state;
  return { ...state, runs: { ...state.runs, [runId]: { status: "pending", nodes: [] } } };
}

export function reduce(state: Conversation, action: Action): Conversation {
  switch (action.type) {
    case "reset":
      return EMPTY;
    case "message": {
      const { message } = action;
      if (state.messages.some((m) => m.seq === message.seq)) return state;
      const messages = [...state.messages, message].sort((a, b) => a.seq - b.seq);
      let next = { ...state, messages };
      if (message.kind === "run" && message.run_id) {
        next = withRun(next, message.run_id);
        const status = String(message.content.status ?? "");
        if (status && status !== "pending") {
          next = { ...next, runs: { ...next.runs, [message.run_id]: { ...next.runs[message.run_id], status } } };
        }
      }
      return next;
    }
    case "progress": {
      const { progress } = action;
      const after = lastSeq(state);
      if (progress.event === "round") {
        return { ...state, progress: [...state.progress, { after, kind: "round", round: Number(progress.round) }] };
      }
      if (progress.event === "designer_run") {
        // the run of the round just started
        const lines = [...state.progress];
        const last = lines[lines.length - 1];
        if (last && last.kind === "round" && !last.runId) lines[lines.length - 1] = { ...last, runId: String(progress.run_id) };
        return { ...state, progress: lines };
      }
      if (progress.event === "run" && typeof progress.run_id === "string") {
        const next = withRun(state, progress.run_id);
        return { ...next, progress: [...next.progress, { after, kind: "run", runId: progress.run_id }] };
      }
      return state;
    }
    case "run": {
      const { event } = action;
      const run = state.runs[event.run_id];
      if (!run) return state; // a designer's run: its rounds are the progress lines
      let { status, nodes } = run;
      if (RUN_STATUS[event.event]) status = RUN_STATUS[event.event];
      else if (status === "pending") status = "running";
      const nodeId = event.node_id;
      if (nodeId && (event.path ?? []).length === 0) {
        const at = nodes.findIndex((n) => n.id === nodeId);
        const node: NodeProgress = at >= 0 ? nodes[at] : { id: nodeId, status: "running", text: "", attempt: 1 };
        let changed: NodeProgress = node;
        const data = event.data as { text?: string; attempt?: number; snapshot?: boolean };
        if (NODE_STATUS[event.event]) changed = { ...node, status: NODE_STATUS[event.event] };
        else if (event.event === "node:delta") {
          const attempt = data.attempt ?? node.attempt;
          const fresh = data.snapshot || attempt !== node.attempt;
          changed = { ...node, attempt, text: (fresh ? "" : node.text) + (data.text ?? "") };
        } else if (event.event === "node:stream_reset") {
          changed = { ...node, text: "", attempt: data.attempt ?? node.attempt };
        }
        if (changed !== node || at < 0) nodes = at >= 0 ? nodes.map((n, i) => (i === at ? changed : n)) : [...nodes, changed];
      }
      if (status === run.status && nodes === run.nodes) return state;
      return { ...state, runs: { ...state.runs, [event.run_id]: { status, nodes } } };
    }
  }
}

const USER_KINDS = new Set(["text", "answers"]);

/** The designer is working on the person's last message or answers. */
export function working(state: Conversation): boolean {
  const last = state.messages[state.messages.length - 1];
  return Boolean(last && last.role === "user" && USER_KINDS.has(last.kind));
}

/** The message each draft was last said in: a draft is decided, or asked about, by later ones. */
function latestByDraft(state: Conversation): Map<string, ChatMessage> {
  const latest = new Map<string, ChatMessage>();
  for (const m of state.messages) if (m.draft_id) latest.set(m.draft_id, m);
  return latest;
}

/** The draft proposed now, waiting to be accepted or rejected (drawn on the canvas); null when
 * the conversation's last word on drafts is anything else. */
export function proposedNow(state: Conversation, sessionId: string | null): DraftRef | null {
  if (!sessionId) return null;
  const latest = latestByDraft(state);
  const last = [...state.messages].reverse().find((m) => m.draft_id);
  if (!last || latest.get(last.draft_id!) !== last) return null;
  if (last.kind !== "draft" || last.content.status !== "proposed") return null;
  return { sessionId, draftId: last.draft_id!, seq: last.seq };
}

/** The question card waiting for answers: the last card, with no answers or draft after it. */
export function openCard(state: Conversation): ChatMessage | null {
  for (let i = state.messages.length - 1; i >= 0; i--) {
    const m = state.messages[i];
    if (m.kind === "questions") return m;
    if (m.kind === "answers" || m.kind === "draft" || (m.role === "user" && m.kind === "text")) return null;
  }
  return null;
}

/** The graph the conversation accepted last (its slug), if any. */
export function acceptedGraph(state: Conversation): string | null {
  for (let i = state.messages.length - 1; i >= 0; i--) {
    const m = state.messages[i];
    if (m.kind === "draft" && m.content.status === "accepted" && typeof m.content.graph === "string") return m.content.graph;
  }
  return null;
}

/** A run the chat started has not ended yet (the chat takes no message until it has). */
export function runInFlight(state: Conversation): boolean {
  const last = new Map<string, ChatMessage>();
  for (const m of state.messages) if (m.kind === "run" && m.run_id) last.set(m.run_id, m);
  return [...last.values()].some((m) => m.content.status === "pending");
}
