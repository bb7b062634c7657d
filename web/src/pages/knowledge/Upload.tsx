import { useRef, useState } from "react";
import { sendForm } from "../../api/client";
import { Field } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { parseMetadata } from "./metadata";
import { type Ingestion, kbPath } from "./types";

/** The files a knowledge base reads. */
/** The kinds the server reads; `text/*` lets a picker offer any text file (source code,
 * reStructuredText, CSV), which the server reads as text, keeping its indentation. */
export const ACCEPTED = ".txt,.md,.markdown,.html,.htm,.pdf,.docx,text/*";

/** Add documents: files (several at once) and optional metadata every one of them gets, sent as
 * one upload; the server answers at once and reads them in the background. */
export function Upload({ kb, onSent }: { kb: string; onSent: (ingestion: Ingestion) => void }) {
  const picker = useRef<HTMLInputElement>(null);
  const [files, setFiles] = useState<File[]>([]);
  const [metadata, setMetadata] = useState("");
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const parsed = parseMetadata(metadata);

  async function submit() {
    setProblem(null);
    if (files.length === 0) {
      setProblem(new Error("no file chosen: choose one or more files to add"));
      return;
    }
    if ("problem" in parsed) {
      setProblem(new Error(parsed.problem));
      return;
    }
    const form = new FormData();
    for (const file of files) form.append("files", file, file.name);
    if (parsed.value) form.append("metadata", JSON.stringify(parsed.value));
    setBusy(true);
    try {
      const sent = await sendForm<Ingestion>(kbPath(kb, "documents"), form);
      setFiles([]);
      if (picker.current) picker.current.value = "";
      onSent(sent);
    } catch (cause) {
      setProblem(cause);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="kb-form upload"
      aria-labelledby="add-documents"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <h2 id="add-documents">Add documents</h2>
      <Field label="Files (text, Markdown, HTML, PDF or Word .docx)">
        <input
          ref={picker}
          type="file"
          multiple
          accept={ACCEPTED}
          onChange={(e) => setFiles(Array.from(e.target.files ?? []))}
        />
      </Field>
      <Field label="Metadata (optional)">
        <textarea
          className="code"
          rows={3}
          spellCheck={false}
          value={metadata}
          placeholder={"team=support\nproduct=billing"}
          aria-describedby="metadata-hint"
          aria-invalid={"problem" in parsed}
          onChange={(e) => setMetadata(e.target.value)}
        />
      </Field>
      <p className="hint" id="metadata-hint">
        Given to every file sent, and searches can be limited to it: one <code>key=value</code> a line (the values are
        text), or a JSON object such as <code>{'{"team": "support", "year": 2024}'}</code>.
      </p>
      {"problem" in parsed ? <p className="warning">{parsed.problem}</p> : null}
      <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <div className="row">
        <button type="submit" disabled={busy}>
          {busy ? "Sending…" : "Add"}
        </button>
        <span className="muted">
          A file sent again with the same name replaces the earlier version; an unchanged one is not read again.
        </span>
      </div>
    </form>
  );
}
