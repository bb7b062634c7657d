import { useState } from "react";
import { Field } from "../../components/bits";
import { moved } from "./Roles";
import { type ProviderEntry, targetsOf } from "./types";

type Limits = Pick<ProviderEntry, "max_concurrency" | "rpm" | "tpm">;

/** The pool: the order in which providers are tried (dragged into place, or moved with the
 * arrow buttons from the keyboard), each provider's calls at once, requests and tokens per
 * minute, and the model tried when every target of a role failed. */
export function Pool({
  order,
  degradeTo,
  providers,
  readOnly,
  onOrder,
  onDegrade,
  onLimits,
}: {
  order: string[];
  degradeTo: string | null;
  providers: ProviderEntry[];
  readOnly: boolean;
  onOrder: (order: string[]) => void;
  onDegrade: (target: string | null) => void;
  onLimits: (id: string, limits: Partial<Limits>) => void;
}) {
  // Providers the order does not name yet come after it, as declared.
  const shown = [...order.filter((id) => providers.some((p) => p.id === id)), ...providers.map((p) => p.id).filter((id) => !order.includes(id))];
  const [dragged, setDragged] = useState<string | null>(null);
  const [over, setOver] = useState<string | null>(null);
  const move = (from: number, to: number) => onOrder(moved(shown, from, to));
  const optional = (text: string) => (text.trim() === "" ? null : Number(text));
  const targets = targetsOf(providers);
  return (
    <div className="pool">
      <p className="muted">
        A role's targets are tried by this priority: a provider higher up is tried first. Drag a provider into place, or
        move it with its arrows.
      </p>
      <ol className="pool-order" aria-label="Priority order">
        {shown.map((id, i) => {
          const p = providers.find((x) => x.id === id)!;
          return (
            <li
              key={id}
              data-provider={id}
              draggable={!readOnly}
              className={[dragged === id ? "dragged" : "", over === id && dragged !== id ? "drop-here" : ""].filter(Boolean).join(" ") || undefined}
              onDragStart={(event) => {
                event.dataTransfer.setData("text/plain", id);
                event.dataTransfer.effectAllowed = "move";
                setDragged(id);
              }}
              onDragOver={(event) => {
                if (readOnly || !dragged) return;
                event.preventDefault();
                event.dataTransfer.dropEffect = "move";
                setOver(id);
              }}
              onDragLeave={() => setOver((now) => (now === id ? null : now))}
              onDrop={(event) => {
                event.preventDefault();
                const from = shown.indexOf(dragged ?? event.dataTransfer.getData("text/plain"));
                if (from >= 0) move(from, i);
                setDragged(null);
                setOver(null);
              }}
              onDragEnd={() => {
                setDragged(null);
                setOver(null);
              }}
            >
              <span className="grip" aria-hidden="true">
                ⋮⋮
              </span>
              <span className="rank">{i + 1}.</span> <code>{id}</code>
              {p.enabled ? null : <span className="badge warn">disabled</span>}
              {readOnly ? null : (
                <span className="group">
                  <button type="button" aria-label={`Move ${id} up`} disabled={i === 0} onClick={() => move(i, i - 1)}>
                    ↑
                  </button>
                  <button type="button" aria-label={`Move ${id} down`} disabled={i === shown.length - 1} onClick={() => move(i, i + 1)}>
                    ↓
                  </button>
                </span>
              )}
              <span className="limits">
                <label className="field">
                  <span className="field-label">calls at once</span>
                  <input aria-label={`${id} calls at once`} type="number" min={1} value={p.max_concurrency} readOnly={readOnly} onChange={(e) => onLimits(id, { max_concurrency: Number(e.target.value) })} />
                </label>
                <label className="field">
                  <span className="field-label">requests / minute</span>
                  <input aria-label={`${id} requests / minute`} type="number" min={1} value={p.rpm ?? ""} placeholder="no limit" readOnly={readOnly} onChange={(e) => onLimits(id, { rpm: optional(e.target.value) })} />
                </label>
                <label className="field">
                  <span className="field-label">tokens / minute</span>
                  <input aria-label={`${id} tokens / minute`} type="number" min={1} value={p.tpm ?? ""} placeholder="no limit" readOnly={readOnly} onChange={(e) => onLimits(id, { tpm: optional(e.target.value) })} />
                </label>
              </span>
            </li>
          );
        })}
      </ol>
      {shown.length === 0 ? <p className="muted">No provider is configured.</p> : null}
      <Field label="When every target of a role failed, degrade to">
        <select value={degradeTo ?? ""} disabled={readOnly} onChange={(e) => onDegrade(e.target.value || null)}>
          <option value="">nothing: the call fails</option>
          {(degradeTo && !targets.includes(degradeTo) ? [degradeTo, ...targets] : targets).map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </Field>
    </div>
  );
}
