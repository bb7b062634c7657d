import { useCallback, useEffect, useRef } from "react";
import { postEvents, type StreamEvent } from "../../api/postEvents";

/** One POST event stream at a time: `start` aborts the one before (whose callbacks then stay
 * silent), `stop` aborts the current one, and leaving the page aborts it too. `onEvent` and
 * `onEnd` are called only for the stream that is current. */
export function useStream() {
  const current = useRef<AbortController | null>(null);

  useEffect(() => () => current.current?.abort(), []);

  const start = useCallback(
    (
      path: string,
      body: unknown,
      onEvent: (event: StreamEvent) => void,
      onEnd: (problem: unknown, aborted: boolean) => void,
    ) => {
      current.current?.abort();
      const controller = new AbortController();
      current.current = controller;
      const mine = () => current.current === controller;
      postEvents(path, body, (event) => mine() && onEvent(event), controller.signal).then(
        () => {
          if (!mine()) return;
          current.current = null;
          onEnd(null, false);
        },
        (cause: unknown) => {
          if (!mine()) return;
          current.current = null;
          onEnd(controller.signal.aborted ? null : cause, controller.signal.aborted);
        },
      );
    },
    [],
  );

  /** Abort the current stream; its `onEnd` is called with `aborted` true. */
  const stop = useCallback(() => current.current?.abort(), []);

  return { start, stop };
}
