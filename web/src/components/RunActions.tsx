import { post, q } from "../api/client";

/** The statuses of a run that is over: nothing executes it any more, unless a person corrects it. */
export const ENDED = ["completed", "failed", "cancelled"];

type Action = "pause" | "resume" | "cancel";

/** Which of pause, resume and cancel the server allows a run in `status`. */
function allowed(status: string): Action[] {
  return [
    ...(["running", "pending"].includes(status) ? (["pause"] as const) : []),
    ...(["paused", "failed"].includes(status) ? (["resume"] as const) : []),
    ...(!ENDED.includes(status) ? (["cancel"] as const) : []),
  ];
}

/** The pause, resume and cancel buttons that apply to a run; `link`: drawn as links (a table). */
export function RunActions({
  run,
  link = false,
  onDone,
  onError,
}: {
  run: { id: string; status: string };
  link?: boolean;
  onDone: () => void;
  onError: (cause: unknown) => void;
}) {
  return (
    <>
      {allowed(run.status).map((action) => (
        <button
          key={action}
          type="button"
          className={[link ? "link" : "", action === "cancel" ? "danger" : ""].join(" ").trim() || undefined}
          onClick={() => post(`/api/runs/${q(run.id)}/${action}`).then(onDone, onError)}
        >
          {link ? action : action[0].toUpperCase() + action.slice(1)}
        </button>
      ))}
    </>
  );
}
