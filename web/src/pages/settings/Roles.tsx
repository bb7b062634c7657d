import { useState } from "react";
import { Field } from "../../components/bits";
import { type ProviderEntry, targetsOf } from "./types";

/** `list` with the item at `from` moved to `to` (the item there, and those after, move down). */
export function moved<T>(list: T[], from: number, to: number): T[] {
  if (from === to || from < 0 || to < 0 || from >= list.length || to >= list.length) return list;
  const next = [...list];
  const [item] = next.splice(from, 1);
  next.splice(to, 0, item);
  return next;
}

/** Each role with the targets it tries in order ("provider/model"); `chat` is the default chat
 * model. Targets are chosen from the models the providers declare. */
export function Roles({
  roles,
  providers,
  onChange,
  readOnly,
  sources,
  saved,
}: {
  roles: Record<string, string[]>;
  /** The roles as saved: a saved role stays (its targets can change), a new one can go again. */
  saved: string[];
  providers: ProviderEntry[];
  onChange: (roles: Record<string, string[]>) => void;
  readOnly: boolean;
  sources: Record<string, string>;
}) {
  const [name, setName] = useState("");
  const names = Object.keys(roles).sort((a, b) => (a === "chat" ? -1 : b === "chat" ? 1 : a.localeCompare(b)));
  const offered = targetsOf(providers);
  const set = (role: string, targets: string[]) => onChange({ ...roles, [role]: targets });
  return (
    <div className="roles">
      <p className="muted">
        A node or a chat asks for a role; the role's targets are tried in this order, each a model a provider declares
        (on the Providers tab). The <strong>chat</strong> role is the default chat model.
      </p>
      {names.map((role) => (
        <RoleTargets
          key={role}
          role={role}
          targets={roles[role]}
          offered={offered}
          source={sources[`roles.${role}`]}
          readOnly={readOnly}
          onChange={(targets) => set(role, targets)}
          onRemove={saved.includes(role) ? null : () => onChange(Object.fromEntries(Object.entries(roles).filter(([r]) => r !== role)))}
        />
      ))}
      {names.length === 0 ? <p className="muted">No role is configured.</p> : null}
      {readOnly ? null : (
        <form
          className="row"
          aria-label="New role"
          onSubmit={(event) => {
            event.preventDefault();
            const role = name.trim();
            if (!role || role in roles) return;
            set(role, []);
            setName("");
          }}
        >
          <Field label="New role">
            <input className="code" value={name} placeholder="summary" spellCheck={false} onChange={(e) => setName(e.target.value)} />
          </Field>
          <button type="submit" disabled={!name.trim() || name.trim() in roles}>
            Add role
          </button>
        </form>
      )}
    </div>
  );
}

function RoleTargets({
  role,
  targets,
  offered,
  source,
  readOnly,
  onChange,
  onRemove,
}: {
  role: string;
  targets: string[];
  offered: string[];
  source: string | undefined;
  readOnly: boolean;
  onChange: (targets: string[]) => void;
  onRemove: (() => void) | null;
}) {
  const left = offered.filter((t) => !targets.includes(t));
  const [adding, setAdding] = useState("");
  const pick = left.includes(adding) ? adding : (left[0] ?? "");
  const title = role === "chat" ? "chat: the default chat model" : role;
  return (
    <section className="role" data-role={role} aria-label={`Role ${role}`}>
      <h3>
        {title} {source ? <span className="muted settings-note">from {source}</span> : null}
      </h3>
      {targets.length === 0 ? <p className="warning">No target: a call for this role cannot be served. Add one.</p> : null}
      <ol className="targets" aria-label={`Targets of ${role}`}>
        {targets.map((t, i) => (
          <li key={t} data-target={t}>
            <code>{t}</code>
            {offered.includes(t) ? null : <span className="badge warn">no provider declares this model</span>}
            {readOnly ? null : (
              <span className="group">
                <button type="button" aria-label={`Move ${t} up in ${role}`} disabled={i === 0} onClick={() => onChange(moved(targets, i, i - 1))}>
                  ↑
                </button>
                <button type="button" aria-label={`Move ${t} down in ${role}`} disabled={i === targets.length - 1} onClick={() => onChange(moved(targets, i, i + 1))}>
                  ↓
                </button>
                <button type="button" className="link danger" onClick={() => onChange(targets.filter((x) => x !== t))}>
                  remove {t}
                </button>
              </span>
            )}
          </li>
        ))}
      </ol>
      {readOnly ? null : (
        <div className="row">
          <select aria-label={`Model to add to ${role}`} value={pick} disabled={!left.length} onChange={(e) => setAdding(e.target.value)}>
            {left.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
          <button type="button" disabled={!pick} onClick={() => onChange([...targets, pick])}>
            Add target
          </button>
          {onRemove === null ? null : (
            <button type="button" className="link danger" onClick={onRemove}>
              remove role {role}
            </button>
          )}
        </div>
      )}
    </section>
  );
}
