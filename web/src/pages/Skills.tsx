import { useState } from "react";
import { stringify } from "yaml";
import { download, get } from "../api/client";
import { Field, Head, Notice } from "../components/bits";
import { CodeEditor } from "../components/CodeEditor";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { GraphView } from "../graph/GraphView";
import { href } from "../router";
import { graphOf, listSkills, type Parameter, parametersOf, type SkillDetail, skillHref, skillPath } from "./skills/types";

/** The stored skills (`#/skills`): graphs with declared parameters that a SKILL node runs as one
 * step; filtered by tag, category and text as the server filters them. */
export function SkillsPage() {
  const [tag, setTag] = useState("");
  const [category, setCategory] = useState("");
  const [text, setText] = useState("");
  const all = useApi(() => listSkills(), []);
  const shown = useApi(() => listSkills({ tag, category, q: text }), [tag, category, text]);
  const tags = [...new Set((all.data ?? []).flatMap((s) => s.tags))].sort();
  const categories = [...new Set((all.data ?? []).map((s) => s.category).filter((c): c is string => Boolean(c)))].sort();
  return (
    <section className="skills">
      <div className="toolbar">
        <h1>Skills</h1>
        <button
          type="button"
          onClick={() => {
            all.reload();
            shown.reload();
          }}
        >
          Refresh
        </button>
        <span className="muted">
          Graphs with parameters that other graphs use as one step: drag one from the canvas's palette, or name it in a
          SKILL node as <code>name@version</code>.
        </span>
      </div>
      <div className="row filters" role="search" aria-label="Filter the skills">
        <Field label="Text">
          <input value={text} placeholder="name or description" onChange={(e) => setText(e.target.value)} />
        </Field>
        <Field label="Tag">
          <select value={tag} onChange={(e) => setTag(e.target.value)}>
            <option value="">any</option>
            {tags.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </Field>
        <Field label="Category">
          <select value={category} onChange={(e) => setCategory(e.target.value)}>
            <option value="">any</option>
            {categories.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorView error={all.error ?? shown.error} />
      <table className="list" aria-label="Skills">
        <Head labels={["Name", "Version", "Category", "Tags", "Parameters", "Description", "Updated"]} />
        <tbody>
          {(shown.data ?? []).map((s) => (
            <tr key={s.name} data-skill={s.name}>
              <td>
                <a href={skillHref(s.name)}>{s.name}</a>
              </td>
              <td>v{s.version}</td>
              <td>{s.category || <span className="muted">none</span>}</td>
              <td>
                {s.tags.map((t) => (
                  <span key={t} className="badge">
                    {t}
                  </span>
                ))}
              </td>
              <td>{parametersOf(s).map((p) => p.name).join(", ") || <span className="muted">none</span>}</td>
              <td>{s.description || <span className="muted">none</span>}</td>
              <td>{when(s.updated_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {all.data && all.data.length === 0 ? (
        <p className="muted">
          No skill is stored yet: add one with <code>plait skills add FILE.yaml</code> or <code>plait skills import FILE.md</code>.
        </p>
      ) : shown.data && shown.data.length === 0 ? (
        <p className="muted">No skill matches these filters.</p>
      ) : null}
    </section>
  );
}

/** One skill (`#/skills/NAME?version=N`): what it does, its parameters, its graph drawn or as
 * YAML, and its versions, each one viewable and exportable. */
export function SkillPage({ name, version }: { name: string; version: string | null }) {
  const picked = version && /^\d+$/.test(version) ? Number(version) : null;
  const newest = useApi(() => get<SkillDetail>(skillPath(name)), [name]);
  const shown = useApi(
    () => (picked === null ? Promise.resolve(null) : get<SkillDetail>(skillPath(name, "versions", String(picked)))),
    [name, picked],
  );
  const [view, setView] = useState<"graph" | "yaml">("graph");
  const [problem, setProblem] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const skill = picked === null ? newest.data : shown.data;

  async function exportSkill(v: number) {
    setProblem(null);
    try {
      const text = await download(`${skillPath(name, "export")}?version=${v}`);
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([text], { type: "application/yaml" }));
      link.download = `${name}@${v}.yaml`;
      link.click();
      URL.revokeObjectURL(link.href);
      setNotice(`exported ${name}@${v}`);
    } catch (cause) {
      setProblem(cause);
    }
  }

  const error = newest.error ?? shown.error;
  if (error) return <ErrorView error={error} />;
  if (!skill || !newest.data) return <p aria-busy="true">Loading…</p>;
  return (
    <section className="skill-page">
      <div className="toolbar">
        <h1>
          Skill <code>{skill.name}</code>
        </h1>
        <span className="badge" data-testid="skill-version">
          v{skill.version}
          {skill.version === newest.data.version ? " (newest)" : ""}
        </span>
        {skill.category ? <span className="badge system">{skill.category}</span> : null}
        {skill.tags.map((t) => (
          <span key={t} className="badge">
            {t}
          </span>
        ))}
        <button type="button" onClick={() => void exportSkill(skill.version)}>
          Export v{skill.version}
        </button>
        <a href={href("skills")}>all skills</a>
      </div>
      <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <Notice>{notice}</Notice>
      <p>{skill.description || <span className="muted">No description.</span>}</p>
      <p className="muted">
        A graph uses it with a SKILL node: <code>skill: {skill.name}@{skill.version}</code> (or <code>{skill.name}</code>{" "}
        for the newest version when the graph is stored), its <code>inputs</code> giving the parameters.
      </p>
      <div className="skill-columns">
        <div>
          <Parameters parameters={parametersOf(skill)} />
          {skill.input_mapping !== null && skill.input_mapping !== undefined && Object.keys(skill.input_mapping as object).length ? (
            <>
              <h2>Input mapping</h2>
              <pre aria-label="Input mapping">{stringify(skill.input_mapping)}</pre>
            </>
          ) : null}
          <h2 id="skill-versions">Versions</h2>
          <table className="list" aria-labelledby="skill-versions">
            <Head labels={["Version", "Stored", "By", "Note", ""]} />
            <tbody>
              {[...newest.data.versions].sort((a, b) => b.version - a.version).map((v) => (
                <tr key={v.version} data-version={v.version} aria-current={v.version === skill.version ? "true" : undefined}>
                  <td>
                    {v.version === skill.version ? (
                      <strong>v{v.version}</strong>
                    ) : (
                      <a href={skillHref(name, v.version === newest.data!.version ? null : v.version)}>v{v.version}</a>
                    )}
                  </td>
                  <td>{when(v.created_at)}</td>
                  <td>{v.created_by ?? ""}</td>
                  <td>{v.note ?? ""}</td>
                  <td>
                    <button type="button" className="link" onClick={() => void exportSkill(v.version)}>
                      export v{v.version}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <div className="skill-graph">
          <div role="tablist" className="tabs" aria-label="The skill's graph">
            {(["graph", "yaml"] as const).map((v) => (
              <button key={v} role="tab" type="button" aria-selected={view === v} onClick={() => setView(v)}>
                {v === "graph" ? "Graph" : "YAML"}
              </button>
            ))}
          </div>
          {view === "graph" ? (
            <div className="skill-canvas">
              <GraphView key={skill.version} graph={graphOf(skill)} />
            </div>
          ) : (
            <CodeEditor language="yaml" value={stringify(skill.graph, { lineWidth: 0 })} readOnly label="Skill graph YAML" />
          )}
        </div>
      </div>
    </section>
  );
}

function Parameters({ parameters }: { parameters: Parameter[] }) {
  return (
    <>
      <h2 id="skill-parameters">Parameters</h2>
      {parameters.length === 0 ? (
        <p className="muted">None: the skill takes no input.</p>
      ) : (
        <table className="list" aria-labelledby="skill-parameters">
          <Head labels={["Name", "Schema", "Default", "Description"]} />
          <tbody>
            {parameters.map((p) => (
              <tr key={p.name} data-parameter={p.name}>
                <td>
                  <code>{p.name}</code>
                </td>
                <td>
                  <code>{JSON.stringify(p.schema)}</code>
                </td>
                <td>
                  {"default" in p && p.default !== undefined ? (
                    <code>{JSON.stringify(p.default)}</code>
                  ) : (
                    <span className="muted">{p.required === false ? "optional" : "required"}</span>
                  )}
                </td>
                <td>{p.description ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
