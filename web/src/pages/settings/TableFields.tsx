import { Field } from "../../components/bits";
import type { Table } from "./types";

/** What a threshold's `on_*` action may be (`[resources]`): docs/configuration.md. */
export const ACTIONS = ["execute", "queue", "pause", "degrade", "reject"] as const;

/** What the better-known keys mean; a key the server adds later shows by its name alone. */
const MEANING: Record<string, string> = {
  enabled: "decide before runs and nodes start (off: always execute)",
  probe_s: "seconds between probes of CPU, memory, disk and the providers",
  disk_free_gb_min: "GB of free disk below which on_disk applies",
  memory_percent_max: "% of memory used above which on_memory applies",
  cpu_percent_max: "% of CPU busy above which on_cpu applies",
  capacity_percent_min: "% of the providers' capacity free below which on_capacity applies",
  queue_max_s: "seconds a queued run waits at most, then starts anyway",
  cpu_queue_min_s: "seconds a node queued for the CPU waits at least",
  cpu_queue_max_s: "seconds a node queued for the CPU waits at most",
  max_concurrent_nodes: "nodes of one run executing at once",
  on_disk: "what a new run gets when the disk rule fires",
  on_memory: "what a run or node gets when the memory rule fires",
  on_cpu: "what a node that calls no model gets when the CPU rule fires",
  on_capacity: "what a run or node gets when the providers' capacity rule fires",
  on_exhausted: "what a run gets when every provider is exhausted or unreachable",
  history_tokens: "tokens of the conversation the chat's designer is given",
  compress_at: "share of history_tokens past which older turns are compressed",
  recent_share: "share of history_tokens for the newest turns, verbatim",
  summary_share: "share for a summary of the older turns",
  facts_share: "share for the facts the chat's memory recalls",
  max_timeout_s: "seconds a program or script may run at most",
  timeout_s: "seconds a program runs unless its node says otherwise",
  max_output_bytes: "bytes of output a program may write",
  processes: "processes a program may start",
};

/** Where a value comes from, in words: plait.toml, a change saved here, or the default. */
function origin(source: string): string {
  if (source === "default") return "the default";
  if (source.startsWith("settings")) return `set here (${source.replace("settings ", "")})`;
  return `from ${source}`;
}

/** A value as typed into a number field: a number when it reads as one, else the text as typed,
 * which the server refuses naming the key (the page does not guess what was meant). */
function typed(text: string, nullable: boolean): unknown {
  if (text.trim() === "") return nullable ? null : text;
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
}

/** A table of settings drawn by its keys: numbers as number fields, `on_*` as a choice of
 * action, switches as check boxes; each with where its value comes from and, for limits, the
 * deployer's cap beside it. */
export function TableFields({
  label,
  prefix,
  values,
  onChange,
  readOnly,
  initial,
  caps,
  sources,
  refused,
}: {
  label: string;
  prefix: string;
  values: Table;
  /** The table as loaded: a field keeps the kind its value had (emptied, a number field stays one). */
  initial: Table;
  onChange: (values: Table) => void;
  readOnly: boolean;
  caps?: Table;
  sources: Record<string, string>;
  /** Dotted keys the server's last refusal named: marked, the message is by the Save button. */
  refused?: Set<string>;
}) {
  const set = (key: string, value: unknown) => onChange({ ...values, [key]: value });
  const keys = Object.keys(values);
  if (!keys.length) return <p className="muted">Nothing to set here on this server.</p>;
  return (
    <div className="settings-table" role="group" aria-label={label}>
      {keys.map((key) => {
        const value = values[key];
        const cap = caps?.[key];
        const source = sources[`${prefix}.${key}`];
        const notes = [MEANING[key], cap !== undefined && cap !== null ? `cap ${String(cap)}` : "", source ? origin(source) : ""];
        const bad = refused?.has(`${prefix}.${key}`) ?? false;
        return (
          <div className={bad ? "settings-row refused" : "settings-row"} key={key} data-key={`${prefix}.${key}`}>
            <Field label={key}>{control(key, value, initial[key], readOnly, cap, bad, (v) => set(key, v))}</Field>
            <span className="muted settings-note">
              {bad ? <span className="refused-note">refused: see why by the Save button</span> : null}
              {notes.filter(Boolean).map((note, i) => (
                <span key={i} className={note.startsWith("cap ") ? "cap" : undefined}>
                  {note}
                </span>
              ))}
            </span>
          </div>
        );
      })}
    </div>
  );
}

function control(
  key: string,
  value: unknown,
  was: unknown,
  readOnly: boolean,
  cap: unknown,
  bad: boolean,
  set: (value: unknown) => void,
) {
  const kind = was === undefined ? value : was;
  const invalid = bad ? true : undefined;
  if (typeof kind === "boolean") {
    return <input type="checkbox" aria-invalid={invalid} checked={value === true} disabled={readOnly} onChange={(e) => set(e.target.checked)} />;
  }
  if (key.startsWith("on_")) {
    const known = (ACTIONS as readonly unknown[]).includes(value);
    return (
      <select aria-invalid={invalid} value={String(value)} disabled={readOnly} onChange={(e) => set(e.target.value)}>
        {known ? null : <option value={String(value)}>{String(value)}</option>}
        {ACTIONS.map((a) => (
          <option key={a} value={a}>
            {a}
          </option>
        ))}
      </select>
    );
  }
  if (typeof kind === "number" || kind === null) {
    return (
      <input
        type="number"
        step="any"
        className="number"
        aria-invalid={invalid}
        value={value === null ? "" : String(value)}
        placeholder={value === null ? "unset" : undefined}
        max={typeof cap === "number" ? cap : undefined}
        readOnly={readOnly}
        onChange={(e) => set(typed(e.target.value, kind === null))}
      />
    );
  }
  if (typeof kind === "string") {
    return <input aria-invalid={invalid} value={String(value)} readOnly={readOnly} spellCheck={false} onChange={(e) => set(e.target.value)} />;
  }
  return <input className="code" value={JSON.stringify(value)} readOnly aria-readonly="true" />;
}
