import { useState } from "react";
import { post, type Schemas } from "../../api/client";
import { ErrorView } from "../../components/ErrorView";
import { InputFields, inputOf, type InputValues } from "../../components/InputFields";
import type { GraphDoc } from "../../graph/model";
import { go } from "../../router";

/** Start a run: a form generated from the graph's `input_schema`. A run executes a stored
 * version, so with unsaved edits the form says which version runs (the edits stay in the draft). */
export function StartRun({ graph, unsaved = false }: { graph: Schemas["GraphOut"]; unsaved?: boolean }) {
  const [open, setOpen] = useState(false);
  const [problem, setProblem] = useState<unknown>(null);
  const schema = (graph.graph as GraphDoc).input_schema ?? {};
  const [values, setValues] = useState<InputValues>({});

  async function start() {
    setProblem(null);
    const input = inputOf(schema, values);
    try {
      // Every node's answer streams, so that the run page shows each one as the model writes it.
      const body: Schemas["StartIn"] = { graph: graph.id, input, stream: true };
      const started = await post<Schemas["StartedOut"]>("/api/runs", body);
      go("runs", started.run_id);
    } catch (cause) {
      setProblem(cause);
    }
  }

  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Start a run…
      </button>
    );
  return (
    <form
      className="start-run"
      aria-label="Run input"
      onSubmit={(e) => {
        e.preventDefault();
        void start();
      }}
    >
      {unsaved ? (
        <p className="warning" role="note">
          Your unsaved edits are not part of this run: it runs the stored version {graph.version}. Save first to run
          them. Your edits stay on the canvas either way.
        </p>
      ) : null}
      <InputFields schema={schema} values={values} onChange={setValues} />
      <div className="row">
        <button type="submit">{unsaved ? `Start version ${graph.version} without my edits` : "Start"}</button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
      <ErrorView error={problem} />
    </form>
  );
}
