import { useState } from "react";

/** A destructive action asked about here first (no browser dialog): the button becomes the
 * question with "yes" and "keep it" (focused, so Enter keeps). `link`: drawn as links, for a
 * table row. */
export function Confirmed({
  label,
  question,
  yes,
  what,
  link = false,
  onConfirm,
}: {
  label: string;
  question: string;
  yes: string;
  what: string;
  link?: boolean;
  onConfirm: () => Promise<void>;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const style = (danger = false) => [link ? "link" : "", danger ? "danger" : ""].join(" ").trim() || undefined;

  if (!asking) {
    return (
      <button type="button" className={style(true)} aria-label={what} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={`Confirm: ${what}`}>
      {question}{" "}
      <button
        type="button"
        className={style(true)}
        disabled={busy}
        onClick={() => {
          setBusy(true);
          void onConfirm().finally(() => {
            setBusy(false);
            setAsking(false);
          });
        }}
      >
        {yes}
      </button>
      <button type="button" className={style()} autoFocus disabled={busy} onClick={() => setAsking(false)}>
        keep it
      </button>
    </span>
  );
}
