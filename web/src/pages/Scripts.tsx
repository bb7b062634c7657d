import type { Completion } from "@codemirror/autocomplete";
import { useEffect, useMemo, useRef, useState } from "react";
import { get, q, type Schemas } from "../api/client";
import { CodeEditor } from "../components/CodeEditor";
import { ErrorView } from "../components/ErrorView";
import { useApi } from "../components/useApi";
import { go, replaceWith } from "../router";
import { lastOpened, type Layout, readExpert, readLayout, rememberOpened, writeExpert, writeLayout } from "./scripts/layout";
import { scriptLint } from "./scripts/lint";
import { RuntimePanel } from "./scripts/RuntimePanel";
import { olderTarget } from "./scripts/targets";
import { readablePaths, scriptCompletion } from "./scripts/completion";
import { GeneratePane } from "./scripts/GeneratePane";
import { DEFAULT_INPUT, parseInput, scriptBody, SKELETON, type Target, type Template } from "./scripts/model";
import { PreviewPane } from "./scripts/PreviewPane";
import { SaveBar } from "./scripts/SaveBar";
import { TargetFields, useRunDetail } from "./scripts/TargetFields";
import { SourceBadge, TemplateList } from "./scripts/TemplateList";

const TARGET_KEY = "plait.scripts.target";

/** What the script was last previewed against, kept while the tab lives (choosing another
 * template opens the page anew). */
function storedTarget(): Target {
  try {
    const kept = JSON.parse(sessionStorage.getItem(TARGET_KEY) ?? "null") as Target | null;
    if (kept && typeof kept.inputText === "string") return kept;
  } catch {
    // not ours: start afresh
  }
  return { inputText: DEFAULT_INPUT, runId: "", nodeId: "" };
}

/** Set by "New": the editor then opens without a template once, instead of reopening the last. */
let newChosen = false;

/** The prompt-script editor: the stored templates, the script in CodeMirror (host APIs and
 * getVar paths completed, problems marked as typed), its preview and a generation with a model
 * (side by side or one above the other, as last chosen for the category), and saving it. The
 * last template opened in this browser is reopened; expert mode shows the runtime's details. */
export function ScriptsPage({ templateId }: { templateId: string | null }) {
  const list = useApi(() => get<Template[]>("/api/templates"), []);
  const [lastUsed, setLastUsed] = useState<Record<string, string | null>>({});
  const [template, setTemplate] = useState<Template | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [code, setCode] = useState(templateId ? "" : SKELETON);
  const [target, setTarget] = useState<Target>(storedTarget);
  const { run, problem: runProblem } = useRunDetail(target.runId);
  const runGraph = useApi(
    () => (run ? get<Schemas["GraphOut"]>(`/api/graphs/${q(run.graph_id)}?version=${run.graph_version}`) : Promise.resolve(null)),
    [run?.graph_id, run?.graph_version],
  );

  useEffect(() => sessionStorage.setItem(TARGET_KEY, JSON.stringify(target)), [target]);

  const category = template?.category ?? "new";
  const [layout, setLayout] = useState<Layout>(() => readLayout(category));
  useEffect(() => setLayout(readLayout(category)), [category]);
  const arrange = (next: Partial<Layout>) => {
    const made = { ...layout, ...next };
    setLayout(made);
    writeLayout(category, made);
  };
  const [expert, setExpert] = useState(readExpert);

  useEffect(() => {
    if (templateId) {
      rememberOpened(templateId);
      return;
    }
    const last = lastOpened();
    if (!list.data) return;
    if (newChosen) {
      newChosen = false;
      return;
    }
    if (last && list.data.some((t) => t.id === last)) replaceWith("scripts", last);
  }, [templateId, list.data]);

  useEffect(() => {
    if (!templateId) return;
    get<Template>(`/api/templates/${q(templateId)}`).then((found) => {
      setTemplate(found);
      setCode(found.script_code ?? "");
    }, setLoadError);
  }, [templateId]);

  useEffect(() => {
    const categories = [...new Set((list.data ?? []).map((t) => t.category))];
    Promise.all(
      categories.map((c) => get<Schemas["LastUsedOut"]>(`/api/templates/last-used?category=${q(c)}`)),
    ).then(
      (answers) => setLastUsed(Object.fromEntries(answers.map((a) => [a.category, a.template_id ?? null]))),
      () => setLastUsed({}),
    );
  }, [list.data]);

  // The completion source is made once (the editor keeps it); it reads the paths of now.
  const paths = useRef<Completion[]>([]);
  const parsed = parseInput(target.inputText);
  paths.current = readablePaths("input" in parsed ? parsed.input : {}, run);
  const complete = useMemo(() => scriptCompletion(() => paths.current), []);

  const body = () => scriptBody(code, template, target);

  function startNew() {
    if (templateId) {
      newChosen = true;
      go("scripts");
      return;
    }
    setTemplate(null);
    setCode(SKELETON);
  }

  const older = olderTarget(template?.schema_target ?? null, runGraph.data);
  return (
    <div className={`scripts columns-${layout.columns}`}>
      <aside className="scripts-list">
        <ErrorView error={list.error} />
        <TemplateList templates={list.data ?? []} selected={templateId} lastUsed={lastUsed} onNew={startNew} />
      </aside>
      <section className="scripts-editor" aria-label="Script">
        <ErrorView error={loadError} />
        <header className="script-head" data-testid="script-head">
          {template ? (
            <>
              <h2>
                {template.name} <code>{template.id}</code> <SourceBadge template={template} />
              </h2>
              <p className="muted">
                category {template.category}
                {template.based_on_template_id ? ` · based on ${template.based_on_template_id}` : ""}
                {template.schema_target ? ` · schema target ${template.schema_target}` : ""}
              </p>
              {template.description ? <p>{template.description}</p> : null}
              {older ? (
                <p className="warning" role="note" data-testid="older-schema">
                  This template was written for schema <code>{older.id}</code> {older.wanted}; the graph of the run
                  it is tried on has {older.id} {older.now}. Check the fields the script asks for (editing and
                  generating still work).
                </p>
              ) : null}
              {template.source_type === "system" ? (
                <p className="muted">Read-only: edit and preview freely, then save the edit as your own template.</p>
              ) : null}
            </>
          ) : templateId && !loadError ? (
            <p aria-busy="true">Loading {templateId}…</p>
          ) : !templateId ? (
            <h2>New script</h2>
          ) : null}
        </header>
        {!templateId || template ? (
          <>
            <div className="row script-tools" role="toolbar" aria-label="Editor layout">
              <span role="radiogroup" aria-label="Layout" className="group">
                {([1, 2] as const).map((columns) => (
                  <button
                    key={columns}
                    type="button"
                    role="radio"
                    aria-checked={layout.columns === columns}
                    onClick={() => arrange({ columns })}
                  >
                    {columns === 1 ? "One column" : "Two columns"}
                  </button>
                ))}
              </span>
              <label>
                <input
                  type="checkbox"
                  checked={expert}
                  onChange={(e) => {
                    setExpert(e.target.checked);
                    writeExpert(e.target.checked);
                  }}
                />{" "}
                Expert mode
              </label>
            </div>
            <CodeEditor
              value={code}
              onChange={setCode}
              language="javascript"
              label="Prompt script"
              complete={complete}
              lint={scriptLint}
            />
            <SaveBar
              template={template}
              code={code}
              onSaved={(saved) => {
                list.reload();
                if (saved.id === templateId) setTemplate(saved);
                else go("scripts", saved.id);
              }}
              onDeleted={() => {
                list.reload();
                go("scripts");
              }}
            />
          </>
        ) : null}
      </section>
      <section className="scripts-run" aria-label="Run the script">
        <TargetFields target={target} onChange={setTarget} run={run} runProblem={runProblem} />
        <div role="tablist" className="tabs" aria-label="Panes">
          {(["preview", "generate"] as const).map((pane) => (
            <button key={pane} type="button" role="tab" aria-selected={layout.pane === pane} onClick={() => arrange({ pane })}>
              {pane === "preview" ? "Preview" : "Generate"}
            </button>
          ))}
        </div>
        {/* both stay mounted: switching panes keeps a running preview, its console and an answer */}
        <div hidden={layout.pane !== "preview"}>
          <PreviewPane body={body} />
        </div>
        <div hidden={layout.pane !== "generate"}>
          <GeneratePane body={body} schemaTarget={template?.schema_target ?? null} />
        </div>
        {expert ? <RuntimePanel body={body} /> : null}
      </section>
    </div>
  );
}
