import { useState } from "react";
import { put, q } from "../api/client";
import { ErrorView } from "../components/ErrorView";
import { go, href } from "../router";
import { draftOf, type DraftOut } from "./canvas/drafts";
import type { Json } from "../schema/fields";
import { SchemaForm } from "../schema/SchemaForm";

/** What a new graph's run input starts as: one required text field. */
const FIRST_INPUT: Json = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };

/** A graph id made from its name: lower case, words joined by `_`. */
export function slugOf(name: string): string {
  return name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64);
}

/** A graph from nothing: its name, id, description and run input (a form of fields, written into
 * `input_schema`), kept as a draft; the canvas then opens on it, empty, with the palette. */
export function NewGraphPage() {
  const [name, setName] = useState("");
  const [id, setId] = useState("");
  const [idTyped, setIdTyped] = useState(false);
  const [description, setDescription] = useState("");
  const [input, setInput] = useState<Json>(FIRST_INPUT);
  const [problem, setProblem] = useState<unknown>(null);
  const [existing, setExisting] = useState<string | null>(null);
  const slug = idTyped ? id : slugOf(name);

  async function create() {
    setProblem(null);
    setExisting(null);
    try {
      if (await draftOf(slug)) {
        setExisting(slug);
        return;
      }
      const graph = { plait: 1, id: slug, name: name.trim() || slug, ...(description.trim() ? { description: description.trim() } : {}), input_schema: input, nodes: [], edges: [] };
      await put<DraftOut>(`/api/drafts/${q(slug)}`, { graph });
      go("graphs", slug);
    } catch (cause) {
      setProblem(cause);
    }
  }

  return (
    <section>
      <h1>New graph</h1>
      <p className="muted">
        Name it and say what a run starts with; then add nodes on the canvas. It is kept as a draft (valid or not) until you store
        it as version 1.
      </p>
      <p className="muted">
        Or say in words what it should do: <a href={href("chat")}>design it in a chat</a>, which proposes the graph for you to
        accept.
      </p>
      <form
        className="new-graph"
        aria-label="New graph"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <label>
          Name
          <input aria-label="Name" value={name} onChange={(e) => setName(e.target.value)} required placeholder="Feedback triage" />
        </label>
        <label>
          Id <span className="muted">(how files, the CLI and the API name it: letters, digits, _ . -)</span>
          <input
            aria-label="Id"
            value={slug}
            pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*"
            maxLength={128}
            required
            onChange={(e) => {
              setIdTyped(true);
              setId(e.target.value);
            }}
          />
        </label>
        <label>
          Description
          <textarea aria-label="Description" value={description} onChange={(e) => setDescription(e.target.value)} />
        </label>
        <h2>Run input</h2>
        <p className="muted">The fields a run starts with; the form that starts a run is made from them.</p>
        <SchemaForm schema={input} label="Run input" onChange={setInput} />
        <ErrorView error={problem} />
        {existing ? (
          <p className="warning" role="alert">
            A graph with the id <code>{existing}</code> is being built already: <a href={href("graphs", existing)}>open it</a>, or
            choose another id.
          </p>
        ) : null}
        <div className="row">
          <button type="submit" disabled={!slug}>
            Create and open the canvas
          </button>
          <a className="button" href={href("graphs")}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}
