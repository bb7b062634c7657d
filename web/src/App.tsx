import { Component, type ReactNode, useEffect, useState } from "react";
import { get, onUnauthorized, setToken, token, type Schemas } from "./api/client";
import { ErrorView } from "./components/ErrorView";
import { href, useRoute } from "./router";
import { CanvasPage } from "./pages/Canvas";
import { ChatPage } from "./pages/Chat";
import { DashboardPage } from "./pages/Dashboard";
import { EvaluationPage } from "./pages/Evaluation";
import { GraphsPage } from "./pages/Graphs";
import { KnowledgePage } from "./pages/Knowledge";
import { KnowledgeBasePage } from "./pages/KnowledgeBase";
import { MemoryPage } from "./pages/Memory";
import { NewGraphPage } from "./pages/NewGraph";
import { RunPage } from "./pages/Run";
import { RunsPage } from "./pages/Runs";
import { SchedulePage } from "./pages/Schedule";
import { SchedulesPage } from "./pages/Schedules";
import { ScriptsPage } from "./pages/Scripts";
import { SettingsPage } from "./pages/Settings";
import { SkillPage, SkillsPage } from "./pages/Skills";

const NAV = [
  ["graphs", "Graphs"],
  ["runs", "Runs"],
  ["schedules", "Schedules"],
  ["dashboard", "Dashboard"],
  ["scripts", "Scripts"],
  ["knowledge", "Knowledge"],
  ["memory", "Memory"],
  ["skills", "Skills"],
  ["settings", "Settings"],
] as const;

export function App() {
  const route = useRoute();
  const [health, setHealth] = useState<Schemas["HealthOut"] | null>(null);
  const [asking, setAsking] = useState(false);
  const [healthError, setHealthError] = useState<unknown>(null);

  useEffect(() => {
    get<Schemas["HealthOut"]>("/api/health").then(
      (h) => {
        setHealth(h);
        if (h.auth_required && !token()) setAsking(true);
      },
      setHealthError,
    );
    return onUnauthorized(() => setAsking(true));
  }, []);

  return (
    <div className="app">
      <header className="top">
        <a className="brand" href={href("graphs")}>
          Plait
        </a>
        <nav aria-label="Main">
          {NAV.map(([page, label]) => (
            <a key={page} href={href(page)} aria-current={route.page === page ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <span className="meta">
          {health ? (
            <span className="store" title="The store this server reads and writes: graphs and runs elsewhere are in another store">
              store <code>{health.database}</code> ·{" "}
            </span>
          ) : null}
          {health ? `v${health.version}` : ""}
          {health?.auth_required ? (
            <button type="button" className="link" onClick={() => setAsking(true)}>
              token
            </button>
          ) : null}
        </span>
      </header>
      <ErrorView error={healthError} />
      {asking ? <TokenPrompt onDone={() => setAsking(false)} /> : null}
      <main>
        <Boundary key={route.page + route.params.join("/")}>
          <Page page={route.page} params={route.params} query={route.query} />
        </Boundary>
      </main>
    </div>
  );
}

function Page({ page, params, query }: { page: string; params: string[]; query: URLSearchParams }) {
  switch (page) {
    case "new-graph":
      return <NewGraphPage />;
    case "graphs":
      return params[0] ? (
        <CanvasPage
          graphRef={params[0]}
          version={query.get("version")}
          chat={query.get("chat")}
          tab={query.get("tab")}
          evaluate={query.get("evaluate")}
        />
      ) : (
        <GraphsPage />
      );
    case "chat":
      return <ChatPage sessionId={query.get("session")} />;
    case "runs":
      return params[0] ? <RunPage runId={params[0]} /> : <RunsPage graph={query.get("graph")} status={query.get("status")} />;
    case "schedules":
      return params[0] ? <SchedulePage scheduleId={params[0]} /> : <SchedulesPage />;
    case "evaluations":
      return params[0] ? (
        <EvaluationPage evaluationId={params[0]} outcome={query.get("outcome")} />
      ) : (
        <ErrorView error={new Error("no evaluation named: open one from a graph's Versions tab, under Evaluations")} />
      );
    case "dashboard":
      return <DashboardPage />;
    case "scripts":
      return <ScriptsPage templateId={params[0] ?? null} />;
    case "knowledge":
      return params[0] ? <KnowledgeBasePage name={params[0]} document={query.get("document")} /> : <KnowledgePage />;
    case "memory":
      return <MemoryPage scope={params[0] ?? null} fact={query.get("fact")} all={query.get("show") === "all"} />;
    case "skills":
      return params[0] ? <SkillPage name={params[0]} version={query.get("version")} /> : <SkillsPage />;
    case "settings":
      return <SettingsPage tab={query.get("tab")} />;
    default:
      return <ErrorView error={new Error(`no page '${page}': choose one above`)} />;
  }
}

function TokenPrompt({ onDone }: { onDone: () => void }) {
  const [value, setValue] = useState("");
  return (
    <form
      className="token-prompt"
      onSubmit={(event) => {
        event.preventDefault();
        setToken(value.trim() || null);
        onDone();
        window.location.reload();
      }}
    >
      <label>
        This server asks for a token (from <code>plait token create --name NAME</code>):{" "}
        <input type="password" autoFocus value={value} onChange={(e) => setValue(e.target.value)} aria-label="Token" />
      </label>
      <button type="submit">Use token</button>
      <button type="button" onClick={onDone}>
        Cancel
      </button>
    </form>
  );
}

/** A page that throws while rendering shows the error instead of a blank page. */
class Boundary extends Component<{ children: ReactNode }, { error: unknown }> {
  state = { error: null as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  render() {
    return this.state.error ? <ErrorView error={this.state.error} /> : this.props.children;
  }
}
