import { useState } from "react";
import { post, type Schemas } from "../../api/client";
import { Field, Head } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { href } from "../../router";
import { chunksHref } from "./Documents";
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

/** Search the knowledge base as a RETRIEVE node with these settings would; the hits with their
 * ranks, and the search's run. */
export function Search({ kb }: { kb: string }) {
  const [query, setQuery] = useState("");
  const [mode, setMode] = useState<Mode>("hybrid");
  const [topK, setTopK] = useState("5");
  const [section, setSection] = useState(false);
  const [found, setFound] = useState<Found | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

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
    const body: Schemas["SearchIn"] = { query: text, mode, top_k: k, expand: section ? "section" : "chunk" };
    setBusy(true);
    try {
      setFound(await post<Found>(kbPath(kb, "search"), body));
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
          <button type="submit" disabled={busy}>
            {busy ? "Searching…" : "Search"}
          </button>
        </div>
        <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      </form>
      {found ? <Results kb={kb} found={found} /> : null}
    </div>
  );
}

function Results({ kb, found }: { kb: string; found: Found }) {
  const count = found.hits.length;
  return (
    <>
      <p className="search-summary" role="status">
        {count === 0 ? "No passage matches" : `${count} ${count === 1 ? "hit" : "hits"} for`} “{found.query}”
        {` (${found.mode}) · `}
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
