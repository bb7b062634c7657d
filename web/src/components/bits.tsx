import type { ReactNode } from "react";

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
