import { useCallback, useState } from "react";
import { get, q, type Schemas } from "../api/client";
import { Head, Notice } from "../components/bits";
import { ErrorView } from "../components/ErrorView";
import { useApi, when } from "../components/useApi";
import { useEvery } from "../components/useEvery";
import { go, href } from "../router";
import { GraphLink, useGraphs } from "./schedules/graphs";
import { Instant } from "./schedules/Instant";
import { ScheduleActions } from "./schedules/ScheduleActions";
import { REFRESH_MS } from "./Schedules";

type Schedule = Schemas["ScheduleOut"];

/** One schedule: what it runs and when, and its firings (newest first) with their runs. */
export function SchedulePage({ scheduleId }: { scheduleId: string }) {
  const { data, error, reload } = useApi(() => get<Schedule>(`/api/schedules/${q(scheduleId)}`), [scheduleId]);
  const { byId } = useGraphs();
  const [problem, setProblem] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = useCallback(() => {
    if (!error) reload();
  }, [error, reload]);
  useEvery(REFRESH_MS, refresh);

  if (!data) return <ErrorView error={error} />;
  const firings = data.firings ?? [];
  return (
    <section className="schedule">
      <div className="toolbar">
        <h1>
          Schedule <code>{data.id.slice(0, 8)}</code>
        </h1>
        <span className={`pill status-${data.status}`}>{data.status}</span>
        <ScheduleActions
          schedule={data}
          onChanged={(updated) => {
            setNotice(updated.status === "paused" ? "paused" : "resumed");
            reload();
          }}
          onDeleted={() => go("schedules")}
          onError={setProblem}
        />
        <a href={href("schedules")}>all schedules</a>
      </div>
      <ErrorView error={error ?? problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <Notice>{notice}</Notice>
      <dl className="facts">
        <dt>Graph</dt>
        <dd>
          <GraphLink graphId={data.graph_id} graph={byId.get(data.graph_id)} />
        </dd>
        <dt>Cron</dt>
        <dd>
          <code>{data.cron}</code> in {data.timezone}
        </dd>
        <dt>Missed firings</dt>
        <dd>catch-up {data.catch_up}</dd>
        <dt>Next firing</dt>
        <dd>
          {data.status === "paused" ? (
            <span className="muted">none while paused</span>
          ) : (
            <Instant ts={data.next_fire_at} zone={data.timezone} inline />
          )}
        </dd>
        <dt>Last fired</dt>
        <dd>
          <Instant ts={data.last_fired_at} zone={data.timezone} inline />
        </dd>
        <dt>Created</dt>
        <dd>{when(data.created_at)}</dd>
        <dt>Updated</dt>
        <dd>{when(data.updated_at)}</dd>
        <dt>Run input</dt>
        <dd>
          <pre>{JSON.stringify(data.input, null, 2)}</pre>
        </dd>
      </dl>
      <h2>Firings ({firings.length})</h2>
      <table className="list" aria-label="Firings">
        <Head labels={["Fired for", "Run"]} />
        <tbody>
          {firings.map((firing) => (
            <tr key={firing.run_id} data-run={firing.run_id}>
              <td>
                <Instant ts={firing.fire_at} zone={data.timezone} />
              </td>
              <td>
                <a href={href("runs", firing.run_id)}>
                  <code>{firing.run_id.slice(0, 8)}</code>
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {firings.length === 0 ? <p className="muted">It has not fired yet.</p> : null}
    </section>
  );
}
