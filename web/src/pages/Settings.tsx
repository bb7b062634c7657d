import { type ReactNode, useEffect, useMemo, useState } from "react";
import { ApiError } from "../api/client";
import { Field, Notice } from "../components/bits";
import { ErrorView } from "../components/ErrorView";
import { useApi } from "../components/useApi";
import { replaceQuery } from "../router";
import { History } from "./settings/History";
import { Pool } from "./settings/Pool";
import { Providers } from "./settings/Providers";
import { Roles } from "./settings/Roles";
import { TableFields } from "./settings/TableFields";
import {
  type Form,
  formOf,
  loadHistory,
  loadSettings,
  patchOf,
  revertTo,
  saveSettings,
  type Section,
  namedKeys,
  type Settings,
} from "./settings/types";

const TABS = {
  models: "Models and roles",
  providers: "Providers",
  pool: "Pool",
  scheduling: "Scheduling",
  context: "Context",
} as const;
type Tab = keyof typeof TABS;

/** The sections each tab edits (a fixed section is read-only wherever it shows). */
const SECTIONS: Record<Tab, Section[]> = {
  models: ["roles"],
  providers: ["providers"],
  pool: ["pool", "providers"],
  scheduling: ["resources", "sandbox", "tools"],
  context: ["context"],
};

/** The server's settings (`#/settings?tab=`): models and roles, providers, the pool, scheduling
 * with the sandbox and tool limits, the chat's context. Saved as one change on the revision the
 * page read; a change someone else saved since is a conflict, never overwritten. */
export function SettingsPage({ tab: asked }: { tab: string | null }) {
  const loaded = useApi(loadSettings, []);
  const history = useApi(loadHistory, []);
  const [settings, setSettings] = useState<Settings | null>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [tab, setTab] = useState<Tab>(asked && asked in TABS ? (asked as Tab) : "models");
  const [note, setNote] = useState("");
  const [problem, setProblem] = useState<unknown>(null);
  const [stale, setStale] = useState(false);
  const [notice, setNotice] = useState<ReactNode>(null);
  const [busy, setBusy] = useState(false);

  // The address names the tab: a link to another tab of this page opens it.
  useEffect(() => {
    if (asked && asked in TABS) setTab(asked as Tab);
  }, [asked]);
  // A fresh read replaces the form (the first one, a reload, a conflict's reload).
  useEffect(() => {
    if (!loaded.data) return;
    setSettings(loaded.data);
    setForm(formOf(loaded.data));
  }, [loaded.data]);

  const refused = useMemo(
    () => (problem instanceof ApiError && problem.status === 422 ? namedKeys(problem.message, problem.details) : new Set<string>()),
    [problem],
  );
  const before = useMemo(() => (settings ? formOf(settings) : null), [settings]);
  const patch = useMemo(() => (before && form ? patchOf(before, form) : {}), [before, form]);
  const dirty = Object.keys(patch).length > 0;

  function took(next: Settings, said: ReactNode) {
    setSettings(next);
    setForm(formOf(next));
    setProblem(null);
    setStale(false);
    setNotice(said);
    history.reload();
  }

  async function save() {
    if (!settings) return;
    setBusy(true);
    setNotice(null);
    try {
      const next = await saveSettings(settings.revision, patch, note);
      setNote("");
      took(next, `Saved as revision ${next.revision}: new runs and model calls use it; calls already running finish on the settings they started with.`);
    } catch (cause) {
      // the form stays as edited: the person fixes what the server named and saves again
      setProblem(cause);
      setStale(cause instanceof ApiError && cause.status === 409);
    } finally {
      setBusy(false);
    }
  }

  async function revert(revision: number) {
    setNotice(null);
    try {
      const next = await revertTo(revision);
      took(next, `Reverted revision ${revision}: the settings are revision ${next.revision} now.`);
    } catch (cause) {
      setProblem(cause);
      setStale(false);
    }
  }

  if (loaded.error && !settings) return <ErrorView error={loaded.error} />;
  if (!settings || !form) return <p aria-busy="true">Loading…</p>;
  const fixed = (section: Section) => !settings.editable || settings.fixed.includes(section);
  const changed = (t: Tab) => SECTIONS[t].some((s) => s in patch);
  const set = <K extends Section>(section: K, value: Form[K]) => setForm({ ...form, [section]: value });
  const setProvider = (id: string, fields: Partial<Form["providers"][number]>) =>
    set("providers", form.providers.map((p) => (p.id === id ? { ...p, ...fields } : p)));

  return (
    <section className="settings">
      <div className="toolbar">
        <h1>Settings</h1>
        <span className="badge" data-testid="settings-revision">
          revision {settings.revision}
        </span>
        <button type="button" onClick={() => (dirty && !window.confirm("Reload and lose your edits?") ? null : loaded.reload())}>
          Reload
        </button>
        <span className="muted">What this server's runs use: saved here, it applies to new runs without a restart.</span>
      </div>
      {settings.editable ? null : (
        <p className="warning" role="status">
          Changing settings here is turned off on this server: the deployer set <code>[settings] enabled = false</code> in
          plait.toml. They are shown as they are in force.
        </p>
      )}
      {settings.problem ? (
        <p className="warning" role="alert">
          The changes stored here no longer fit plait.toml, so plait.toml alone is in force: {settings.problem}
        </p>
      ) : null}
      <Notice>{notice}</Notice>
      <div role="tablist" className="tabs" aria-label="Settings sections">
        {(Object.keys(TABS) as Tab[]).map((name) => (
          <button
            key={name}
            role="tab"
            type="button"
            aria-selected={tab === name}
            onClick={() => {
              setTab(name);
              replaceQuery("tab", name === "models" ? null : name);
            }}
          >
            {TABS[name]}
            {changed(name) ? <span className="unsaved" title="changed, not saved yet"> •</span> : null}
            {[...refused].some((key) => SECTIONS[name].some((s) => key.startsWith(`${s}.`))) ? (
              <span className="refused-mark" title="the server refused a value here"> (refused)</span>
            ) : null}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={TABS[tab]} className="settings-panel">
        {SECTIONS[tab].filter((s) => settings.fixed.includes(s)).map((s) => (
          <p key={s} className="warning fixed-note">
            <code>{s}</code> is fixed by the deployer (<code>[settings] fixed</code> in plait.toml): read-only here.
          </p>
        ))}
        {tab === "models" ? (
          <Roles roles={form.roles} saved={Object.keys(settings.roles)} providers={form.providers} readOnly={fixed("roles")} sources={settings.sources} onChange={(roles) => set("roles", roles)} />
        ) : null}
        {tab === "providers" ? (
          <Providers providers={form.providers} keyEnvs={settings.key_envs} keyHosts={settings.key_env_hosts} readOnly={fixed("providers")} onChange={(providers) => set("providers", providers)} />
        ) : null}
        {tab === "pool" ? (
          <Pool
            order={form.pool.order}
            degradeTo={form.pool.degrade_to}
            providers={form.providers}
            readOnly={fixed("pool")}
            onOrder={(order) => set("pool", { ...form.pool, order })}
            onDegrade={(degrade_to) => set("pool", { ...form.pool, degrade_to })}
            onLimits={setProvider}
          />
        ) : null}
        {tab === "scheduling" ? (
          <>
            <h2>Resources</h2>
            <p className="muted">What happens when the machine or the providers are short: each threshold, and what it does to a run or a node.</p>
            <TableFields label="Resources" prefix="resources" values={form.resources} initial={settings.resources} readOnly={fixed("resources")} sources={settings.sources} refused={refused} onChange={(v) => set("resources", v)} />
            <h2>Sandbox and tool limits</h2>
            <p className="muted">Limits may only be tightened here: each cap beside a limit is plait.toml's, the most it can be.</p>
            <h3>Sandbox</h3>
            <TableFields label="Sandbox limits" prefix="sandbox" values={form.sandbox} initial={settings.limits.sandbox} caps={settings.caps.sandbox} readOnly={fixed("sandbox")} sources={settings.sources} refused={refused} onChange={(v) => set("sandbox", v)} />
            <h3>Tools</h3>
            <TableFields label="Tool limits" prefix="tools" values={form.tools} initial={settings.limits.tools} caps={settings.caps.tools} readOnly={fixed("tools")} sources={settings.sources} refused={refused} onChange={(v) => set("tools", v)} />
          </>
        ) : null}
        {tab === "context" ? (
          <>
            <p className="muted">How much of a long conversation a chat turn is given, and how the older part is compressed: the shares of the budget for recent turns, the summary and the recalled facts.</p>
            <TableFields label="Context" prefix="context" values={form.context} initial={settings.context} readOnly={fixed("context")} sources={settings.sources} refused={refused} onChange={(v) => set("context", v)} />
          </>
        ) : null}
      </div>
      {settings.editable ? (
        <form
          className="save-bar settings-save"
          aria-label="Save the settings"
          onSubmit={(event) => {
            event.preventDefault();
            void save();
          }}
        >
          <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
          {stale ? (
            <p className="warning" role="alert">
              Someone else changed the settings since this page read them: yours were not saved.{" "}
              <button type="button" onClick={() => loaded.reload()}>
                Reload their settings
              </button>{" "}
              (your edits are lost; make them again on theirs).
            </p>
          ) : null}
          <div className="row">
            <Field label="Note (optional)">
              <input className="wide" value={note} placeholder="why this change" onChange={(e) => setNote(e.target.value)} />
            </Field>
            <button type="submit" disabled={!dirty || busy}>
              Save
            </button>
            <button type="button" className="link" disabled={!dirty} onClick={() => { setForm(formOf(settings)); setProblem(null); setStale(false); }}>
              Discard edits
            </button>
            {dirty ? <span className="muted">unsaved changes</span> : <span className="muted">no change to save</span>}
          </div>
        </form>
      ) : null}
      <History entries={history.data} error={history.error} current={settings.revision} dirty={dirty} onRevert={revert} />
    </section>
  );
}
