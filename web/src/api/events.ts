// Server-Sent Events (a run's, an evaluation's) read over fetch, so that the bearer token goes in
// a header (EventSource cannot send one). Reconnects with Last-Event-ID until the stream ends.
import { token } from "./client";

export interface RunEvent {
  id: number;
  event: string;
  run_id: string;
  node_id: string | null;
  at: number;
  data: Record<string, unknown>;
  /** For an event of a child run: the nodes above it, outermost first. */
  path?: { run_id: string; node_id: string }[];
}

/** Follow `runId`'s events after event `after`, calling `onEvent` for each, and `onEnd` when the
 * run's stream ends (the run ended); returns a function that stops. */
export function followRun(
  runId: string,
  onEvent: (event: RunEvent) => void,
  onEnd?: () => void,
  after = 0,
): () => void {
  return followStream<RunEvent>(`/api/runs/${encodeURIComponent(runId)}/events`, onEvent, onEnd, after);
}

/** Follow the numbered Server-Sent Events of `path` (each one's data a JSON object with its
 * `id`) after event `after`, reconnecting with Last-Event-ID until the stream ends (204, or an
 * error answer); `onEnd` then. Returns a function that stops. */
export function followStream<T extends { id: number }>(
  path: string,
  onEvent: (event: T) => void,
  onEnd?: () => void,
  after = 0,
): () => void {
  const controller = new AbortController();
  let lastId = after;
  let stopped = false;

  async function connect(): Promise<boolean> {
    const sent: Record<string, string> = { Accept: "text/event-stream" };
    const bearer = token();
    if (bearer) sent.Authorization = `Bearer ${bearer}`;
    if (lastId) sent["Last-Event-ID"] = String(lastId);
    const response = await fetch(path, {
      headers: sent,
      signal: controller.signal,
    });
    if (response.status === 204 || !response.ok || !response.body) return false;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buffer += value.replace(/\r\n/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = message
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n");
        if (!data) continue; // a ping
        const event = JSON.parse(data) as T;
        lastId = event.id;
        onEvent(event);
      }
    }
  }

  (async () => {
    while (!stopped) {
      try {
        const more = await connect();
        if (!more) break;
      } catch {
        if (stopped) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    if (!stopped) onEnd?.();
  })();

  return () => {
    stopped = true;
    controller.abort();
  };
}
