import { useCallback, useState } from "react";

/** A value with undo and redo: every `commit` is one step back. */
export function useHistory<T>(initial: T): {
  value: T;
  /** Store `next` as one step; steps with the same `coalesce` key in a row are one step
   * (typing in a field is one undo, not one per key). */
  commit: (next: T, coalesce?: string) => void;
  reset: (next: T) => void;
  undo: () => void;
  redo: () => void;
  canUndo: boolean;
  canRedo: boolean;
} {
  const [state, setState] = useState<{ past: T[]; value: T; future: T[]; key?: string }>({
    past: [],
    value: initial,
    future: [],
  });
  const commit = useCallback(
    (next: T, coalesce?: string) =>
      setState((s) => {
        if (next === s.value) return s;
        if (coalesce && coalesce === s.key) return { ...s, value: next, future: [] };
        return { past: [...s.past.slice(-199), s.value], value: next, future: [], key: coalesce };
      }),
    [],
  );
  const reset = useCallback((next: T) => setState({ past: [], value: next, future: [] }), []);
  const undo = useCallback(
    () =>
      setState((s) =>
        s.past.length
          ? { past: s.past.slice(0, -1), value: s.past[s.past.length - 1], future: [s.value, ...s.future] }
          : s,
      ),
    [],
  );
  const redo = useCallback(
    () => setState((s) => (s.future.length ? { past: [...s.past, s.value], value: s.future[0], future: s.future.slice(1) } : s)),
    [],
  );
  return { value: state.value, commit, reset, undo, redo, canUndo: state.past.length > 0, canRedo: state.future.length > 0 };
}
