import type { Schemas } from "../../api/client";
import { parseMetadata } from "./metadata";

type Filters = Schemas["RetrieveFilters"];

/** What the search form's filter fields hold, as typed. */
export interface TypedFilters {
  documents: string;
  heading: string;
  metadata: string;
  minScore: string;
}

export const NO_FILTERS: TypedFilters = { documents: "", heading: "", metadata: "", minScore: "" };

/** A heading path as the index keeps it, "Handbook > Backups": `>` or `›` between headings,
 * spaces around them as one likes. */
function headingPath(text: string): string {
  return text
    .split(/[>›]/)
    .map((part) => part.trim())
    .filter(Boolean)
    .join(" > ");
}

/** The filters and minimum score a search is sent with (nothing typed: none), or what is wrong
 * with them, in plain words. Metadata is typed as for an upload (key=value lines or a JSON
 * object) and its values must be text, numbers or true/false, as a document's metadata is. */
export function searchFilters(typed: TypedFilters): { filters: Filters | null; minScore: number | null } | { problem: string } {
  const filters: Filters = {};
  const documents = typed.documents
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  if (documents.length) filters.documents = documents;
  const heading = headingPath(typed.heading);
  if (heading) filters.heading = heading;
  const metadata = parseMetadata(typed.metadata);
  if ("problem" in metadata) return { problem: metadata.problem.replace("the metadata", "the metadata filter") };
  if (metadata.value) {
    for (const [key, value] of Object.entries(metadata.value)) {
      if (!["string", "number", "boolean"].includes(typeof value)) {
        return { problem: `the metadata filter's value of "${key}" must be text, a number or true/false, not ${JSON.stringify(value)}` };
      }
    }
    filters.metadata = metadata.value as Filters["metadata"];
  }
  let minScore: number | null = null;
  const score = typed.minScore.trim();
  if (score) {
    minScore = Number(score);
    if (!Number.isFinite(minScore)) {
      return { problem: `the minimum score must be a number, e.g. 0.5, not '${typed.minScore.trim()}'` };
    }
  }
  return { filters: Object.keys(filters).length ? filters : null, minScore };
}
