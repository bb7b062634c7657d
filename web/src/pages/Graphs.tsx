import { useState } from "react";
import { ApiError, del, download, get, post, q, type Schemas } from "../api/client";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { href } from "../router";
import { Head, Notice } from "../components/bits";

type Summary = Schemas["GraphSummaryOut"];

/** The stored graphs: search, badges, import by dropping a file, export and delete. */
export function GraphsPage() {
  const { data, error, reload } = useApi(() => get<Schemas["GraphPage"]>("/api/graphs?limit=500"), []);
  const drafts = useApi(() => get<Schemas["DraftSummaryOut"][]>("/api/drafts"), []);
  const drafted = new Set((drafts.data ?? []).filter((d) => d.latest_version !== null).map((d) => d.slug));
  const building = (drafts.data ?? []).filter((d) => d.latest_version === null);
  const [search, setSearch] = useState("");
  const [problem, setProblem] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const [refused, setRefused] = useState<Summary | null>(null);

  const shown = (data?.items ?? []).filter((g) =>
    `${g.name} ${g.slug} ${g.id}`.toLowerCase().includes(search.trim().toLowerCase()),
  );

  async function importFile(file: File) {
    setProblem(null);
    try {
      const text = await file.text();
      const format = file.name.endsWith(".json") ? "json" : "yaml";
      const saved = await post<Schemas["SavedOut"]>("/api/graphs/import", { source: text, format });
      setNotice(
        saved.created
          ? `stored ${saved.slug} version ${saved.version}`
          : `${saved.slug} is unchanged (version ${saved.version})`,
      );
      reload();
    } catch (cause) {
      setProblem(cause);
    }
  }

  async function exportGraph(graph: Summary) {
    setProblem(null);
    try {
      const text = await download(`/api/graphs/${q(graph.id)}/export?format=yaml`);
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([text], { type: "application/yaml" }));
      link.download = `${graph.slug}.yaml`;
      link.click();
      URL.revokeObjectURL(link.href);
    } catch (cause) {
      setProblem(cause);
    }
  }

  async function remove(graph: Summary, force = false) {
    setProblem(null);
    setRefused(null);
    if (!force && !window.confirm(`Delete ${graph.name} (${graph.slug})? Its runs stay readable.`)) return;
    try {
      await del(`/api/graphs/${q(graph.id)}${force ? "?force=true" : ""}`);
      setNotice(`deleted ${graph.slug}`);
      reload();
    } catch (cause) {
      setProblem(cause);
      // The server refuses to delete a graph that has runs unless asked again on purpose.
      if (cause instanceof ApiError && cause.status === 409 && !force) setRefused(graph);
    }
  }

  return (
    <section
      className={`graphs${dragging ? " dragging" : ""}`}
      onDragOver={(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        event.preventDefault();
        setDragging(false);
        const file = event.dataTransfer.files[0];
        if (file) void importFile(file);
      }}
    >
      <div className="toolbar">
        <h1>Graphs</h1>
        <a className="button" href={href("new-graph")}>
          New graph
        </a>
        <input
          type="search"
          placeholder="Search by name, slug or id"
          aria-label="Search graphs"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
        />
        <label className="button">
          Import…
          <input
            type="file"
            accept=".yaml,.yml,.json"
            hidden
            aria-label="Import a graph file"
            onChange={(e) => {
              const file = e.target.files?.[0];
              if (file) void importFile(file);
              e.target.value = "";
            }}
          />
        </label>
      </div>
      <p className="muted">Drop a graph file (.yaml or .json) anywhere here to import it.</p>
      <ErrorView error={error ?? problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      {refused ? (
        <button type="button" className="danger" onClick={() => void remove(refused, true)}>
          Delete {refused.slug} anyway
        </button>
      ) : null}
      <Notice>{notice}</Notice>
      <table className="list" aria-label="Stored graphs">
        <Head labels={["Name", "Slug", "Kind", "Version", "Nodes", "Updated", ""]} />
        <tbody>
          {shown.map((graph) => (
            <tr key={graph.id} data-graph={graph.slug}>
              <td>
                <a href={href("graphs", graph.id)}>{graph.name}</a>
              </td>
              <td>
                <code>{graph.slug}</code>
              </td>
              <td>
                <span className={`badge ${graph.source_type}`}>{badge(graph)}</span>
                {drafted.has(graph.slug) ? (
                  <span className="badge warn" title="Edits kept as a draft, not stored as a version yet">
                    draft
                  </span>
                ) : null}
                {graph.parent_updated ? (
                  <span className="badge warn" title="The parent has a newer version than the one forked">
                    parent updated
                  </span>
                ) : null}
              </td>
              <td>{graph.version}</td>
              <td>{graph.nodes}</td>
              <td>{when(graph.updated_at)}</td>
              <td className="actions">
                <a href={href("runs") + `?graph=${q(graph.id)}`}>runs</a>{" "}
                <a
                  href={href("graphs", graph.id) + `?tab=versions&evaluate=${graph.version}`}
                  title={`Score version ${graph.version} on what people corrected and approved, before promoting it`}
                >
                  evaluate
                </a>
                <button type="button" className="link" onClick={() => void exportGraph(graph)}>
                  export
                </button>
                {graph.source_type !== "system" ? (
                  <button type="button" className="link danger" onClick={() => void remove(graph)}>
                    delete
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && shown.length === 0 ? <p className="muted">No graph matches.</p> : null}
      {building.length ? (
        <>
          <h2>Being built</h2>
          <p className="muted">Graphs never stored yet: kept as drafts until they are stored as version 1.</p>
          <table className="list" aria-label="Graphs being built">
            <Head labels={["Name", "Id", "Nodes", "Last edit"]} />
            <tbody>
              {building.map((d) => (
                <tr key={d.slug} data-draft={d.slug}>
                  <td>
                    <a href={href("graphs", d.slug)}>{d.name ?? d.slug}</a>
                  </td>
                  <td>
                    <code>{d.slug}</code>
                  </td>
                  <td>{d.nodes}</td>
                  <td>{when(d.saved_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </section>
  );
}

function badge(graph: Summary): string {
  if (graph.source_type === "system") return "system";
  if (graph.parent_id) return "fork";
  return graph.source_type === "system_fork" ? "fork" : "user";
}
