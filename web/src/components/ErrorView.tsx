import { ApiError } from "../api/client";
import { forBrowser } from "../api/wording";

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
            <li key={index}>{typeof detail === "string" ? detail : describe(detail)}</li>
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

function describe(detail: unknown): string {
  if (detail && typeof detail === "object") {
    const d = detail as Record<string, unknown>;
    const where = d.where ?? d.node_id ?? d.edge_id ?? "";
    const text = d.message ?? d.problem ?? JSON.stringify(detail);
    const said = forBrowser(d.hint ? String(d.hint) : null);
    const hint = said ? ` (hint: ${said})` : "";
    return `${where ? `${String(where)}: ` : ""}${String(text)}${hint}`;
  }
  return String(detail);
}
