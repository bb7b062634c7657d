import { useEffect, useState } from "react";
import { stringify } from "yaml";
import { ApiError, get, post, put, q, type Schemas } from "../../api/client";
import { ErrorView } from "../../components/ErrorView";
import type { GraphDoc } from "../../graph/model";
import { compact } from "../../graph/edit";
import { useEscape } from "../../components/useEscape";

type Preview = Schemas["SavePreviewOut"];

/** Saving: first what the save would store (the classification), then the save itself, based
 * on the version the edit started from. A 409 (someone saved in between) opens a three-way view
 * instead of overwriting their version. */
export function SaveDialog({
  graphId,
  base,
  draft,
  onSaved,
  onTakeTheirs,
  onClose,
}: {
  graphId: string;
  base: Schemas["GraphOut"];
  draft: GraphDoc;
  onSaved: (saved: Schemas["SavedOut"]) => void;
  onTakeTheirs: (latest: Schemas["GraphOut"]) => void;
  onClose: () => void;
}) {
  const [preview, setPreview] = useState<Preview | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [conflict, setConflict] = useState<Schemas["GraphOut"] | null>(null);
  const [basedOn, setBasedOn] = useState(base.version);
  const fresh = base.version === 0; // never stored: saving creates it

  useEffect(() => {
    const previewed = fresh ? firstVersion(draft) : post<Preview>(`/api/graphs/${q(graphId)}/preview`, { graph: draft });
    previewed.then(setPreview, setProblem);
  }, [graphId, draft, fresh]);

  async function save(on: number) {
    setProblem(null);
    try {
      onSaved(
        fresh
          ? await post<Schemas["SavedOut"]>("/api/graphs", { graph: draft })
          : await put<Schemas["SavedOut"]>(`/api/graphs/${q(graphId)}`, { graph: draft, base_version: on }),
      );
    } catch (cause) {
      if (cause instanceof ApiError && cause.code === "version_conflict") {
        setConflict(await get<Schemas["GraphOut"]>(`/api/graphs/${q(graphId)}`));
      } else {
        setProblem(cause);
      }
    }
  }

  // Esc, a click beside the dialog and its Close button all leave it: a graph the server refuses
  // to preview (an invalid one) must not trap the person in the dialog.
  useEscape(onClose);

  return (
    <>
    <div className="backdrop" data-testid="dialog-backdrop" onClick={onClose} />
    <div className="dialog" role="dialog" aria-label="Save" aria-modal="true">
      <button type="button" className="close" aria-label="Close" onClick={onClose}>
        ✕
      </button>
      <h2>Save {base.slug}</h2>
      <ErrorView error={problem} />
      {problem ? <p className="muted">Nothing was stored. Your edits stay kept as a draft: fix what is listed, then save again.</p> : null}
      {!preview && !problem ? <p aria-busy="true">Classifying the changes…</p> : null}
      {preview && !conflict ? (
        <div data-testid="save-preview">
          {preview.unchanged ? (
            <p>Nothing changed since version {preview.latest_version}.</p>
          ) : (
            <p>
              Stores version <strong>{preview.version}</strong> (schema version {preview.schema_version}
              {preview.level ? (
                <>
                  , a <strong className={`level-${preview.level}`}>{preview.level}</strong> change
                </>
              ) : null}
              ).
            </p>
          )}
          {preview.schema_changes.length ? (
            <ul aria-label="Schema changes">
              {preview.schema_changes.map((c) => (
                <li key={c.schema_id}>
                  <code>{c.schema_id}</code> {c.status}: <strong>{c.level}</strong> {c.from_version ?? "–"} → {c.to_version ?? "–"}
                  <ul>
                    {c.findings.map((f) => (
                      <li key={f}>{f}</li>
                    ))}
                  </ul>
                </li>
              ))}
            </ul>
          ) : null}
          {preview.warnings.map((w) => (
            <p key={w} className="warning">
              {w}
            </p>
          ))}
          <div className="row">
            <button type="button" disabled={preview.unchanged} onClick={() => void save(basedOn)}>
              Store version {preview.version}
            </button>
            <button type="button" onClick={onClose}>
              Cancel
            </button>
          </div>
        </div>
      ) : null}
      {conflict ? (
        <ThreeWay
          base={base}
          theirs={conflict}
          mine={draft}
          onKeepMine={() => {
            setBasedOn(conflict.version);
            setConflict(null);
            void save(conflict.version);
          }}
          onTakeTheirs={() => onTakeTheirs(conflict)}
          onCancel={onClose}
        />
      ) : null}
    </div>
    </>
  );
}

/** What storing a graph never stored would do: version 1 when it is valid; else the server's
 * refusal, listing every problem, as saving would answer. */
async function firstVersion(draft: GraphDoc): Promise<Preview> {
  const checked = await post<{ valid: boolean; errors: unknown[]; warnings: { message: string }[] }>("/api/graphs/validate", {
    graph: draft,
  });
  if (!checked.valid) {
    const count = checked.errors.length;
    throw new ApiError(422, "graph_invalid", `the graph has ${count} problem${count === 1 ? "" : "s"}`, "Validate lists them on the canvas", checked.errors);
  }
  return {
    unchanged: false,
    version: 1,
    latest_version: null,
    schema_version: "1.0.0",
    level: null,
    schema_changes: [],
    warnings: checked.warnings.map((w) => w.message),
  };
}

/** The version the edit started from, the version someone saved since, and the edit, side by
 * side; lines that differ from the base are marked. */
function ThreeWay(props: {
  base: Schemas["GraphOut"];
  theirs: Schemas["GraphOut"];
  mine: GraphDoc;
  onKeepMine: () => void;
  onTakeTheirs: () => void;
  onCancel: () => void;
}) {
  const text = (graph: unknown) => stringify(compact(graph as GraphDoc), { lineWidth: 0 });
  const base = text(props.base.graph);
  const columns: [string, string][] = [
    [`Base: version ${props.base.version} (where your edit started)`, base],
    [`Theirs: version ${props.theirs.version} (saved since)`, text(props.theirs.graph)],
    ["Mine: your edit", text(props.mine)],
  ];
  const baseLines = new Set(base.split("\n"));
  return (
    <div className="three-way" data-testid="three-way">
      <p className="warning" role="alert">
        Someone saved version {props.theirs.version} after you started from version {props.base.version}. Nothing was
        stored. Compare, then keep yours (stored as version {props.theirs.version + 1}) or take theirs.
      </p>
      <div className="columns">
        {columns.map(([title, body]) => (
          <section key={title} aria-label={title}>
            <h3>{title}</h3>
            <pre>
              {body.split("\n").map((line, i) => (
                <span key={i} className={baseLines.has(line) ? undefined : "changed-line"}>
                  {line + "\n"}
                </span>
              ))}
            </pre>
          </section>
        ))}
      </div>
      <div className="row">
        <button type="button" onClick={props.onKeepMine}>
          Keep mine over version {props.theirs.version}
        </button>
        <button type="button" onClick={props.onTakeTheirs}>
          Take theirs (discard my edit)
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
