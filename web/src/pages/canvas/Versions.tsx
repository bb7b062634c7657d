import { diffLines } from "diff";
import { useEffect, useState } from "react";
import { stringify } from "yaml";
import { get, post, q, type Schemas } from "../../api/client";
import { ErrorView } from "../../components/ErrorView";
import { useApi, when } from "../../components/useApi";
import { compact } from "../../graph/edit";
import type { GraphDoc } from "../../graph/model";
import { go, replaceQuery } from "../../router";
import { Head, Notice } from "../../components/bits";
import { EvaluateDialog } from "./Evaluate";
import { Promotions } from "./Promotions";

/** A graph's versions with a diff between any two, which one runs by default and how it came to,
 * and evaluating a version against the people's corrections; for a fork, the three-way comparison
 * with its parent, merging chosen parent changes and re-forking; for any graph, forking it.
 * `evaluate` (`?evaluate=N` in the address) opens the evaluation of version N. */
export function Versions({
  graph,
  onChanged,
  evaluate = null,
}: {
  graph: Schemas["GraphOut"];
  onChanged: () => void;
  evaluate?: number | null;
}) {
  const versions = useApi(() => get<Schemas["VersionOut"][]>(`/api/graphs/${q(graph.id)}/versions`), [graph.id, graph.latest_version]);
  const list = versions.data ?? [];
  const [a, setA] = useState<number | null>(null);
  const [b, setB] = useState<number | null>(null);
  const [evaluating, setEvaluating] = useState<number | null>(evaluate);
  const older = a ?? Math.max(1, graph.latest_version - 1);
  const newer = b ?? graph.latest_version;
  const byDefault = graph.promoted_version ?? graph.latest_version;
  return (
    <div className="fields versions" data-testid="versions">
      <ErrorView error={versions.error} />
      <ol reversed aria-label="Version history">
        {[...list].reverse().map((v) => (
          <li key={v.version} data-version={v.version}>
            <a href={`#/graphs/${encodeURIComponent(graph.id)}?version=${v.version}`}>v{v.version}</a> · schema {v.schema_version} ·{" "}
            {when(v.created_at)} · {v.runs} runs
            {v.version === byDefault ? (
              <span
                className="badge promoted"
                title={graph.promoted_version ? "The promoted version: runs that name no version use it" : "Never promoted: the latest version runs"}
              >
                runs by default
              </span>
            ) : null}
            <div>
              <button type="button" className="link" onClick={() => setEvaluating(v.version)}>
                Evaluate v{v.version} against corrections…
              </button>
            </div>
          </li>
        ))}
      </ol>
      {evaluating !== null ? (
        <EvaluateDialog
          graph={graph}
          version={evaluating}
          versions={list.map((v) => v.version)}
          onClose={() => {
            setEvaluating(null);
            if (evaluate !== null) replaceQuery("evaluate", null);
          }}
        />
      ) : null}
      <Promotions graph={graph} />
      {list.length > 1 ? (
        <>
          <div className="row">
            Diff{" "}
            <select aria-label="Older version" value={older} onChange={(e) => setA(Number(e.target.value))}>
              {list.map((v) => (
                <option key={v.version} value={v.version}>
                  v{v.version}
                </option>
              ))}
            </select>
            →
            <select aria-label="Newer version" value={newer} onChange={(e) => setB(Number(e.target.value))}>
              {list.map((v) => (
                <option key={v.version} value={v.version}>
                  v{v.version}
                </option>
              ))}
            </select>
          </div>
          <VersionDiff graphId={graph.id} a={older} b={newer} />
        </>
      ) : null}
      {graph.parent_id ? <ForkPanel graph={graph} onChanged={onChanged} /> : null}
      <ForkButton graph={graph} />
    </div>
  );
}

function VersionDiff({ graphId, a, b }: { graphId: string; a: number; b: number }) {
  const [parts, setParts] = useState<{ value: string; added?: boolean; removed?: boolean }[] | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    const text = (g: Schemas["GraphOut"]) => stringify(withoutStamps(compact(g.graph as GraphDoc)), { lineWidth: 0 });
    Promise.all([a, b].map((v) => get<Schemas["GraphOut"]>(`/api/graphs/${q(graphId)}?version=${v}`))).then(
      ([older, newer]) => live && setParts(diffLines(text(older), text(newer))),
      (cause) => live && setProblem(cause),
    );
    return () => {
      live = false;
    };
  }, [graphId, a, b]);
  if (problem) return <ErrorView error={problem} />;
  if (!parts) return <p aria-busy="true">Comparing…</p>;
  const changed = parts.filter((p) => p.added || p.removed);
  return (
    <pre className="line-diff" data-testid="version-diff" aria-label={`Diff of v${a} and v${b}`}>
      {changed.length === 0
        ? "The two versions are the same."
        : parts.map((p, i) =>
            p.added || p.removed ? (
              <span key={i} className={p.added ? "added" : "removed"}>
                {p.value
                  .replace(/\n$/, "")
                  .split("\n")
                  .map((line) => `${p.added ? "+" : "-"} ${line}\n`)
                  .join("")}
              </span>
            ) : (
              <span key={i} className="same">
                {context(p.value)}
              </span>
            ),
          )}
    </pre>
  );
}

/** The graph without what the store stamps on every version (its numbers and times): two
 * versions differ by what a person changed, not by when each was saved. */
function withoutStamps(graph: GraphDoc): GraphDoc {
  const { version: _v, schema_version: _s, created_at: _c, updated_at: _u, ...rest } = graph;
  return rest as GraphDoc;
}

/** A value as the three-way table shows it: JSON, cut past 200 characters. */
function shown(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : JSON.stringify(value ?? null);
  return text.length > 200 ? `${text.slice(0, 197)}…` : text;
}

/** One field of the three-way table: its name and, side by side, what it was at the fork, what
 * the parent has now and what the fork has (an object field: each path that differs). */
function FieldValues({ field }: { field: Schemas["ForkFieldOut"] }) {
  const rows = field.changes?.length
    ? field.changes.map((c) => ({ path: String(c.path), sides: c as Record<string, unknown> }))
    : [{ path: "", sides: { base: field.base, parent: field.parent, fork: field.fork } as Record<string, unknown> }];
  return (
    <div className={field.conflict ? "conflict field-values" : "field-values"} data-field={field.name}>
      <code>{field.name}</code>
      {field.conflict ? " (conflict)" : ""}
      <ul>
        {rows.map((row) => (
          <li key={row.path}>
            {row.path ? <code>{row.path}</code> : null} at fork{" "}
            <code>{"base" in row.sides ? shown(row.sides.base) : "(absent)"}</code> · parent{" "}
            <code>{"parent" in row.sides ? shown(row.sides.parent) : "(absent)"}</code> · fork{" "}
            <code>{"fork" in row.sides ? shown(row.sides.fork) : "(absent)"}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Unchanged lines between two changes, shortened to the two lines on each side. */
function context(value: string): string {
  const lines = value.replace(/\n$/, "").split("\n");
  if (lines.length <= 5) return lines.map((l) => `  ${l}\n`).join("");
  return [...lines.slice(0, 2), "…", ...lines.slice(-2)].map((l) => `  ${l}\n`).join("");
}

function ForkPanel({ graph, onChanged }: { graph: Schemas["GraphOut"]; onChanged: () => void }) {
  const diff = useApi(() => get<Schemas["ForkDiffOut"]>(`/api/graphs/${q(graph.id)}/diff?against=parent`), [graph.id, graph.version]);
  const [picked, setPicked] = useState<string[]>([]);
  const [problem, setProblem] = useState<unknown>(null);
  const [said, setSaid] = useState<string | null>(null);

  async function merge(body: unknown, what: string) {
    setProblem(null);
    try {
      const saved = await post<Schemas["SavedOut"]>(`/api/graphs/${q(graph.id)}/merge`, body);
      setSaid(`${what}: stored fork version ${saved.version}.`);
      setPicked([]);
      onChanged();
    } catch (cause) {
      setProblem(cause);
    }
  }

  const items = (diff.data?.items ?? []).filter((i) => i.parent !== "same" || i.fork !== "same");
  const token = (i: Schemas["ForkItemOut"]) => i.key; // what `from_parent` takes: a node id, or schema:ID ...
  return (
    <section aria-label="Fork" data-testid="fork-panel">
      <h3>Fork of its parent</h3>
      <ErrorView error={diff.error ?? problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <Notice>{said}</Notice>
      {diff.data ? (
        <p>
          Forked from parent version {diff.data.parent_at_fork}; the parent is at version {diff.data.parent_now}
          {diff.data.parent_moved ? " (it moved on)" : ""}.
        </p>
      ) : null}
      <table className="list" aria-label="Fork and parent">
        <Head labels={["", "Item", "Parent", "Fork", "Fields"]} />
        <tbody>
          {items.map((item) => (
            <tr key={item.key} data-item={item.key}>
              <td>
                {item.parent !== "same" ? (
                  <input
                    type="checkbox"
                    aria-label={`Merge ${item.key}`}
                    checked={picked.includes(token(item))}
                    onChange={(e) =>
                      setPicked(e.target.checked ? [...picked, token(item)] : picked.filter((p) => p !== token(item)))
                    }
                  />
                ) : null}
              </td>
              <td>
                {item.kind} <code>{item.id}</code>
              </td>
              <td>{item.parent}</td>
              <td>{item.fork}</td>
              <td>
                {item.fields.map((f) => (
                  <FieldValues key={f.name} field={f} />
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {diff.data && items.length === 0 ? <p className="muted">The fork and its parent have the same content.</p> : null}
      <div className="row">
        <button type="button" disabled={picked.length === 0} onClick={() => void merge({ from_parent: picked }, "Merged")}>
          Merge chosen parent changes
        </button>
        <button
          type="button"
          className="danger"
          onClick={() =>
            window.confirm("Replace the fork by the parent's latest version? The fork's own changes are lost.") &&
            void merge({ refork: true, confirm: true }, "Re-forked")
          }
        >
          Re-fork from the parent
        </button>
      </div>
    </section>
  );
}

function ForkButton({ graph }: { graph: Schemas["GraphOut"] }) {
  const [name, setName] = useState("");
  const [problem, setProblem] = useState<unknown>(null);
  return (
    <form
      className="row"
      aria-label="Fork this graph"
      onSubmit={(e) => {
        e.preventDefault();
        setProblem(null);
        post<Schemas["SavedOut"]>(`/api/graphs/${q(graph.id)}/fork`, name.trim() ? { name: name.trim() } : {}).then(
          (saved) => go("graphs", saved.id),
          setProblem,
        );
      }}
    >
      <input aria-label="Fork id" placeholder={`${graph.slug.replace(/\./g, "_")}_fork`} value={name} onChange={(e) => setName(e.target.value)} />
      <button type="submit">Fork this graph</button>
      <ErrorView error={problem} />
    </form>
  );
}
