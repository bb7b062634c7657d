import { useEffect } from "react";

/** Call `tick` every `ms` milliseconds while the page is shown (not while its tab is hidden). */
export function useEvery(ms: number, tick: () => void): void {
  useEffect(() => {
    const timer = window.setInterval(() => {
      if (!document.hidden) tick();
    }, ms);
    return () => window.clearInterval(timer);
  }, [ms, tick]);
}
