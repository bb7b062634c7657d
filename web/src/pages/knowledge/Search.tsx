import { useState } from "react";
import { post, type Schemas } from "../../api/client";
import { Field, Head } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { href } from "../../router";
import { chunksHref } from "./Documents";
import { NO_FILTERS, searchFilters, type TypedFilters } from "./filters";
import { type Found, type Hit, headings, kbPath } from "./types";

type Mode = NonNullable<Schemas["SearchIn"]["mode"]>;

const MODES: [Mode, string][] = [
  ["hybrid", "hybrid: the words and their meaning"],
  ["keyword", "keyword: the words themselves"],
  ["dense", "dense: the meaning (embeddings)"],
];

const RANKINGS: [string, string][] = [
  ["keyword", "keyword"],
  ["dense", "dense"],
];

/** A score as a few digits: a fused score is small (0.0328), a keyword score may be large. */
function score(value: number): string {
  return String(Number(value.toPrecision(3)));
}

/** Where each ranking placed a hit: "keyword 3 · dense 1" ("no keyword match" when it did not). */
export function ranks(hit: Hit): string {
  return RANKINGS.filter(([key]) => key in hit.ranks)
    .map(([key, word]) => (hit.ranks[key] == null ? `no ${word} match` : `${word} ${hit.ranks[key]}`))
    .join(" · ");
}

/** What a search was narrowed by, as a person reads it: "documents guide.md · team=ops · score ≥ 0.5". */
function narrowedBy(body: Schemas["SearchIn"]): string {
  const said: string[] = [];
  const filters = body.filters;
  if (filters?.documents?.length) said.push(`documents ${filters.documents.join(", ")}`);
  if (filters?.heading) said.push(`under ${filters.heading}`);
  for (const [key, value] of Object.entries(filters?.metadata ?? {})) said.push(`${key}=${String(value)}`);
  if (body.min_score != null) said.push(`score ≥ ${body.min_score}`);
  return said.join(" · ");
}

/** Search the knowledge base as a RETRIEVE node with these settings would (filters by document,
 * heading and metadata, a minimum score); the hits with their ranks, and the search's run. */
export function Search({ kb }: { kb: string }) {
  const [query, setQuery] = useState("");
  const [mode, setMode] = useState<Mode>("hybrid");
  const [topK, setTopK] = useState("5");
  const [section, setSection] = useState(false);
  const [typed, setTyped] = useState<TypedFilters>(NO_FILTERS);
  const [found, setFound] = useState<{ result: Found; narrowed: string } | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const checked = searchFilters(typed);
  const set = (key: keyof TypedFilters) => (e: { target: { value: string } }) =>
    setTyped({ ...typed, [key]: e.target.value });

  async function submit() {
    setProblem(null);
    const text = query.trim();
    if (!text) {
      setFound(null);
      setProblem(new Error("nothing to search for: type a few words in the search box first"));
      return;
    }
    const k = Number(topK);
    if (!Number.isInteger(k) || k < 1 || k > 50) {
      setProblem(new Error(`the number of results must be a whole number from 1 to 50, not '${topK}'`));
      return;
    }
    const narrowing = searchFilters(typed);
    if ("problem" in narrowing) {
      setProblem(new Error(narrowing.problem));
      return;
    }
    const body: Schemas["SearchIn"] = { query: text, mode, top_k: k, expand: section ? "section" : "chunk" };
    if (narrowing.filters) body.filters = narrowing.filters;
    if (narrowing.minScore !== null) body.min_score = narrowing.minScore;
    setBusy(true);
    try {
      setFound({ result: await post<Found>(kbPath(kb, "search"), body), narrowed: narrowedBy(body) });
    } catch (cause) {
      setFound(null);
      setProblem(cause);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="kb-search">
      <form
        className="kb-form"
        noValidate
        role="search"
        aria-labelledby="search-kb"
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        <h2 id="search-kb">Search</h2>
        <div className="row">
          <Field label="Search for">
            <input type="search" className="query" value={query} onChange={(e) => setQuery(e.target.value)} />
          </Field>
          <Field label="Mode">
            <select value={mode} onChange={(e) => setMode(e.target.value as Mode)}>
              {MODES.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Results (at most)">
            <input type="number" min={1} max={50} className="top-k" value={topK} onChange={(e) => setTopK(e.target.value)} />
          </Field>
          <label className="check">
            <input type="checkbox" checked={section} onChange={(e) => setSection(e.target.checked)} /> Whole section
            <span className="muted"> (each hit's text is all of its section)</span>
          </label>
        </div>
        <div className="row filters">
          <Field label="Only these documents">
            <input
              className="code"
              value={typed.documents}
              spellCheck={false}
              placeholder="guide.md, faq.md"
              aria-describedby="search-documents-hint"
              onChange={set("documents")}
            />
          </Field>
          <Field label="Only under the heading">
            <input
              value={typed.heading}
              placeholder="Handbook > Backups"
              aria-describedby="search-heading-hint"
              onChange={set("heading")}
            />
          </Field>
          <Field label="Only documents whose metadata has">
            <textarea
              className="code metadata"
              rows={2}
              spellCheck={false}
              value={typed.metadata}
              placeholder="team=support"
              aria-describedby="search-metadata-hint"
              aria-invalid={typed.metadata.trim() !== "" && "problem" in checked}
              onChange={set("metadata")}
            />
          </Field>
          <Field label="Minimum score">
            <input
              className="min-score"
              inputMode="decimal"
              value={typed.minScore}
              placeholder="none"
              aria-describedby="search-score-hint"
              onChange={set("minScore")}
            />
          </Field>
          <button type="submit" disabled={busy}>
            {busy ? "Searching…" : "Search"}
          </button>
        </div>
        <p className="hint">
          Filters, all optional:{" "}
          <span id="search-documents-hint">document names, separated by commas;</span>{" "}
          <span id="search-heading-hint">
            a heading path, its headings separated by <code>&gt;</code> (the chunks under it);
          </span>{" "}
          <span id="search-metadata-hint">
            metadata as when adding documents, one <code>key=value</code> a line or a JSON object (every value must
            match);
          </span>{" "}
          <span id="search-score-hint">
            a minimum score: hits scoring less are left out (the Score column shows what they score: in hybrid mode
            the fused rank score, a small number; in dense mode the cosine similarity, up to 1; in keyword mode BM25).
          </span>
        </p>
        {"problem" in checked ? <p className="warning">{checked.problem}</p> : null}
        <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      </form>
      {found ? <Results kb={kb} found={found.result} narrowed={found.narrowed} /> : null}
    </div>
  );
}

function Results({ kb, found, narrowed }: { kb: string; found: Found; narrowed: string }) {
  const count = found.hits.length;
  return (
    <>
      <p className="search-summary" role="status">
        {count === 0 ? "No passage matches" : `${count} ${count === 1 ? "hit" : "hits"} for`} “{found.query}”
        {` (${found.mode}${narrowed ? `; only ${narrowed}` : ""}) · `}
        <a href={href("runs", found.run_id)} title="The run that made this search">
          the search's run <code>{found.run_id.slice(0, 8)}</code>
        </a>
      </p>
      {count > 0 ? (
        <table className="list hits" aria-label="Search results">
          <Head labels={["Rank", "Score", "Rankings", "Document", "Heading", "Text"]} />
          <tbody>
            {found.hits.map((hit, index) => (
              <tr key={`${hit.chunk_id}:${index}`} data-chunk={hit.chunk_id}>
                <td className="rank">{index + 1}</td>
                <td className="score">{score(hit.score)}</td>
                <td className="ranks">{ranks(hit)}</td>
                <td>
                  <a href={chunksHref(kb, hit.document)}>{hit.document}</a>
                </td>
                <td className="heading">
                  {hit.heading_path.length ? headings(hit.heading_path) : <span className="muted">none</span>}
                </td>
                <td className="text">{hit.text}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  );
}
