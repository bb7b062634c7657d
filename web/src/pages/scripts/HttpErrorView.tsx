import { ApiError } from "../../api/client";
import { ErrorView } from "../../components/ErrorView";

/** Plait itself refused the request before any stream (a 422 body, a 503 `sandbox_busy`): shown
 * as the HTTP layer, with the server's message and hint. */
export function HttpErrorView({ error }: { error: unknown }) {
  if (!error) return null;
  if (!(error instanceof ApiError)) return <ErrorView error={error} />; // found before sending (the input is not JSON)
  const status = error.status;
  return (
    <div className="layer-error" data-layer="http">
      <strong className="layer-label">
        HTTP error{status ? ` ${status}` : ""}: Plait {status === 0 ? "did not answer" : "refused the request"}
      </strong>
      <ErrorView error={error} />
    </div>
  );
}
