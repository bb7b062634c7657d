import { ApiError } from "../api/client";
import { forBrowser } from "../api/wording";
import { describeDetail } from "./details";

/** An error as the server said it: message, hint and details; never a blank page. */
export function ErrorView({ error, onDismiss }: { error: unknown; onDismiss?: () => void }) {
  if (!error) return null;
  const api = error instanceof ApiError ? error : null;
  const message = api ? api.message : error instanceof Error ? error.message : String(error);
  return (
    <div className="error" role="alert">
      <strong>{api ? `${api.code}: ` : ""}{message}</strong>
      <Hint hint={api?.hint} />
      {api && api.details.length > 0 ? (
        <ul className="details">
          {api.details.map((detail, index) => (
            <li key={index}>{typeof detail === "string" ? detail : describeDetail(detail)}</li>
          ))}
        </ul>
      ) : null}
      {onDismiss ? (
        <button type="button" className="link" onClick={onDismiss} aria-label="Dismiss the error">
          dismiss
        </button>
      ) : null}
    </div>
  );
}

/** A server's hint, in the workbench's words (nothing when none is left: it only named a route). */
export function Hint({ hint }: { hint: string | null | undefined }) {
  const said = forBrowser(hint);
  return said ? <div className="hint">hint: {said}</div> : null;
}
