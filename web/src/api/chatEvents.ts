// A chat's Server-Sent Events (`GET /api/chat/sessions/{id}/events`) read over fetch, so that the
// bearer token goes in a header (EventSource cannot send one). The stream never ends by itself:
// it is read again after a break, with Last-Event-ID naming the last message received, so no
// message is lost or repeated. Progress and run events are not numbered: what was said while
// the page was not connected is not said again (the messages say how each turn and run ended).
import { failure, headers } from "./client";
import type { RunEvent } from "./events";

export interface ChatMessage {
  seq: number;
  role: string;
  kind: string;
  content: Record<string, unknown>;
  draft_id: string | null;
  run_id: string | null;
  created_at: number;
}

export interface ChatHandlers {
  /** A message of the conversation, in order, each once. */
  onMessage: (message: ChatMessage) => void;
  /** The designer's progress: `{event: "round" | "designer_run" | "run", ...}`. */
  onProgress: (progress: Record<string, unknown>) => void;
  /** An event of a run the chat follows (the designer's own runs included). */
  onRun: (event: RunEvent) => void;
  /** Whether the stream is connected now. */
  onConnected?: (connected: boolean) => void;
  /** The server refused the stream (the chat is gone, or a token is needed): it is not read again. */
  onRefused?: (error: unknown) => void;
}

/** Follow chat `sessionId` from message `after` on; returns a function that stops. */
export function followChat(sessionId: string, handlers: ChatHandlers, after = 0): () => void {
  const controller = new AbortController();
  let lastSeq = after;
  let stopped = false;

  async function connect(): Promise<void> {
    const sent = headers({ Accept: "text/event-stream" });
    if (lastSeq) sent["Last-Event-ID"] = String(lastSeq);
    const response = await fetch(`/api/chat/sessions/${encodeURIComponent(sessionId)}/events`, {
      headers: sent,
      signal: controller.signal,
    });
    if (!response.ok) {
      const refusal = await failure(response);
      // a refusal that a retry does not mend ends the following; the rest are tried again
      if (response.status < 500) {
        stopped = true;
        handlers.onRefused?.(refusal);
      }
      return;
    }
    if (!response.body) return;
    handlers.onConnected?.(true);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value.replace(/\r\n/g, "\n");
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          take(block);
        }
      }
    } finally {
      handlers.onConnected?.(false);
    }
  }

  function take(block: string): void {
    let kind = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) kind = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return; // a ping, or a comment
    const parsed = JSON.parse(data.join("\n")) as Record<string, unknown>;
    if (kind === "message") {
      const message = parsed as unknown as ChatMessage;
      if (message.seq <= lastSeq) return;
      lastSeq = message.seq;
      handlers.onMessage(message);
    } else if (kind === "run") {
      handlers.onRun(parsed as unknown as RunEvent);
    } else if (kind === "progress") {
      handlers.onProgress(parsed);
    }
  }

  (async () => {
    let wait = 500;
    while (!stopped) {
      const began = Date.now();
      try {
        await connect();
      } catch {
        // the connection broke (or was stopped): read again below, unless stopped
      }
      if (stopped) break;
      // a stream that stayed up a while starts the waiting afresh; one refused at once waits longer
      wait = Date.now() - began > 10_000 ? 500 : Math.min(wait * 2, 8_000);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();

  return () => {
    stopped = true;
    controller.abort();
  };
}
