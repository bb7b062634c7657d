import type { Answer, Schemas } from "../../api/client";

export type Base = Answer<"/api/kb">[number];
export type BaseDetail = Answer<"/api/kb/{kb}">;
export type Doc = BaseDetail["documents"][number];
export type Chunk = Answer<"/api/kb/{kb}/documents/{document}/chunks">[number];
export type Found = Answer<"/api/kb/{kb}/search", "post">;
export type Hit = Found["hits"][number];
export type Ingestion = Schemas["IngestionOut"];
export type Removed = Answer<"/api/kb/{kb}/documents/{document}", "delete">;

/** A document's ingestion has not ended yet: the table is read again until none is. */
export function working(doc: Doc): boolean {
  return doc.status === "queued" || doc.status === "ingesting";
}

/** The API path of a knowledge base (and what follows it). */
export function kbPath(name: string, ...rest: string[]): string {
  return ["/api/kb", name, ...rest].map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join("/");
}

/** A heading path as a person reads it: "Handbook › Backups › Keys". */
export function headings(path: string[]): string {
  return path.join(" › ");
}
