// Server-Sent Events answering a POST (the prompt-script preview and generate), read over fetch:
// EventSource can neither POST a body nor send the bearer token. Aborting the signal closes the
// stream, which the server takes as "stop" (the script, and a generation's model call).
import { ApiError, failure, headers } from "./client";

export interface StreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/** POST `body` to `path` and call `onEvent` for each event of the answer's stream; resolves when
 * the stream ends. Rejects with the server's ApiError when it refuses before streaming (a 422,
 * a 503 `sandbox_busy`), and with an AbortError when `signal` is aborted. */
export async function postEvents(
  path: string,
  body: unknown,
  onEvent: (event: StreamEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal,
    });
  } catch (cause) {
    if (signal.aborted) throw cause;
    throw new ApiError(0, "unreachable", "the server did not answer", "is `plait serve` still running?", [String(cause)]);
  }
  if (!response.ok) throw await failure(response);
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const parsed = parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (parsed) onEvent(parsed);
    }
  }
  const last = parse(buffer);
  if (last) onEvent(last);
}

/** One SSE message (`event:` and `data:` lines); null for a ping or a comment. */
function parse(message: string): StreamEvent | null {
  let event = "message";
  const data: string[] = [];
  for (const line of message.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (!data.length) return null;
  return { event, data: JSON.parse(data.join("\n")) as Record<string, unknown> };
}
