import { type ReactNode, useEffect, useState } from "react";
import { get } from "../api/client";
import { Head, Notice } from "../components/bits";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { href, replaceQuery } from "../router";
import { FactPanel } from "./memory/FactPanel";
import { Source } from "./memory/Source";
import { type Fact, type Scope, memoryHref, STATUS } from "./memory/types";

/** Go to `to` in place of the current address (a fact replaced by its correction is not a
 * page to go back to). */
function replace(to: string): void {
  window.location.replace(`${window.location.pathname}${window.location.search}${to}`);
}

/** What a long chat remembers (`#/memory`, `#/memory/SCOPE?fact=ID&show=all`): the memories
 * that hold facts; a memory's facts with where each came from; a fact's history, and correcting
 * or retracting it. Nothing is deleted: a corrected or retracted fact stays in its history. */
export function MemoryPage({ scope, fact, all: asked }: { scope: string | null; fact: string | null; all: boolean }) {
  // Shown at once when the choice is made (a radio button must not wait for the address to change).
  const [all, setAll] = useState(asked);
  useEffect(() => setAll(asked), [asked]);
  const scopes = useApi(() => get<Scope[]>("/api/memory"), []);
  const facts = useApi(
    () =>
      scope ? get<Fact[]>(`/api/memory/facts?scope=${encodeURIComponent(scope)}&history=${all}`) : Promise.resolve([]),
    [scope, all],
  );
  const [notice, setNotice] = useState<ReactNode>(null);

  function changed(message: ReactNode) {
    setNotice(message);
    scopes.reload();
    facts.reload();
  }

  return (
    <section className="memory">
      <div className="toolbar">
        <h1>Memory</h1>
        <button
          type="button"
          onClick={() => {
            scopes.reload();
            facts.reload();
          }}
        >
          Refresh
        </button>
        <span className="muted">What a long chat remembers of its older turns: facts, each with where it came from.</span>
      </div>
      <ErrorView error={scopes.error} />
      <Notice>{notice}</Notice>
      <table className="list memories" aria-label="Memories">
        <Head labels={["Memory", "Active facts"]} />
        <tbody>
          {(scopes.data ?? []).map((s) => (
            <tr key={s.scope} data-scope={s.scope}>
              <td>
                <a href={memoryHref(s.scope)} aria-current={s.scope === scope ? "true" : undefined}>
                  {s.scope}
                </a>
              </td>
              <td className="count">{s.facts}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {scopes.data && scopes.data.length === 0 ? (
        <p className="muted">
          No memory holds an active fact yet: a chat remembers facts once its conversation outgrows what the designer is
          shown.
        </p>
      ) : null}
      {scope ? (
        <Facts
          scope={scope}
          all={all}
          onShow={(value) => {
            setAll(value);
            replaceQuery("show", value ? "all" : null);
          }}
          open={fact}
          facts={facts.data}
          error={facts.error}
          loading={facts.loading}
        />
      ) : null}
      {fact ? (
        <FactPanel
          key={fact}
          id={fact}
          all={all}
          onCorrected={(made, old) => {
            changed(`corrected: “${made.text}” replaces “${old.text}”, which stays in the history`);
            replace(memoryHref(made.scope, made.id, all));
          }}
          onRetracted={(done) =>
            changed(`retracted “${done.text}”: the chat no longer recalls it; it stays in the history`)
          }
        />
      ) : null}
    </section>
  );
}

/** A memory's facts, active ones only or all of them; each opens its history. */
function Facts({
  scope,
  all,
  onShow,
  open,
  facts,
  error,
  loading,
}: {
  scope: string;
  all: boolean;
  onShow: (all: boolean) => void;
  open: string | null;
  facts: Fact[] | null;
  error: unknown;
  loading: boolean;
}) {
  return (
    <section className="facts" aria-labelledby="facts-of">
      <div className="toolbar">
        <h2 id="facts-of">
          Facts of <code>{scope}</code>
        </h2>
        <fieldset className="show">
          <legend>Show</legend>
          <label className="check">
            <input type="radio" name="show" checked={!all} onChange={() => onShow(false)} /> active facts
          </label>
          <label className="check">
            <input type="radio" name="show" checked={all} onChange={() => onShow(true)} /> all, with
            superseded and retracted ones
          </label>
        </fieldset>
        <a href={href("memory")}>close</a>
      </div>
      <ErrorView error={error} />
      {facts && facts.length === 0 && !loading ? (
        <p className="muted">{all ? "This memory holds no fact." : "No active fact: show all to see the others."}</p>
      ) : null}
      {facts && facts.length > 0 ? (
        <table className="list fact-list" aria-label={`Facts of ${scope}`}>
          <Head labels={["Sentence", "Subject", "Predicate", "Object", "Status", "True from", "Source", "Added"]} />
          <tbody>
            {facts.map((f) => (
              <tr key={f.id} data-fact={f.id} className={f.status === "active" ? undefined : "gone"}>
                <td className="text">
                  <a
                    href={memoryHref(scope, f.id, all)}
                    aria-current={f.id === open ? "true" : undefined}
                    title="Its history; correct or retract it"
                  >
                    {f.text}
                  </a>
                </td>
                <td>{f.subject}</td>
                <td>{f.predicate}</td>
                <td>{f.object}</td>
                <td>
                  <span className={`pill fact-${f.status}`} title={STATUS[f.status]}>
                    {f.status}
                  </span>
                </td>
                <td>{f.valid_from ? when(f.valid_from) : <span className="muted">not said</span>}</td>
                <td className="source-cell">
                  <Source fact={f} />
                </td>
                <td>{when(f.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
