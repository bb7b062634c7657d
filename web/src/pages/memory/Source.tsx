import { type ReactNode } from "react";
import { href } from "../../router";
import { type Fact, memoryHref, short } from "./types";

/** Turns of a chat by their numbers, runs of consecutive ones joined: "turns 3–6, 9". */
function turns(value: unknown): string | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const numbers = value.filter((n): n is number => typeof n === "number").sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < numbers.length; ) {
    let j = i;
    while (j + 1 < numbers.length && numbers[j + 1] === numbers[j] + 1) j += 1;
    parts.push(i === j ? String(numbers[i]) : `${numbers[i]}–${numbers[j]}`);
    i = j + 1;
  }
  return `${numbers.length === 1 ? "turn" : "turns"} ${parts.join(", ")}`;
}

const KNOWN = new Set(["session_id", "messages", "run_id", "node_run_id", "corrects", "by", "retracted_by"]);

/** Where a fact came from, as links: the chat and its turns, the extraction run (and its node
 * run), or the fact a correction replaced and who made it; any other key as it is stored. */
export function Source({ fact }: { fact: Fact }) {
  const source = fact.source;
  const text = (key: string) => (typeof source[key] === "string" ? (source[key] as string) : null);
  const parts: ReactNode[] = [];
  const session = text("session_id");
  const said = turns(source.messages);
  if (session) {
    parts.push(
      <span key="chat">
        chat <a href={`${href("chat")}?session=${encodeURIComponent(session)}`} title={`The chat ${session}`}>
          <code>{short(session)}</code>
        </a>
        {said ? `, ${said}` : ""}
      </span>,
    );
  } else if (said) parts.push(<span key="turns">{said}</span>);
  const run = text("run_id");
  if (run) {
    parts.push(
      <span key="run">
        run{" "}
        <a href={href("runs", run)} title="The run that read the turns and found this fact">
          <code>{short(run)}</code>
        </a>
      </span>,
    );
  }
  const nodeRun = text("node_run_id");
  if (nodeRun) {
    parts.push(
      <span key="node" title={`node run ${nodeRun}`}>
        node run <code>{short(nodeRun)}</code>
      </span>,
    );
  }
  const corrects = text("corrects");
  if (corrects) {
    parts.push(
      <span key="corrects">
        correction of{" "}
        <a href={memoryHref(fact.scope, corrects, true)} title="The fact this one replaced">
          <code>{short(corrects)}</code>
        </a>
      </span>,
    );
  }
  const by = text("by");
  if (by) parts.push(<span key="by">by {by}</span>);
  const retracted = text("retracted_by");
  if (retracted) parts.push(<span key="retracted">retracted by {retracted}</span>);
  for (const [key, value] of Object.entries(source)) {
    if (!KNOWN.has(key)) parts.push(<span key={key}>{`${key}: ${JSON.stringify(value)}`}</span>);
  }
  if (parts.length === 0) return <span className="muted">not recorded</span>;
  return (
    <span className="source">
      {parts.map((part, index) => (
        <span key={index}>
          {index > 0 ? " · " : ""}
          {part}
        </span>
      ))}
    </span>
  );
}
