import { when } from "../../components/useApi";
import { browserZone, inZone, relative } from "./time";

/** An instant in local time with how far away it is ("in 3 min"); its time in the schedule's
 * zone as the tooltip, and also written out (`inline`) when that zone is not the browser's. */
export function Instant({ ts, zone, inline = false }: { ts: number | null | undefined; zone?: string; inline?: boolean }) {
  if (!ts) return <span className="muted">never</span>;
  const there = zone && zone !== browserZone() ? inZone(ts, zone) : "";
  return (
    <span className="instant">
      <time dateTime={new Date(ts * 1000).toISOString()} title={there || undefined}>
        {when(ts)}
      </time>{" "}
      <span className="muted">({relative(ts)})</span>
      {inline && there ? <span className="muted"> · {there}</span> : null}
    </span>
  );
}
