import { type ReactNode, useCallback, useState } from "react";
import { del, get } from "../api/client";
import { Notice } from "../components/bits";
import { ErrorView } from "../components/ErrorView";
import { useApi } from "../components/useApi";
import { useEvery } from "../components/useEvery";
import { go, href } from "../router";
import { Chunks } from "./knowledge/Chunks";
import { Confirmed } from "./knowledge/Confirmed";
import { Documents } from "./knowledge/Documents";
import { Search } from "./knowledge/Search";
import { type BaseDetail, type Ingestion, kbPath, working } from "./knowledge/types";
import { Upload } from "./knowledge/Upload";

function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}

/** How often the documents are read again while one is still being ingested. */
export const POLL_MS = 1000;

/** One knowledge base: its documents (with how their ingestion stands, read again every second
 * until none is queued or being read), adding documents, removing one, a document's chunks,
 * searching, and deleting the base. */
export function KnowledgeBasePage({ name, document }: { name: string; document: string | null }) {
  const { data, error, reload } = useApi(() => get<BaseDetail>(kbPath(name)), [name]);
  const [problem, setProblem] = useState<unknown>(null);
  const [notice, setNotice] = useState<ReactNode>(null);
  const documents = data?.documents ?? [];
  const busy = documents.some(working);
  const refresh = useCallback(() => {
    if (busy) reload();
  }, [busy, reload]);
  useEvery(POLL_MS, refresh);

  if (!data) {
    return (
      <section className="knowledge-base">
        <div className="toolbar">
          <h1>
            Knowledge base <code>{name}</code>
          </h1>
          <a href={href("knowledge")}>all knowledge bases</a>
        </div>
        <ErrorView error={error} />
      </section>
    );
  }

  function sent(ingestion: Ingestion) {
    const reading = ingestion.documents.map((d) => d.name);
    const same = ingestion.unchanged.map((d) => d.name);
    setNotice(
      <>
        {reading.length ? `reading ${reading.join(", ")}` : "nothing new to read"}
        {same.length ? `${reading.length ? "; " : ": "}unchanged, so not read again: ${same.join(", ")}` : ""}
        {ingestion.run_id ? (
          <>
            {" "}
            (<a href={href("runs", ingestion.run_id)}>the ingestion run</a>)
          </>
        ) : null}
      </>,
    );
    reload();
  }

  async function deleteBase() {
    try {
      await del(kbPath(name));
      go("knowledge");
    } catch (cause) {
      setProblem(cause);
    }
  }

  const live = documents.filter((d) => d.status !== "removed").length;
  return (
    <section className="knowledge-base">
      <div className="toolbar">
        <h1>
          Knowledge base <code>{data.name}</code>
        </h1>
        <a href={href("knowledge")}>all knowledge bases</a>
        <Confirmed
          label="Delete this knowledge base"
          what={`Delete this knowledge base (${data.name})`}
          question={`Delete ${data.name} with its ${live} ${plural(live, "document")} and their chunks? This cannot be undone.`}
          yes="Yes, delete it"
          onConfirm={deleteBase}
        />
      </div>
      {data.description ? <p className="description">{data.description}</p> : null}
      <p className="muted">
        Documents are split into chunks of at most {data.chunk_tokens} tokens under their headings; the embedding
        model is <code>{data.embedder}</code>.
      </p>
      <ErrorView error={error ?? problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <Notice>{notice}</Notice>
      <h2>Documents</h2>
      {busy ? (
        <p className="muted working" role="status">
          Reading the documents: this table updates every second until they are ready.
        </p>
      ) : null}
      <Documents
        kb={name}
        documents={documents}
        open={document}
        onRemoved={(doc, removed) => {
          setNotice(
            removed.removed > 0 ? `removed ${doc.name}: searches no longer find it` : `${doc.name} had no chunks to remove`,
          );
          reload();
        }}
        onError={setProblem}
      />
      {document ? <Chunks kb={name} name={document} doc={documents.find((d) => d.name === document)} /> : null}
      <Upload kb={name} onSent={sent} />
      <Search kb={name} />
    </section>
  );
}
