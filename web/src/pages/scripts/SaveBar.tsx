import { useState } from "react";
import { del, post, put, q } from "../../api/client";
import { Notice } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import type { Template } from "./model";

/** Saving the editor's script: a user template in place (Save); a system template (read-only)
 * or a new script as a template of one's own, under an id asked for here (the system template
 * is recorded as its base). */
export function SaveBar({
  template,
  code,
  onSaved,
  onDeleted,
}: {
  template: Template | null;
  code: string;
  onSaved: (saved: Template) => void;
  onDeleted: (gone: Template) => void;
}) {
  const [asking, setAsking] = useState(false);
  const [problem, setProblem] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const user = template?.source_type === "user";
  const changed = template ? template.script_code !== code : true;

  async function save() {
    setProblem(null);
    try {
      const saved = await put<Template>(`/api/templates/${q(template!.id)}`, { script_code: code });
      setNotice(`saved ${saved.id}`);
      onSaved(saved);
    } catch (cause) {
      setProblem(cause);
    }
  }

  async function remove() {
    if (!template || !window.confirm(`Delete the template ${template.id}? Runs that named it keep reading it.`)) return;
    setProblem(null);
    try {
      onDeleted(await del<Template>(`/api/templates/${q(template.id)}`));
    } catch (cause) {
      setProblem(cause);
    }
  }

  return (
    <div className="save-bar">
      <div className="row">
        {user ? (
          <>
            <button type="button" onClick={() => void save()} disabled={!changed}>
              Save
            </button>
            <button type="button" className="link danger" onClick={() => void remove()}>
              Delete
            </button>
          </>
        ) : (
          <button type="button" onClick={() => setAsking(true)} aria-expanded={asking}>
            {template ? "Save as my template" : "Save as a template"}
          </button>
        )}
        {template && changed ? <span className="badge warn">edited, not saved</span> : null}
      </div>
      {asking ? (
        <NewTemplateForm
          base={template}
          code={code}
          onCancel={() => setAsking(false)}
          onProblem={setProblem}
          onCreated={(created) => {
            setAsking(false);
            setNotice(`saved as ${created.id}`);
            onSaved(created);
          }}
        />
      ) : null}
      <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <Notice>{notice}</Notice>
    </div>
  );
}

function NewTemplateForm({
  base,
  code,
  onCancel,
  onProblem,
  onCreated,
}: {
  base: Template | null;
  code: string;
  onCancel: () => void;
  onProblem: (problem: unknown) => void;
  onCreated: (created: Template) => void;
}) {
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [category, setCategory] = useState(base?.category ?? "general");

  async function create() {
    onProblem(null);
    const body: Record<string, unknown> = { id: id.trim(), script_code: code, category: category.trim() || undefined };
    if (name.trim()) body.name = name.trim();
    if (base) body.from = base.id;
    try {
      onCreated(await post<Template>("/api/templates", body));
    } catch (cause) {
      onProblem(cause);
    }
  }

  return (
    <form
      className="new-template"
      aria-label="Save as a new template"
      onSubmit={(e) => {
        e.preventDefault();
        void create();
      }}
    >
      {base ? (
        <p className="muted">
          A copy of {base.id} with your edits, recorded as based on it; {base.id} stays as it is.
        </p>
      ) : null}
      <label className="field">
        <span className="field-label">New template id</span>
        <input value={id} onChange={(e) => setId(e.target.value)} required autoFocus spellCheck={false} />
      </label>
      <label className="field">
        <span className="field-label">Name (optional)</span>
        <input value={name} onChange={(e) => setName(e.target.value)} placeholder={base?.name ?? id} />
      </label>
      <label className="field">
        <span className="field-label">Category</span>
        <input value={category} onChange={(e) => setCategory(e.target.value)} spellCheck={false} />
      </label>
      <div className="row">
        <button type="submit" disabled={!id.trim()}>
          Save template
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
