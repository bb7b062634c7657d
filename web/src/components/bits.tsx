import { type ReactElement, type ReactNode, cloneElement, useId } from "react";

/** A table's header row: one cell per label (an empty label: a column of buttons). */
export function Head({ labels }: { labels: string[] }) {
  return (
    <thead>
      <tr>
        {labels.map((label, index) => (
          <th key={index}>{label}</th>
        ))}
      </tr>
    </thead>
  );
}

/** What an action did, said where screen readers announce it; nothing when there is nothing. */
export function Notice({ children }: { children: ReactNode }) {
  if (children === null || children === undefined || children === false || children === "") return null;
  return (
    <p className="notice" role="status">
      {children}
    </p>
  );
}

/** A labelled control: the label names the control by its id (a label wrapped around a select
 * would add the chosen option to the control's name). */
export function Field({ label, children }: { label: string; children: ReactElement<{ id?: string }> }) {
  const id = useId();
  return (
    <div className="field">
      <label className="field-label" htmlFor={id}>
        {label}
      </label>
      {cloneElement(children, { id })}
    </div>
  );
}
