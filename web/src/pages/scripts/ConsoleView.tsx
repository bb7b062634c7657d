import { type ConsoleEntry, type ScriptFailure, shown, where } from "./model";

const LEVEL_NAMES: Record<string, string> = {
  host: "host warning",
  time: "time limit",
};

/** The script's console as it ran, one line per entry with its level; warnings (the script's
 * console.warn, and the host's own: a value cut, the time limit near) stand out. */
export function ConsoleView({ entries, label }: { entries: ConsoleEntry[]; label: string }) {
  if (!entries.length) return null;
  return (
    <ol className="console" aria-label={label}>
      {entries.map((entry, index) => (
        <li key={index} className={`console-line ${entry.type}`} data-type={entry.type} data-level={entry.level}>
          <span className="level">{LEVEL_NAMES[entry.level] ?? entry.level}</span> <span>{shown(entry.args)}</span>
        </li>
      ))}
    </ol>
  );
}

/** How the script failed: its kind, message, and where in the script. */
export function ScriptErrorView({ failure, title = "Script error" }: { failure: ScriptFailure; title?: string }) {
  const at = where(failure);
  return (
    <div className="error script-error" role="alert" data-kind={failure.kind}>
      <strong>
        {title}: {failure.kind}
      </strong>
      {at ? <span className="where"> at {at}</span> : null}
      <div>{failure.message}</div>
    </div>
  );
}
