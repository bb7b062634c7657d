import { useState } from "react";
import { ConsoleView, ScriptErrorView } from "./ConsoleView";
import { HttpErrorView } from "./HttpErrorView";
import type { ConsoleEntry, ScriptFailure } from "./model";
import { useStream } from "./useStream";

interface Outcome {
  running: boolean;
  entries: ConsoleEntry[];
  prompt: string | null;
  failure: ScriptFailure | null;
  problem: unknown;
}

const STOPPED: ScriptFailure = { kind: "cancelled", message: "you stopped the preview", line: null, column: null };
const IDLE: Outcome = { running: false, entries: [], prompt: null, failure: null, problem: null };

/** Preview: run the script once on the server and show its console live, then the prompt it
 * returned or how it failed. A newer preview replaces (and, through the session, cancels) the
 * one still running. */
export function PreviewPane({ body }: { body: () => Record<string, unknown> }) {
  const [outcome, setOutcome] = useState<Outcome>(IDLE);
  const stream = useStream();

  function run() {
    let sent: Record<string, unknown>;
    try {
      sent = body();
    } catch (cause) {
      setOutcome({ ...IDLE, problem: cause });
      return;
    }
    setOutcome({ ...IDLE, running: true });
    stream.start(
      "/api/templates/preview",
      sent,
      ({ event, data }) => {
        const entry = data as unknown as ConsoleEntry;
        if (event === "result") {
          setOutcome((o) => ({ ...o, prompt: String(entry.args[0] ?? "") }));
        } else if (event === "error" && entry.level === "script" && entry.error) {
          setOutcome((o) => ({ ...o, failure: entry.error! }));
        } else {
          setOutcome((o) => ({ ...o, entries: [...o.entries, entry] }));
        }
      },
      (problem, aborted) =>
        setOutcome((o) => {
          if (aborted) return { ...o, running: false, failure: STOPPED };
          const unfinished = !problem && o.prompt === null && !o.failure;
          return { ...o, running: false, problem: unfinished ? new Error("the preview's stream ended without a prompt or an error") : problem };
        }),
    );
  }

  return (
    <section className="pane preview-pane" aria-label="Preview" aria-busy={outcome.running}>
      <div className="row">
        <h2>Preview</h2>
        <button type="button" onClick={run}>
          Preview
        </button>
        {outcome.running ? (
          <>
            <span className="muted" role="status">
              running…
            </span>
            <button type="button" onClick={stream.stop}>
              Stop preview
            </button>
          </>
        ) : null}
      </div>
      <HttpErrorView error={outcome.problem} />
      <ConsoleView entries={outcome.entries} label="Preview console" />
      {outcome.failure ? <ScriptErrorView failure={outcome.failure} /> : null}
      {outcome.prompt !== null ? (
        <>
          <h3>Prompt</h3>
          <pre className="prompt" aria-label="Prompt" data-testid="preview-prompt">
            {outcome.prompt}
          </pre>
        </>
      ) : null}
    </section>
  );
}
