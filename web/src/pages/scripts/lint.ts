// What is wrong with a prompt script, marked in the editor as it is typed, before any preview:
// what does not parse as JavaScript, and a script without the `main()` the sandbox calls. The
// sandbox checks again when the script runs; this only says it sooner, where it is.
import { syntaxTree } from "@codemirror/language";
import type { Diagnostic, LintSource } from "@codemirror/lint";

const MAIN = /\b(?:export\s+)?async\s+function\s+main\s*\(/;

export const scriptLint: LintSource = (view) => {
  const found: Diagnostic[] = [];
  syntaxTree(view.state).iterate({
    enter: (node) => {
      if (!node.type.isError || found.length >= 20) return;
      const line = view.state.doc.lineAt(node.from);
      const from = node.from === node.to && node.from > line.from ? node.from - 1 : node.from;
      found.push({
        from,
        to: Math.max(node.to, Math.min(from + 1, view.state.doc.length)),
        severity: "error",
        source: "syntax",
        message: `not valid JavaScript here (line ${line.number}): check the brackets, quotes and commas before it`,
      });
    },
  });
  const text = view.state.doc.toString();
  if (text.trim() && !MAIN.test(text)) {
    found.push({
      from: 0,
      to: Math.min(text.length, view.state.doc.line(1).to || 1),
      severity: "warning",
      source: "main",
      message: "a prompt script defines async function main(), which returns the prompt",
    });
  }
  return found;
};
