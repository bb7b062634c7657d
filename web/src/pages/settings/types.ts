// The settings the page edits (GET /api/settings), what a save sends (PUT), and the history.
import { type Answer, call, get, post } from "../../api/client";

export type Settings = Answer<"/api/settings">;
export type ProviderEntry = Settings["providers"][number];
export type ModelEntry = ProviderEntry["models"][number];
export type HistoryEntry = Answer<"/api/settings/history">[number];
export type Change = HistoryEntry["changes"][number];

/** A flat table of settings (`[resources]`, `[context]`, a limit table): values by key. */
export type Table = Record<string, unknown>;

/** The sections a page edits, as the form holds them while a person changes them. */
export interface Form {
  roles: Record<string, string[]>;
  providers: ProviderEntry[];
  pool: { order: string[]; degrade_to: string | null };
  resources: Table;
  context: Table;
  sandbox: Table;
  tools: Table;
}

export type Section = keyof Form;

export function formOf(settings: Settings): Form {
  const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
  return copy({
    roles: settings.roles,
    providers: settings.providers,
    pool: settings.pool,
    resources: settings.resources,
    context: settings.context,
    sandbox: settings.limits.sandbox ?? {},
    tools: settings.limits.tools ?? {},
  });
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The keys of a table whose values changed, with their new values. */
function changedKeys(before: Table, after: Table): Table | null {
  const out: Table = {};
  for (const [key, value] of Object.entries(after)) if (!same(before[key], value)) out[key] = value;
  return Object.keys(out).length ? out : null;
}

/** What the settings may change of a provider (its key never: only the variable's name). */
const PROVIDER_FIELDS = ["kind", "base_url", "api_key_env", "max_concurrency", "rpm", "tpm", "enabled", "models"] as const;

/** A provider's part of a save: the fields that changed (all of them for a new provider). */
function providerPatch(before: ProviderEntry | undefined, after: ProviderEntry): Table | null {
  const fields = PROVIDER_FIELDS.filter((f) => !before || !same(before[f], after[f]));
  return fields.length ? Object.fromEntries(fields.map((f) => [f, after[f]])) : null;
}

/** What a save sends: only what changed, section by section and key by key (so the history
 * names each key changed, and what was not touched keeps coming from where it came from). A
 * provider the settings added and the page removed is listed under `providers.remove`. */
export function patchOf(before: Form, after: Form): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  const roles = changedKeys(before.roles, after.roles);
  if (roles) patch.roles = roles;
  const was = new Map(before.providers.map((p) => [p.id, p]));
  const providers: Table = {};
  for (const p of after.providers) {
    const changed = providerPatch(was.get(p.id), p);
    if (changed) providers[p.id] = changed;
  }
  const removed = before.providers.filter((p) => !after.providers.some((a) => a.id === p.id)).map((p) => p.id);
  if (removed.length) providers.remove = removed;
  if (Object.keys(providers).length) patch.providers = providers;
  const pool = changedKeys(before.pool, after.pool);
  if (pool) patch.pool = pool;
  for (const section of ["resources", "context", "sandbox", "tools"] as const) {
    const changed = changedKeys(before[section], after[section]);
    if (changed) patch[section] = changed;
  }
  return patch;
}

export const loadSettings = () => get<Settings>("/api/settings");
export const loadHistory = () => get<HistoryEntry[]>("/api/settings/history");
export const saveSettings = (base_revision: number, settings: Record<string, unknown>, note: string) =>
  call<Settings>("PUT", "/api/settings", { base_revision, settings, ...(note.trim() ? { note: note.trim() } : {}) });
export const revertTo = (revision: number) => post<Settings>(`/api/settings/history/${revision}/revert`);

/** The model targets the providers offer: "provider/model", enabled providers first. */
export function targetsOf(providers: ProviderEntry[]): string[] {
  return providers.flatMap((p) => p.models.map((m) => `${p.id}/${m.name}`));
}

/** A value as a change's line shows it (none: plait.toml's, or the default, applies). */
export function shown(value: unknown): string {
  if (value === null || value === undefined) return "plait.toml's";
  return typeof value === "string" ? value : JSON.stringify(value);
}

const SECTION_KEY = /\b(?:settings\.)?((?:roles|providers|pool|resources|context|sandbox|tools)\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)/g;

/** The keys a refusal names (`settings.resources.cpu_percent_max`), as the form's dotted keys:
 * the fields to mark beside the message. */
export function namedKeys(message: string, details: unknown[] = []): Set<string> {
  const text = [message, ...details.map((d) => (typeof d === "string" ? d : JSON.stringify(d)))].join("\n");
  return new Set([...text.matchAll(SECTION_KEY)].map((m) => m[1]));
}
