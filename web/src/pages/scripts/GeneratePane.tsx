import { useEffect, useState } from "react";
import { ConsoleView } from "./ConsoleView";
import { HttpErrorView } from "./HttpErrorView";
import { type ConsoleEntry, where } from "./model";
import { ModelPicker } from "./ModelPicker";
import { useStream } from "./useStream";

/** Which step of a generation failed (plait/runs/generate.py), as the pane names it. */
export const LAYERS: Record<string, { label: string; says: string }> = {
  script: { label: "Script error", says: "the script failed before it returned a prompt" },
  preview: { label: "Prompt error", says: "the script returned nothing that can be sent as a prompt" },
  llm_request: { label: "LLM request error", says: "the model could not be asked, or gave no answer" },
  http: { label: "HTTP error", says: "the model's server answered with an HTTP error" },
  stream: { label: "Stream error", says: "the answer stream broke off" },
  parse: { label: "Parse error", says: "the answer is not the JSON its schema asks for" },
  cancelled: { label: "Cancelled", says: "the generation was stopped, and its model call with it" },
};

interface Failure {
  layer: string;
  kind: string;
  message: string;
  line: number | null;
  column: number | null;
}

interface Done {
  value?: unknown;
  provider?: string;
  model?: string;
  usage?: { input_tokens: number; output_tokens: number };
}

interface State {
  running: boolean;
  entries: ConsoleEntry[];
  prompt: string | null;
  text: string;
  partial: boolean;
  notes: string[];
  done: Done | null;
  failure: Failure | null;
  problem: unknown;
}

const IDLE: State = { running: false, entries: [], prompt: null, text: "", partial: false, notes: [], done: null, failure: null, problem: null };
const CANCELLED: Failure = { layer: "cancelled", kind: "cancelled", message: "you cancelled the generation", line: null, column: null };

/** Generate: the script's prompt sent to a model, the answer streamed in as it comes; Cancel
 * closes the stream, which stops the model call. A failure says which layer failed, above the
 * text received so far (kept, marked partial). */
export function GeneratePane({ body, schemaTarget }: { body: () => Record<string, unknown>; schemaTarget: string | null }) {
  const [state, setState] = useState<State>(IDLE);
  const [role, setRole] = useState("chat");
  const [model, setModel] = useState("");
  const [target, setTarget] = useState(schemaTarget ?? "");
  const stream = useStream();
  useEffect(() => setTarget(schemaTarget ?? ""), [schemaTarget]);

  function start() {
    let sent: Record<string, unknown>;
    try {
      sent = { ...body(), role, ...(model.trim() ? { model: model.trim() } : {}), ...(target.trim() ? { schema_target: target.trim() } : {}) };
    } catch (cause) {
      setState({ ...IDLE, problem: cause });
      return;
    }
    setState({ ...IDLE, running: true });
    stream.start(
      "/api/templates/generate",
      sent,
      ({ event, data }) =>
        setState((s) => {
          switch (event) {
            case "prompt":
              return { ...s, prompt: String(data.prompt ?? "") };
            case "delta":
              return { ...s, text: s.text + String(data.text ?? "") };
            case "done":
              return { ...s, text: String(data.content ?? s.text), notes: (data.notes as string[]) ?? [], done: data as Done };
            case "failed":
              return {
                ...s,
                text: String(data.content ?? s.text),
                partial: Boolean(data.partial),
                notes: (data.notes as string[]) ?? [],
                failure: data.error as Failure,
              };
            default:
              return { ...s, entries: [...s.entries, data as unknown as ConsoleEntry] };
          }
        }),
      (problem, aborted) =>
        setState((s) => {
          if (aborted) return { ...s, running: false, failure: CANCELLED, partial: s.text.length > 0 };
          const unfinished = !problem && !s.done && !s.failure;
          return { ...s, running: false, problem: unfinished ? new Error("the generation's stream ended before its last event") : problem };
        }),
    );
  }

  const status = state.running ? "generating" : "ready";
  return (
    <section className="pane generate-pane" aria-label="Generate" aria-busy={state.running}>
      <div className="row">
        <h2>Generate</h2>
        <button type="button" onClick={start} disabled={state.running}>
          Generate
        </button>
        {state.running ? (
          <button type="button" className="danger" onClick={stream.stop}>
            Cancel
          </button>
        ) : null}
        <span className="muted" data-testid="generate-status" data-status={status}>
          {state.running ? "generating…" : "ready"}
        </span>
      </div>
      <ModelPicker role={role} onRole={setRole} model={model} onModel={setModel} />
      <label className="field">
        <span className="field-label">Schema target (optional: the answer is parsed as JSON)</span>
        <input value={target} onChange={(e) => setTarget(e.target.value)} placeholder="e.g. output" spellCheck={false} />
      </label>
      <div className="stream" data-testid="generate-stream">
        {state.failure ? <LayerError failure={state.failure} /> : null}
        <HttpErrorView error={state.problem} />
        <ConsoleView entries={state.entries} label="Generate console" />
        {state.prompt !== null ? (
          <details>
            <summary>Prompt sent</summary>
            <pre aria-label="Prompt sent">{state.prompt}</pre>
          </details>
        ) : null}
        {state.text || state.running || state.done ? (
          <>
            <h3>
              Answer {state.partial ? <span className="badge warn">partial</span> : null}
            </h3>
            <pre className="answer" aria-label="Generated text" data-testid="generate-output" data-partial={state.partial}>
              {state.text}
            </pre>
          </>
        ) : null}
        {state.notes.length ? (
          <ul className="compact notes" aria-label="Notes">
            {state.notes.map((note) => (
              <li key={note}>{note}</li>
            ))}
          </ul>
        ) : null}
        {state.done ? <DoneView done={state.done} /> : null}
      </div>
    </section>
  );
}

function LayerError({ failure }: { failure: Failure }) {
  const layer = LAYERS[failure.layer] ?? { label: `${failure.layer} error`, says: "" };
  const at = where(failure);
  return (
    <div className="error layer-error" role="alert" data-layer={failure.layer} data-kind={failure.kind}>
      <strong className="layer-label">{layer.label}</strong> <span>({failure.layer} · {failure.kind})</span>
      {layer.says ? <span>: {layer.says}</span> : null}
      <div>
        {failure.message}
        {at ? ` at ${at}` : ""}
      </div>
    </div>
  );
}

function DoneView({ done }: { done: Done }) {
  return (
    <div className="notice" data-testid="generate-done">
      done{done.provider ? ` · ${done.provider}/${done.model ?? ""}` : ""}
      {done.usage ? ` · ${done.usage.input_tokens} tokens in, ${done.usage.output_tokens} out` : ""}
      {done.value !== undefined && done.value !== null ? (
        <>
          <h3>Parsed value</h3>
          <pre aria-label="Parsed value">{JSON.stringify(done.value, null, 2)}</pre>
        </>
      ) : null}
    </div>
  );
}
