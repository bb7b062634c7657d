import { useEffect, useRef, useState } from "react";
import { get } from "../../api/client";
import { Head } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { useApi } from "../../components/useApi";
import { href } from "../../router";
import { type Chunk, type Doc, headings, kbPath } from "./types";

/** A document's chunks in order: what searches find of it. A removed document shows the chunks
 * it had; the others can show those of their earlier versions too. */
export function Chunks({ kb, name, doc }: { kb: string; name: string; doc: Doc | undefined }) {
  const gone = doc?.status === "removed";
  const [earlier, setEarlier] = useState(false);
  const all = gone || earlier;
  const { data, error } = useApi(
    () => get<Chunk[]>(`${kbPath(kb, "documents", name, "chunks")}?removed=${all}`),
    [kb, name, all, doc?.version, doc?.status],
  );
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [name]);

  return (
    <section className="chunks" aria-labelledby="chunks-of">
      <div className="toolbar">
        <h2 id="chunks-of" ref={heading} tabIndex={-1}>
          Chunks of <code>{name}</code>
        </h2>
        {gone ? (
          <span className="muted">Removed from searches: these are the chunks it had.</span>
        ) : (
          <label className="check">
            <input type="checkbox" checked={earlier} onChange={(e) => setEarlier(e.target.checked)} /> Also show the
            chunks of earlier versions
          </label>
        )}
        <a href={href("knowledge", kb)}>close</a>
      </div>
      <ErrorView error={error} />
      {data && data.length === 0 ? (
        <p className="muted">
          {doc && (doc.status === "queued" || doc.status === "ingesting")
            ? "No chunks yet: it is still being read."
            : doc?.status === "failed"
              ? "No chunks: it could not be read (the reason is in the table above)."
              : "No chunks."}
        </p>
      ) : null}
      {data && data.length > 0 ? (
        <table className="list chunk-list" aria-label={`Chunks of ${name}`}>
          <Head labels={["Position", "Heading", "Text", "Tokens"]} />
          <tbody>
            {data.map((chunk) => (
              <tr key={chunk.id} data-position={chunk.position} className={chunk.live ? undefined : "gone"}>
                <td>
                  {chunk.position}
                  {chunk.live ? null : <div className="muted">not searched</div>}
                </td>
                <td className="heading">
                  {chunk.heading_path.length ? headings(chunk.heading_path) : <span className="muted">none</span>}
                </td>
                <td className="text">{chunk.text}</td>
                <td>{chunk.tokens}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
