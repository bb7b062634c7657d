import { useState } from "react";
import { del, post, q, type Schemas } from "../../api/client";

type Schedule = Schemas["ScheduleOut"];

/** Pause or resume a schedule, and delete it once confirmed here (no browser dialog). `link`:
 * drawn as links, for a table row. */
export function ScheduleActions({
  schedule,
  link = false,
  onChanged,
  onDeleted,
  onError,
}: {
  schedule: Schedule;
  link?: boolean;
  onChanged: (updated: Schedule) => void;
  onDeleted: (deleted: Schedule) => void;
  onError: (cause: unknown) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const style = (danger = false) => [link ? "link" : "", danger ? "danger" : ""].join(" ").trim() || undefined;
  const word = (text: string) => (link ? text : text[0].toUpperCase() + text.slice(1));

  async function act(request: () => Promise<Schedule>, done: (s: Schedule) => void) {
    setBusy(true);
    try {
      done(await request());
    } catch (cause) {
      onError(cause);
    } finally {
      setBusy(false);
    }
  }

  const path = `/api/schedules/${q(schedule.id)}`;
  if (confirming) {
    return (
      <span className="confirm" role="group" aria-label="Confirm the deletion">
        Delete this schedule?{" "}
        <button
          type="button"
          className={style(true)}
          disabled={busy}
          onClick={() => void act(() => del<Schedule>(path), onDeleted)}
        >
          {word("yes, delete")}
        </button>
        <button type="button" className={style()} autoFocus disabled={busy} onClick={() => setConfirming(false)}>
          {word("keep it")}
        </button>
      </span>
    );
  }
  const next = schedule.status === "paused" ? "resume" : "pause";
  return (
    <>
      <button
        type="button"
        className={style()}
        disabled={busy}
        onClick={() => void act(() => post<Schedule>(`${path}/${next}`), onChanged)}
      >
        {word(next)}
      </button>
      <button type="button" className={style(true)} disabled={busy} onClick={() => setConfirming(true)}>
        {word("delete")}
      </button>
    </>
  );
}
