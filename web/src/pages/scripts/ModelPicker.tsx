import { useEffect } from "react";
import { get, type Schemas } from "../../api/client";
import { ErrorView } from "../../components/ErrorView";
import { useApi } from "../../components/useApi";
import { href } from "../../router";

type Role = Schemas["RoleOut"];

export function roleLabel(role: Role): string {
  const serves = role.serves ?? "cannot be served here";
  return `${role.role} → ${serves}${role.default ? " (default)" : ""}`;
}

/** The model a generation asks: a role of this server (the default role first), each saying
 * what serves it; a role nothing can serve is disabled and says why. */
export function ModelPicker({
  role,
  onRole,
  model,
  onModel,
}: {
  role: string;
  onRole: (role: string) => void;
  model: string;
  onModel: (model: string) => void;
}) {
  const { data, error } = useApi(() => get<Schemas["ProvidersOut"]>("/api/providers"), []);
  const roles = data?.roles ?? [];
  const refused = roles.filter((r) => r.refusal);
  const chosen = roles.find((r) => r.role === role);

  useEffect(() => {
    // start on the default role, or on the first that can be served
    if (!roles.length || (chosen && !chosen.refusal)) return;
    const usable = roles.find((r) => r.default && !r.refusal) ?? roles.find((r) => !r.refusal);
    if (usable && usable.role !== role) onRole(usable.role);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [data]);

  return (
    <div className="model-picker">
      <ErrorView error={error} />
      {data && !data.provider ? (
        <p className="warning" role="alert">
          No model is configured: start the server with --llm local, --llm scripted:FILE, or a plait.toml.
        </p>
      ) : null}
      <div className="row">
        <label className="field">
          <span className="field-label">Model role</span>
          <select value={role} onChange={(e) => onRole(e.target.value)} disabled={!roles.length}>
            {roles.map((r) => (
              <option key={r.role} value={r.role} disabled={Boolean(r.refusal)}>
                {roleLabel(r)}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span className="field-label">Model (optional, by name)</span>
          <input value={model} onChange={(e) => onModel(e.target.value)} placeholder="the role's own" spellCheck={false} />
        </label>
        <span className="muted">
          Roles and their models are set in <a href={`${href("settings")}?tab=models`}>Settings</a>.
        </span>
      </div>
      {refused.length ? (
        <ul className="warning refused-roles" aria-label="Roles that cannot be served">
          {refused.map((r) => (
            <li key={r.role} data-role={r.role}>
              <strong>{r.role}</strong> cannot be served: {r.refusal}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
