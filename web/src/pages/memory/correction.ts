import type { Schemas } from "../../api/client";
import type { Fact } from "./types";

/** The server's bound on a fact's parts and on a note. */
export const MAX_CHARS = 2000;

export type Typed = { subject: string; predicate: string; object: string; text: string; note: string };

const PARTS = [
  ["subject", "subject"],
  ["predicate", "predicate"],
  ["object", "object"],
  ["text", "sentence"],
] as const;

/** The form as first shown: the fact as it stands, no note. */
export function typedOf(fact: Fact): Typed {
  return { subject: fact.subject, predicate: fact.predicate, object: fact.object, text: fact.text, note: "" };
}

/** The correction to send: only the parts that changed (an unchanged sentence is left out, so
 * the server writes it again from the parts), or what is wrong with the form, in plain words. */
export function correction(fact: Fact, typed: Typed): { value: Schemas["CorrectIn"] } | { problem: string } {
  const value: Schemas["CorrectIn"] = {};
  for (const [key, word] of PARTS) {
    const now = typed[key].trim();
    if (!now) return { problem: `the ${word} cannot be empty: type what it should say, or put back “${fact[key]}”` };
    if (now.length > MAX_CHARS) return { problem: `the ${word} is ${now.length} characters long: at most ${MAX_CHARS}` };
    if (now !== fact[key]) value[key] = now;
  }
  if (Object.keys(value).length === 0) {
    return { problem: "nothing to correct: change the subject, predicate, object or sentence first" };
  }
  const note = typed.note.trim();
  if (note.length > MAX_CHARS) return { problem: `the note is ${note.length} characters long: at most ${MAX_CHARS}` };
  if (note) value.note = note;
  return { value };
}
