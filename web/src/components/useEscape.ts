import { useEffect } from "react";

/** Esc anywhere on the page calls `onClose`: a dialog must never trap the person in it. */
export function useEscape(onClose: () => void): void {
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.key === "Escape") onClose();
    }
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
}
