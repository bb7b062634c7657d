// Instants of schedules as people read them: the browser's local time, and how far away it is.

const UNITS: [number, string][] = [
  [86400, "day"],
  [3600, "h"],
  [60, "min"],
  [1, "s"],
];

/** `ts` (Unix seconds) relative to `now`: "in 3 min", "12 s ago", "in 2 days", "now". */
export function relative(ts: number, now: number = Date.now() / 1000): string {
  const delta = ts - now;
  const size = Math.abs(delta);
  if (size < 1) return "now";
  const [unit, name] = UNITS.find(([seconds]) => size >= seconds) ?? UNITS[UNITS.length - 1];
  const count = Math.floor(size / unit);
  const label = name === "day" && count !== 1 ? "days" : name;
  return delta > 0 ? `in ${count} ${label}` : `${count} ${label} ago`;
}

/** `ts` in the time zone `zone` (the schedule's), e.g. "2026-12-01 09:00 Europe/Paris"; "" when
 * the browser does not know the zone. */
export function inZone(ts: number, zone: string): string {
  try {
    const text = new Date(ts * 1000).toLocaleString("sv-SE", { timeZone: zone, hour12: false });
    return `${text.slice(0, 16)} ${zone}`;
  } catch {
    return "";
  }
}

/** The browser's own time zone (an IANA name), or UTC. */
export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** The IANA time zones this browser knows, for the time-zone field's suggestions. */
export function knownZones(): string[] {
  try {
    return ["UTC", ...Intl.supportedValuesOf("timeZone").filter((zone) => zone !== "UTC")];
  } catch {
    return ["UTC"];
  }
}
