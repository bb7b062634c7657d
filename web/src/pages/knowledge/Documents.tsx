import { del } from "../../api/client";
import { Head } from "../../components/bits";
import { when } from "../../components/useApi";
import { href } from "../../router";
import { Confirmed } from "./Confirmed";
import { type Doc, type Removed, kbPath, working } from "./types";

/** What each status means, for the pill's tooltip. */
const STATUS: Record<string, string> = {
  queued: "waiting to be read",
  ingesting: "being read, split into chunks and indexed",
  ready: "searchable",
  failed: "could not be read: the reason is beside it",
  removed: "no longer searched",
};

/** The link that opens a document's chunks below the table. */
export function chunksHref(kb: string, document: string): string {
  return `${href("knowledge", kb)}?document=${encodeURIComponent(document)}`;
}

/** A knowledge base's documents: name (opens its chunks), version, status (with the reason of a
 * failure), chunks, the ingestion run, and "remove" once confirmed. */
export function Documents({
  kb,
  documents,
  open,
  onRemoved,
  onError,
}: {
  kb: string;
  documents: Doc[];
  open: string | null;
  onRemoved: (doc: Doc, removed: Removed) => void;
  onError: (cause: unknown) => void;
}) {
  async function remove(doc: Doc) {
    try {
      onRemoved(doc, await del<Removed>(kbPath(kb, "documents", doc.name)));
    } catch (cause) {
      onError(cause);
    }
  }

  if (documents.length === 0) return <p className="muted">No documents yet: add some below.</p>;
  return (
    <table className="list documents" aria-label="Documents">
      <Head labels={["Document", "Version", "Status", "Chunks", "Ingestion run", "Updated", ""]} />
      <tbody>
        {documents.map((doc) => (
          <tr key={doc.id} data-document={doc.name} className={doc.status === "removed" ? "gone" : undefined}>
            <td>
              <a
                href={chunksHref(kb, doc.name)}
                aria-current={open === doc.name ? "true" : undefined}
                title="Show its chunks"
              >
                {doc.name}
              </a>{" "}
              <span className="muted">{doc.media_type}</span>
            </td>
            <td>{doc.version}</td>
            <td className="status">
              <span className={`pill status-${doc.status}`} title={STATUS[doc.status]}>
                {doc.status}
              </span>
              {doc.error ? <div className="doc-error">{doc.error}</div> : null}
            </td>
            <td>{doc.chunks}</td>
            <td>
              {doc.run_id ? (
                <a href={href("runs", doc.run_id)} title={`The run that read ${doc.name}`}>
                  <code>{doc.run_id.slice(0, 8)}</code>
                </a>
              ) : (
                <span className="muted">none</span>
              )}
            </td>
            <td>{when(doc.updated_at)}</td>
            <td className="actions">
              {doc.status === "removed" ? null : working(doc) ? (
                <span className="muted">being read</span>
              ) : (
                <Confirmed
                  link
                  label="remove"
                  what={`remove ${doc.name}`}
                  question={`Remove ${doc.name} from searches?`}
                  yes="yes, remove"
                  onConfirm={() => remove(doc)}
                />
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
