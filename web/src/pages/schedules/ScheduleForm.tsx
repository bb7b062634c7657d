import { useMemo, useState } from "react";
import { get, post, q, type Schemas } from "../../api/client";
import { Field } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { InputFields, inputOf, inputProperties, type InputValues } from "../../components/InputFields";
import { useApi } from "../../components/useApi";
import type { GraphSummary } from "./graphs";
import { browserZone, knownZones } from "./time";

type Schedule = Schemas["ScheduleOut"];
type CatchUp = Schemas["ScheduleIn"]["catch_up"];

const EXAMPLES: [string, string][] = [
  ["*/5 * * * *", "every 5 minutes"],
  ["0 9 * * 1-5", "9:00 on weekdays"],
  ["0 0 1 * *", "midnight on the 1st"],
];

const CATCH_UPS: [NonNullable<CatchUp>, string][] = [
  ["one", "one: run the missed firings once"],
  ["all", "all: run each missed firing"],
  ["none", "none: skip the missed firings"],
];

/** The run input as typed: an object, or what is wrong with it. */
function parseInput(text: string): { value: Record<string, unknown> } | { problem: string } {
  if (!text.trim()) return { value: {} };
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object" && !Array.isArray(value)) return { value: value as Record<string, unknown> };
    return { problem: "the run input must be a JSON object, e.g. {\"text\": \"…\"}" };
  } catch (cause) {
    return { problem: `the run input is not JSON: ${cause instanceof Error ? cause.message : String(cause)}` };
  }
}

/** A new schedule: a stored graph, a cron in a time zone, what to do with missed firings, and
 * the input of every run, asked for in the form "Start a run…" generates from the graph's
 * `input_schema` (as JSON for a graph whose input declares no fields). What the server refuses
 * is shown here, and the text typed stays. */
export function ScheduleForm({ graphs, onCreated }: { graphs: GraphSummary[]; onCreated: (made: Schedule) => void }) {
  const [graph, setGraph] = useState("");
  const [cron, setCron] = useState("");
  const [timezone, setTimezone] = useState("UTC");
  const [catchUp, setCatchUp] = useState<NonNullable<CatchUp>>("one");
  const [inputText, setInputText] = useState("{}");
  const [values, setValues] = useState<InputValues>({});
  const chosen = useApi(() => (graph ? get<Schemas["GraphOut"]>(`/api/graphs/${q(graph)}`) : Promise.resolve(null)), [graph]);
  const schema = (chosen.data?.graph as { input_schema?: unknown } | undefined)?.input_schema;
  const generated = inputProperties(schema).length > 0;
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const zones = useMemo(knownZones, []);
  const here = browserZone();
  const parsed = generated ? { value: inputOf(schema, values) } : parseInput(inputText);

  async function submit() {
    setProblem(null);
    if ("problem" in parsed) {
      setProblem(new Error(parsed.problem));
      return;
    }
    setBusy(true);
    try {
      const body = { graph, cron: cron.trim(), timezone: timezone.trim(), catch_up: catchUp, input: parsed.value };
      const made = await post<Schedule>("/api/schedules", body);
      setCron("");
      onCreated(made);
    } catch (cause) {
      setProblem(cause);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="schedule-form"
      aria-labelledby="new-schedule"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <h2 id="new-schedule">New schedule</h2>
      <div className="row">
        <Field label="Graph">
          <select value={graph} required onChange={(e) => setGraph(e.target.value)}>
            <option value="">choose a stored graph</option>
            {graphs.map((g) => (
              <option key={g.id} value={g.id}>
                {g.name} ({g.slug})
              </option>
            ))}
          </select>
        </Field>
        <Field label="Cron (5 fields)">
          <input
            className="code"
            value={cron}
            required
            spellCheck={false}
            placeholder="minute hour day month weekday"
            aria-describedby="cron-examples"
            onChange={(e) => setCron(e.target.value)}
          />
        </Field>
        <Field label="Time zone">
          <input
            value={timezone}
            list="schedule-zones"
            spellCheck={false}
            aria-describedby="zone-hint"
            onChange={(e) => setTimezone(e.target.value)}
          />
        </Field>
        <datalist id="schedule-zones">
          {zones.map((zone) => (
            <option key={zone} value={zone} />
          ))}
        </datalist>
        <Field label="Missed firings (catch-up)">
          <select value={catchUp} onChange={(e) => setCatchUp(e.target.value as NonNullable<CatchUp>)}>
            {CATCH_UPS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <p className="hint" id="cron-examples">
        Cron examples:{" "}
        {EXAMPLES.map(([text, meaning]) => (
          <span key={text} className="example">
            <button type="button" className="link" onClick={() => setCron(text)} aria-label={`Use ${text} (${meaning})`}>
              <code>{text}</code>
            </button>{" "}
            {meaning}
          </span>
        ))}
      </p>
      <p className="hint" id="zone-hint">
        An IANA name such as UTC or Europe/Paris
        {here !== "UTC" ? (
          <>
            {" "}
            (this browser's:{" "}
            <button type="button" className="link" onClick={() => setTimezone(here)}>
              {here}
            </button>
            )
          </>
        ) : null}
        .
      </p>
      {generated ? (
        <fieldset className="schedule-input">
          <legend>Run input</legend>
          <InputFields schema={schema} values={values} onChange={setValues} />
        </fieldset>
      ) : (
        <Field label="Run input (JSON)">
          <textarea
            className="code"
            rows={4}
            spellCheck={false}
            value={inputText}
            aria-invalid={"problem" in parsed}
            onChange={(e) => setInputText(e.target.value)}
          />
        </Field>
      )}
      {"problem" in parsed ? <p className="warning">{parsed.problem}</p> : null}
      <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <div className="row">
        <button type="submit" disabled={busy}>
          Create schedule
        </button>
        {graphs.length === 0 ? (
          <span className="muted">
            No stored graph yet: import one on the <a href="#/graphs">Graphs</a> page.
          </span>
        ) : null}
      </div>
    </form>
  );
}
