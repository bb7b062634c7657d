import { javascript } from "@codemirror/lang-javascript";
import { json } from "@codemirror/lang-json";
import { yaml } from "@codemirror/lang-yaml";
import { autocompletion } from "@codemirror/autocomplete";
import { linter, lintGutter } from "@codemirror/lint";
import { EditorView, basicSetup } from "codemirror";
import { useEffect, useRef } from "react";

import type { CodeEditorProps, CodeLanguage } from "./CodeEditor";
import { readableHighlighting } from "./highlight";

const LANGUAGES = { yaml, json, javascript, text: () => [] } as const satisfies Record<CodeLanguage, unknown>;

/** A CodeMirror 6 editor for YAML, JSON or JavaScript; `value` in, `onChange` out. Loaded on
 * first use (see `CodeEditor`), so pages without an editor open without CodeMirror's code. */
export default function CodeMirrorEditor({
  value,
  onChange,
  language,
  label,
  readOnly = false,
  complete,
  lint,
}: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    view.current = new EditorView({
      parent: host.current!,
      doc: value,
      extensions: [
        basicSetup,
        readableHighlighting,
        LANGUAGES[language](),
        ...(complete ? [autocompletion({ override: [complete] })] : []),
        ...(lint ? [linter(lint, { delay: 300 }), lintGutter()] : []),
        EditorView.editable.of(!readOnly),
        // tabindex: the scroller's one focusable content, as axe sees it when lines overflow
        EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) changed.current?.(update.state.doc.toString());
        }),
      ],
    });
    return () => view.current?.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [language, readOnly]);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) {
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
    }
  }, [value]);

  return <div className="code" ref={host} />;
}
