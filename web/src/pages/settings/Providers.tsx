import { useState } from "react";
import { Field, Head } from "../../components/bits";
import type { ModelEntry, ProviderEntry } from "./types";

const KINDS = ["openai", "local", "scripted"] as const;
const CAPABILITIES = ["tools", "json_schema", "vision", "mcp"] as const;

/** Where a key goes, since it is never typed here: the server's own environment. */
export function KeyNote() {
  return (
    <p className="muted key-note">
      Keys are never typed into this page and never stored: a provider names the environment variable that holds its
      key, and the server reads the key from its own environment. To set one, put the variable in the environment
      where <code>plait serve</code> and its workers start (their service file or shell), then restart them. Only the
      variables the deployer allowed can be chosen: those plait.toml's own providers use (their key kept to their
      URLs) and those <code>[settings] key_envs</code> lists.
    </p>
  );
}

/** The providers by id: kind, base URL, the name of the key's variable and whether it is set,
 * models with prices, context and capabilities; add one, edit one, turn one on or off. */
export function Providers({
  providers,
  keyEnvs,
  keyHosts,
  onChange,
  readOnly,
}: {
  providers: ProviderEntry[];
  keyEnvs: string[];
  /** Variables whose key goes only where plait.toml sends it: name -> scheme://host. */
  keyHosts: Record<string, string[]>;
  onChange: (providers: ProviderEntry[]) => void;
  readOnly: boolean;
}) {
  const [open, setOpen] = useState<string | null>(null);
  const set = (id: string, fields: Partial<ProviderEntry>) =>
    onChange(providers.map((p) => (p.id === id ? { ...p, ...fields } : p)));
  return (
    <div className="providers">
      <KeyNote />
      <table className="list" aria-label="Providers">
        <Head labels={["Id", "Kind", "Base URL", "Key variable", "Models", "Enabled", "Declared in", ""]} />
        <tbody>
          {providers.map((p) => (
            <tr key={p.id} data-provider={p.id}>
              <td>
                <code>{p.id}</code>
              </td>
              <td>{p.kind}</td>
              <td className="url">{p.base_url ?? <span className="muted">none</span>}</td>
              <td>
                {p.api_key_env ? (
                  <>
                    <code>{p.api_key_env}</code>{" "}
                    <span className={`badge ${p.key_set ? "user" : "warn"}`} title={p.key_set ? "the server's environment has it" : "set it where the server starts"}>
                      {p.key_set ? "set" : "not set"}
                    </span>
                  </>
                ) : (
                  <span className="muted">no key</span>
                )}
              </td>
              <td>{p.models.map((m) => m.name).join(", ") || <span className="muted">none</span>}</td>
              <td>
                <input
                  type="checkbox"
                  aria-label={`${p.id} enabled`}
                  checked={p.enabled}
                  disabled={readOnly}
                  onChange={(e) => set(p.id, { enabled: e.target.checked })}
                />
              </td>
              <td>{p.from}</td>
              <td className="actions">
                <button type="button" className="link" aria-expanded={open === p.id} onClick={() => setOpen(open === p.id ? null : p.id)}>
                  {readOnly ? "details" : "edit"} {p.id}
                </button>
                {!readOnly && p.from !== "plait.toml" ? (
                  <button type="button" className="link danger" onClick={() => onChange(providers.filter((x) => x.id !== p.id))}>
                    remove {p.id}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {providers.length === 0 ? <p className="muted">No provider is configured.</p> : null}
      {open && providers.some((p) => p.id === open) ? (
        <ProviderForm
          key={open}
          provider={providers.find((p) => p.id === open)!}
          keyEnvs={keyEnvs}
          keyHosts={keyHosts}
          readOnly={readOnly}
          onChange={(fields) => set(open, fields)}
        />
      ) : null}
      {readOnly ? null : (
        <NewProvider
          taken={providers.map((p) => p.id)}
          keyEnvs={keyEnvs}
          keyHosts={keyHosts}
          onAdd={(made) => {
            onChange([...providers, made]);
            setOpen(made.id);
          }}
        />
      )}
    </div>
  );
}

/** Where a variable's key may go, when plait.toml limits that to its own providers' URLs. */
function sentTo(hosts: string[] | undefined): string {
  const urls = (hosts ?? []).filter((h) => h !== "(no URL)");
  return urls.length ? ` (sent only to ${urls.join(", ")})` : "";
}

interface KeyChoiceProps {
  /** Given by the Field around it, which labels the choice by it. */
  id?: string;
  value: string | null;
  keyEnvs: string[];
  keyHosts: Record<string, string[]>;
  readOnly: boolean;
  onChange: (v: string | null) => void;
}

/** The variable a provider takes its key from: one the deployer allowed, each saying where its
 * key may be sent when plait.toml limits that. */
function KeyChoice({ id, value, keyEnvs, keyHosts, readOnly, onChange }: KeyChoiceProps) {
  const names = value && !keyEnvs.includes(value) ? [value, ...keyEnvs] : keyEnvs;
  return (
    <select id={id} value={value ?? ""} disabled={readOnly} onChange={(e) => onChange(e.target.value || null)}>
      <option value="">no key</option>
      {names.map((n) => (
        <option key={n} value={n}>
          {n}
          {sentTo(keyHosts[n])}
        </option>
      ))}
    </select>
  );
}

function ProviderForm({
  provider: p,
  keyEnvs,
  keyHosts,
  readOnly,
  onChange,
}: {
  provider: ProviderEntry;
  keyEnvs: string[];
  keyHosts: Record<string, string[]>;
  readOnly: boolean;
  onChange: (fields: Partial<ProviderEntry>) => void;
}) {
  const setModel = (i: number, fields: Partial<ModelEntry>) =>
    onChange({ models: p.models.map((m, j) => (j === i ? { ...m, ...fields } : m)) });
  const num = (text: string) => (text.trim() === "" ? null : Number(text));
  return (
    <section className="provider-form" aria-label={`Provider ${p.id}`}>
      <h3>
        Provider <code>{p.id}</code>
      </h3>
      <div className="row">
        <Field label="Kind">
          <select value={p.kind} disabled={readOnly} onChange={(e) => onChange({ kind: e.target.value })}>
            {KINDS.map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </Field>
        <Field label="Base URL">
          <input className="wide" value={p.base_url ?? ""} readOnly={readOnly} spellCheck={false} onChange={(e) => onChange({ base_url: e.target.value || null })} />
        </Field>
        <Field label="Key variable (its name)">
          <KeyChoice value={p.api_key_env} keyEnvs={keyEnvs} keyHosts={keyHosts} readOnly={readOnly} onChange={(v) => onChange({ api_key_env: v })} />
        </Field>
      </div>
      <table className="list models" aria-label={`Models of ${p.id}`}>
        <Head labels={["Model", "Price in ($ / 1M tokens)", "Price out ($ / 1M tokens)", "Context (tokens)", "Capabilities", ""]} />
        <tbody>
          {p.models.map((m, i) => (
            <tr key={i} data-model={m.name}>
              <td>
                <input aria-label="Model name" className="code" value={m.name} readOnly={readOnly} onChange={(e) => setModel(i, { name: e.target.value })} />
              </td>
              <td>
                <input aria-label={`${m.name} price in`} type="number" step="any" min={0} value={m.price_in} readOnly={readOnly} onChange={(e) => setModel(i, { price_in: Number(e.target.value) })} />
              </td>
              <td>
                <input aria-label={`${m.name} price out`} type="number" step="any" min={0} value={m.price_out} readOnly={readOnly} onChange={(e) => setModel(i, { price_out: Number(e.target.value) })} />
              </td>
              <td>
                <input aria-label={`${m.name} context`} type="number" min={1} value={m.context ?? ""} placeholder="not said" readOnly={readOnly} onChange={(e) => setModel(i, { context: num(e.target.value) })} />
              </td>
              <td>
                {CAPABILITIES.map((c) => (
                  <label key={c} className="check">
                    <input
                      type="checkbox"
                      checked={m.capabilities.includes(c)}
                      disabled={readOnly}
                      onChange={(e) => setModel(i, { capabilities: e.target.checked ? [...m.capabilities, c] : m.capabilities.filter((x) => x !== c) })}
                    />{" "}
                    {c}
                  </label>
                ))}
              </td>
              <td>
                {readOnly ? null : (
                  <button type="button" className="link danger" onClick={() => onChange({ models: p.models.filter((_, j) => j !== i) })}>
                    remove {m.name || "model"}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {readOnly ? null : (
        <button type="button" onClick={() => onChange({ models: [...p.models, { name: "", price_in: 0, price_out: 0, context: null, capabilities: [] }] })}>
          Add a model
        </button>
      )}
    </section>
  );
}

function NewProvider({
  taken,
  keyEnvs,
  keyHosts,
  onAdd,
}: {
  taken: string[];
  keyEnvs: string[];
  keyHosts: Record<string, string[]>;
  onAdd: (p: ProviderEntry) => void;
}) {
  const [id, setId] = useState("");
  const [kind, setKind] = useState<string>("openai");
  const [url, setUrl] = useState("");
  const [key, setKey] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <form
      className="kb-form"
      aria-labelledby="new-provider"
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        const name = id.trim();
        if (!/^[A-Za-z0-9_.-]+$/.test(name)) return setProblem("the id needs letters, digits, _, . or - only, e.g. openrouter");
        if (taken.includes(name)) return setProblem(`a provider '${name}' exists already: edit it in the table`);
        setProblem(null);
        onAdd({ id: name, kind, base_url: url.trim() || null, api_key_env: key, key_set: false, max_concurrency: 4, rpm: null, tpm: null, enabled: true, from: "settings", models: [] });
        setId("");
        setUrl("");
      }}
    >
      <h3 id="new-provider">New provider</h3>
      <div className="row">
        <Field label="Id">
          <input className="code" value={id} placeholder="openrouter" spellCheck={false} onChange={(e) => setId(e.target.value)} />
        </Field>
        <Field label="Kind">
          <select value={kind} onChange={(e) => setKind(e.target.value)}>
            {KINDS.map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </Field>
        <Field label="Base URL">
          <input className="wide" value={url} placeholder="https://api.example.com/v1" spellCheck={false} onChange={(e) => setUrl(e.target.value)} />
        </Field>
        <Field label="Key variable (its name)">
          <KeyChoice value={key} keyEnvs={keyEnvs} keyHosts={keyHosts} readOnly={false} onChange={setKey} />
        </Field>
        <button type="submit">Add provider</button>
      </div>
      {problem ? (
        <p className="error" role="alert">
          {problem}
        </p>
      ) : null}
      <p className="hint">Add its models in the form that opens; it is used once saved, and a role names its models.</p>
    </form>
  );
}
