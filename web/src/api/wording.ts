// The server's hints in the workbench's words. The API speaks to programs ("GET /api/runs
// lists the runs", "?raw=true shows the originals"); a person in the browser acts through pages
// and buttons. A route the workbench has a control for becomes that control; one it has not is
// cut from the sentence rather than shown (a person cannot send it from here).

const ROUTES: [RegExp, string][] = [
  [/POST \/api\/runs\/[^/\s]+\/nodes\/[^/\s]+\/rerun/g, "Rerun on the node's panel"],
  [/POST \/api\/runs\/[^/\s]+\/nodes\/[^/\s]+\/override/g, "Override on the node's panel"],
  [/POST \/api\/runs\/[^/\s]+\/nodes\/[^/\s]+\/review/g, "the review form on the node's panel"],
  [/POST \/api\/runs\/[^/\s]+\/rollback(?: with \{[^}]*\})?/g, "Roll back in the run's Ledger"],
  [/POST \/api\/runs\/[^/\s]+\/resume/g, "Resume on the run's page"],
  [/GET \/api\/runs\/[^/\s]+\/ledger/g, "the run's Ledger"],
  [/GET \/api\/runs\/[^\s/),]+/g, "the run's page"],
  [/GET \/api\/runs\b/g, "the Runs page"],
  [/POST \/api\/graphs\/[^/\s]+\/evaluations(?: with \{[^}]*\})?/g, "Evaluate against corrections on the graph's Versions tab"],
  [/POST \/api\/graphs\/[^/\s]+\/eval-sets/g, "Build set in Evaluate against corrections…"],
  [/GET \/api\/graphs\/[^/\s]+\/eval-sets/g, "the graph's Versions tab (Evaluate against corrections…)"],
  [/send `force: true` with a `note` to promote anyway/g, "use Promote anyway… with a note saying why"],
  [/send a `note` with `force: true`/g, "write a note in Promote anyway…"],
  [/POST \/api\/graphs\/validate/g, "Validate on the canvas"],
  [/POST \/api\/graphs\/import/g, "Import on the Graphs page"],
  [/POST \/api\/graphs\/[^/\s]+\/fork/g, "Fork on the graph's Versions tab"],
  [/GET \/api\/graphs\/[^/\s]+\/versions/g, "the graph's Versions tab"],
  [/GET \/api\/graphs\b(?!\/)/g, "the Graphs page"],
  [/GET \/api\/kb\/[^/\s]+\/documents\b(?!\/)/g, "the base's Documents table"],
  [/GET \/api\/kb\b(?!\/)/g, "the Knowledge page"],
  [/(?:GET|POST) \/api\/settings\/history\S*/g, "the History on the Settings page"],
  [/PUT \/api\/settings\b/g, "Save on the Settings page"],
  [/GET \/api\/settings\b/g, "the Settings page"],
  [/GET \/api\/skills\/[A-Za-z0-9_{}@-]+(?![A-Za-z0-9_{}@/-])/g, "the skill's page (Skills)"],
  [/GET \/api\/skills\b(?!\/)/g, "the Skills page"],
];

const HTTP = /\b(?:GET|POST|PUT|PATCH|DELETE) \/api\/\S*|\?raw=true|\/docs\b/;

/** `hint` as a person in the workbench can act on it; null when nothing of it is left. */
export function forBrowser(hint: string | null | undefined): string | null {
  if (!hint) return null;
  let text = hint;
  for (const [route, words] of ROUTES) text = text.replace(route, words);
  if (!HTTP.test(text)) return text;
  // What still names a route: drop the parenthesis, clause or sentence that holds it.
  const kept = text
    .split(/(?<=[.;])\s+/)
    .map((sentence) =>
      sentence
        .replace(/\s*\([^()]*\)/g, (group) => (HTTP.test(group) ? "" : group))
        .split(/,\s*(?:or\s+)?/)
        .filter((clause) => !HTTP.test(clause))
        .join(", "),
    )
    .filter((sentence) => sentence.trim() !== "" && !HTTP.test(sentence));
  const result = kept.join(" ").trim();
  return result === "" ? null : result;
}
