import { useState } from "react";
import { get, post } from "../api/client";
import { Field, Head } from "../components/bits";
import { ErrorView } from "../components/ErrorView";
import { useApi } from "../components/useApi";
import { go, href } from "../router";
import { type Base, type BaseDetail, type Doc, kbPath, working } from "./knowledge/types";

/** The chunk size a new knowledge base gets unless another is typed. */
const DEFAULT_CHUNK_TOKENS = 200;

interface Listed {
  base: Base;
  documents: Doc[] | null;
}

/** Every base, with its documents (read base by base: the list does not say how many). */
async function bases(): Promise<Listed[]> {
  const listed = await get<Base[]>("/api/kb");
  return Promise.all(
    listed.map(async (base) => ({
      base,
      documents: await get<BaseDetail>(kbPath(base.name)).then(
        (detail) => detail.documents,
        () => null,
      ),
    })),
  );
}

/** How many documents a base searches, and how many failed or are still being read. */
function counted(documents: Doc[] | null): string {
  if (documents === null) return "?";
  const kept = documents.filter((d) => d.status !== "removed");
  const failed = kept.filter((d) => d.status === "failed").length;
  const reading = kept.filter(working).length;
  const more = [failed ? `${failed} failed` : "", reading ? `${reading} being read` : ""].filter(Boolean);
  return `${kept.length}${more.length ? ` (${more.join(", ")})` : ""}`;
}

/** The knowledge bases: name, documents, description; a new one. */
export function KnowledgePage() {
  const { data, error, reload } = useApi(bases, []);
  return (
    <section className="knowledge">
      <div className="toolbar">
        <h1>Knowledge</h1>
        <button type="button" onClick={reload}>
          Refresh
        </button>
        <span className="muted">Documents that graphs search with a RETRIEVE node.</span>
      </div>
      <ErrorView error={error} />
      <table className="list" aria-label="Knowledge bases">
        <Head labels={["Name", "Documents", "Chunk size", "Description"]} />
        <tbody>
          {(data ?? []).map(({ base, documents }) => (
            <tr key={base.id} data-kb={base.name}>
              <td>
                <a href={href("knowledge", base.name)}>{base.name}</a>
              </td>
              <td className="count">{counted(documents)}</td>
              <td>{base.chunk_tokens} tokens</td>
              <td>{base.description || <span className="muted">none</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.length === 0 ? <p className="muted">No knowledge bases yet: make one below.</p> : null}
      <NewBase />
    </section>
  );
}

/** A new, empty knowledge base; made, its page opens to add documents. */
function NewBase() {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [chunkTokens, setChunkTokens] = useState(String(DEFAULT_CHUNK_TOKENS));
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit() {
    setProblem(null);
    if (!name.trim()) {
      setProblem(new Error("the knowledge base needs a name, e.g. handbook"));
      return;
    }
    const tokens = Number(chunkTokens);
    if (!Number.isInteger(tokens) || tokens < 16 || tokens > 512) {
      setProblem(new Error(`the chunk size must be a whole number of tokens from 16 to 512, not '${chunkTokens}'`));
      return;
    }
    setBusy(true);
    try {
      const body = { name: name.trim(), description: description.trim(), chunk_tokens: tokens };
      const made = await post<Base>("/api/kb", body);
      go("knowledge", made.name);
    } catch (cause) {
      setProblem(cause);
      setBusy(false);
    }
  }

  return (
    <form
      className="kb-form"
      noValidate
      aria-labelledby="new-kb"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <h2 id="new-kb">New knowledge base</h2>
      <div className="row">
        <Field label="Name">
          <input
            className="code"
            value={name}
            spellCheck={false}
            placeholder="handbook"
            aria-describedby="kb-name-hint"
            onChange={(e) => setName(e.target.value)}
          />
        </Field>
        <Field label="Description (optional)">
          <input className="wide" value={description} onChange={(e) => setDescription(e.target.value)} />
        </Field>
        <Field label="Chunk size (tokens)">
          <input
            type="number"
            min={16}
            max={512}
            value={chunkTokens}
            aria-describedby="kb-chunk-hint"
            onChange={(e) => setChunkTokens(e.target.value)}
          />
        </Field>
      </div>
      <p className="hint" id="kb-name-hint">
        The name: lower-case letters, digits, <code>_</code>, <code>.</code> and <code>-</code>, starting with a letter or
        digit. Graphs name the base by it.
      </p>
      <p className="hint" id="kb-chunk-hint">
        Documents are cut into chunks of at most this many tokens (16 to 512); a search finds chunks.
      </p>
      <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <button type="submit" disabled={busy}>
        Create knowledge base
      </button>
    </form>
  );
}
