import { useState } from "react";
import { get, type Schemas } from "../api/client";
import { Head, Notice } from "../components/bits";
import { ErrorView } from "../components/ErrorView";
import { useApi } from "../components/useApi";
import { useEvery } from "../components/useEvery";
import { href } from "../router";
import { GraphLink, useGraphs } from "./schedules/graphs";
import { Instant } from "./schedules/Instant";
import { ScheduleActions } from "./schedules/ScheduleActions";
import { ScheduleForm } from "./schedules/ScheduleForm";

type Schedule = Schemas["ScheduleOut"];

/** How often the list is read again, so that a firing shows without reloading the page. */
export const REFRESH_MS = 3000;

/** The cron schedules: when each fires next, its last run, pause, resume, delete; a new one. */
export function SchedulesPage() {
  const { data, error, reload } = useApi(() => get<Schedule[]>("/api/schedules"), []);
  const { graphs, byId, error: graphsError } = useGraphs();
  const [problem, setProblem] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  useEvery(REFRESH_MS, reload);

  function name(schedule: Schedule): string {
    return byId.get(schedule.graph_id)?.slug ?? schedule.graph_id.slice(0, 8);
  }

  return (
    <section className="schedules">
      <div className="toolbar">
        <h1>Schedules</h1>
        <button type="button" onClick={reload}>
          Refresh
        </button>
        <span className="muted">
          Fired by this server's scheduler (or a <code>plait worker --beat</code>).
        </span>
      </div>
      <ErrorView error={error ?? graphsError ?? problem} onDismiss={problem ? () => setProblem(null) : undefined} />
      <Notice>{notice}</Notice>
      <table className="list" aria-label="Schedules">
        <Head labels={["Schedule", "Graph", "Cron", "Catch-up", "Status", "Next firing", "Last run", ""]} />
        <tbody>
          {(data ?? []).map((schedule) => (
            <tr key={schedule.id} data-schedule={schedule.id}>
              <td>
                <a href={href("schedules", schedule.id)}>
                  <code>{schedule.id.slice(0, 8)}</code>
                </a>
              </td>
              <td>
                <GraphLink graphId={schedule.graph_id} graph={byId.get(schedule.graph_id)} />
              </td>
              <td className="cron">
                <code>{schedule.cron}</code> <span className="muted">{schedule.timezone}</span>
              </td>
              <td>{schedule.catch_up}</td>
              <td>
                <span className={`pill status-${schedule.status}`}>{schedule.status}</span>
              </td>
              <td className="next">
                {schedule.status === "paused" ? (
                  <span className="muted">none while paused</span>
                ) : (
                  <Instant ts={schedule.next_fire_at} zone={schedule.timezone} />
                )}
              </td>
              <td className="last-run">
                {schedule.last_run_id ? (
                  <>
                    <a href={href("runs", schedule.last_run_id)}>
                      <code>{schedule.last_run_id.slice(0, 8)}</code>
                    </a>{" "}
                    <Instant ts={schedule.last_fired_at} />
                  </>
                ) : (
                  <span className="muted">none yet</span>
                )}
              </td>
              <td className="actions">
                <ScheduleActions
                  schedule={schedule}
                  link
                  onChanged={(updated) => {
                    setNotice(`${updated.status === "paused" ? "paused" : "resumed"} the schedule of ${name(updated)}`);
                    reload();
                  }}
                  onDeleted={(deleted) => {
                    setNotice(`deleted the schedule of ${name(deleted)}`);
                    reload();
                  }}
                  onError={setProblem}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.length === 0 ? <p className="muted">No schedules yet: make one below.</p> : null}
      <ScheduleForm
        graphs={graphs}
        onCreated={(made) => {
          setNotice(`scheduled ${name(made)} (${made.cron} ${made.timezone})`);
          reload();
        }}
      />
    </section>
  );
}
