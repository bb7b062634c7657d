import { useState } from "react";

/** A one-line text input whose value is handed on when it loses focus or on Enter, not per
 * keystroke: renaming a node or a field is one edit (one undo step), not one per letter. Enter
 * never submits a form around it. */
export function Committed({
  label,
  value,
  onCommit,
  placeholder,
}: {
  label: string;
  value: string;
  onCommit: (text: string) => void;
  placeholder?: string;
}) {
  const [text, setText] = useState(value);
  const [was, setWas] = useState(value);
  if (value !== was) {
    setWas(value);
    setText(value);
  }
  return (
    <input
      aria-label={label}
      placeholder={placeholder}
      value={text}
      onChange={(e) => setText(e.target.value)}
      onBlur={() => text !== value && onCommit(text)}
      onKeyDown={(e) => {
        if (e.key !== "Enter") return;
        e.preventDefault();
        if (text !== value) onCommit(text);
      }}
    />
  );
}
