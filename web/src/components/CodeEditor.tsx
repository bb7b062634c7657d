import type { CompletionSource } from "@codemirror/autocomplete";
import type { LintSource } from "@codemirror/lint";
import { lazy, Suspense } from "react";

export type CodeLanguage = "yaml" | "json" | "javascript" | "text";

export interface CodeEditorProps {
  value: string;
  onChange?: (text: string) => void;
  language: CodeLanguage;
  label: string;
  readOnly?: boolean;
  /** Completions offered while typing (e.g. template paths). */
  complete?: CompletionSource;
  /** Problems marked in the text as it is typed (underlined, listed on hover and in the gutter). */
  lint?: LintSource;
}

const Editor = lazy(() => import("./CodeMirrorEditor"));

/** A code editor (CodeMirror 6). CodeMirror is most of the page's script, and a canvas or a run
 * opens without an editor in view, so it is fetched when the first editor is shown; until then
 * the text is shown as it is (unlabelled: it is not yet the editor the label names). */
export function CodeEditor(props: CodeEditorProps) {
  return (
    <Suspense
      fallback={
        <pre className="code" aria-busy="true">
          {props.value}
        </pre>
      }
    >
      <Editor {...props} />
    </Suspense>
  );
}
