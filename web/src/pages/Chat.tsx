import { useState } from "react";
import { q } from "../api/client";
import { ErrorView } from "../components/ErrorView";
import { GraphView } from "../graph/GraphView";
import { href, replaceQuery } from "../router";
import { ChatPanel } from "./chat/ChatPanel";
import { type DraftRef, type Overlay, useDraftOverlay } from "./chat/overlay";

/** A new graph designed in a conversation (`#/chat`, `#/chat?session=ID`): the chat beside a
 * canvas that draws what it proposes, everything in it added. Accepted, the graph is stored and
 * its own canvas opens, the conversation beside it. */
export function ChatPage({ sessionId }: { sessionId: string | null }) {
  const [shown, setShown] = useState<DraftRef | null>(null);
  const { overlay, error } = useDraftOverlay(shown);
  return (
    <section className="canvas-page chat-page">
      <div className="toolbar">
        <h1>New graph from a chat</h1>
        <span className="muted">
          or <a href={href("new-graph")}>build it yourself</a>
        </span>
      </div>
      <ErrorView error={error} />
      {overlay ? <OverlayNote overlay={overlay} /> : null}
      <div className="split">
        {overlay ? (
          <GraphView key={`draft:${overlay.draftId}:${shown?.seq}`} graph={overlay.graph} marks={overlay.marks} markNotes={overlay.notes} />
        ) : (
          <div className="canvas canvas-waiting" data-testid="canvas">
            <p className="canvas-empty" role="status">
              {shown ? "Drawing the draft…" : "Nothing proposed yet: what the chat proposes is drawn here."}
            </p>
          </div>
        )}
        <ChatPanel
          sessionId={sessionId}
          graph={null}
          onSession={(id) => replaceQuery("session", id)}
          onDraft={setShown}
          onAccepted={(graph, _version, session) => {
            window.location.hash = href("graphs", graph) + `?chat=${q(session)}`;
          }}
        />
      </div>
    </section>
  );
}

/** What the canvas shows while a draft is drawn on it, and the colours' meaning in words. */
export function OverlayNote({ overlay }: { overlay: Overlay }) {
  const { nodes, edges } = overlay.counts;
  const said = (["added", "removed", "changed"] as const)
    .map((mark) => {
      const parts = [count(nodes[mark], "node"), count(edges[mark], "edge")].filter(Boolean).join(" and ");
      return parts ? (
        <span key={mark} className={`legend-${mark}`}>
          {parts} {mark}
          {mark === "removed" ? " (struck out)" : ""}
        </span>
      ) : null;
    })
    .filter(Boolean);
  return (
    <p className="notice overlay-note" role="status" data-testid="overlay-note">
      The chat&apos;s draft is drawn on the canvas:{" "}
      {said.length
        ? said.map((part, index) => (
            <span key={index}>
              {index ? ", " : ""}
              {part}
            </span>
          ))
        : "it changes no node or edge"}
      . Accept or reject it in the chat; until then the graph is unchanged.
    </p>
  );
}

function count(n: number, what: string): string {
  return n === 0 ? "" : `${n} ${what}${n === 1 ? "" : "s"}`;
}
