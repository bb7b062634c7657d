import { useState } from "react";
import { ErrorView } from "../../components/ErrorView";
import { when } from "../../components/useApi";
import { type HistoryEntry, shown } from "./types";

/** Every change to the settings, newest first: its revision, when, who, the note and each key
 * from its old value to its new one; each can be reverted (the revert is a change of its own). */
export function History({
  entries,
  error,
  current,
  dirty,
  onRevert,
}: {
  entries: HistoryEntry[] | null;
  error: unknown;
  current: number;
  dirty: boolean;
  onRevert: (revision: number) => Promise<void>;
}) {
  const [asking, setAsking] = useState<number | null>(null);
  const [busy, setBusy] = useState(false);
  const newest = [...(entries ?? [])].sort((a, b) => b.revision - a.revision);
  return (
    <section className="settings-history" aria-labelledby="settings-history">
      <h2 id="settings-history">History</h2>
      <ErrorView error={error} />
      {entries && entries.length === 0 ? <p className="muted">No change yet: every setting is as plait.toml and the defaults say.</p> : null}
      <ol className="history" aria-label="Changes">
        {newest.map((entry) => (
          <li key={entry.revision} data-revision={entry.revision} aria-current={entry.revision === current ? "true" : undefined}>
            <div>
              <strong>revision {entry.revision}</strong> · {when(entry.at)} · by {entry.by ?? "someone unnamed"}
              {entry.reverts !== null && entry.reverts !== undefined ? <> · reverts revision {entry.reverts}</> : null}
              {entry.revision === current ? <span className="badge user">in force</span> : null}
            </div>
            {entry.note ? <div className="muted">note: {entry.note}</div> : null}
            <ul className="changes" aria-label={`Changes of revision ${entry.revision}`}>
              {entry.changes.map((c, i) => (
                <li key={i}>
                  <code>{c.key}</code>: {shown(c.old)} → {shown(c.new)}
                </li>
              ))}
            </ul>
            {asking === entry.revision ? (
              <span className="confirm">
                Undo revision {entry.revision}? A new revision puts back what it replaced.
                <button
                  type="button"
                  disabled={busy}
                  onClick={() => {
                    setBusy(true);
                    onRevert(entry.revision).finally(() => {
                      setBusy(false);
                      setAsking(null);
                    });
                  }}
                >
                  Revert revision {entry.revision}
                </button>
                <button type="button" className="link" onClick={() => setAsking(null)}>
                  keep it
                </button>
              </span>
            ) : (
              <button
                type="button"
                className="link"
                disabled={dirty}
                title={dirty ? "save or discard your edits first" : undefined}
                onClick={() => setAsking(entry.revision)}
              >
                revert…
              </button>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}
