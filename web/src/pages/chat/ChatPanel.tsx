import { useEffect, useReducer, useRef, useState } from "react";
import { followChat } from "../../api/chatEvents";
import { type Answer, get, post, q, type Schemas } from "../../api/client";
import { ErrorView } from "../../components/ErrorView";
import { InputFields, inputOf, inputProperties, type InputValues } from "../../components/InputFields";
import type { GraphDoc } from "../../graph/model";
import { MessageItem, Progress } from "./cards";
import { acceptedGraph, EMPTY, openCard, proposedNow, reduce, runInFlight, working } from "./conversation";
import type { DraftRef } from "./overlay";

type Session = Answer<"/api/chat/sessions", "post">;

export interface ChatPanelProps {
  /** The conversation to show; null: none yet (the first message starts one). */
  sessionId: string | null;
  /** The stored graph the conversation works on (a canvas's); null: a new graph. */
  graph: { ref: string; name: string } | null;
  /** A conversation was started (by the first message). */
  onSession: (sessionId: string) => void;
  /** The draft proposed now, to draw on the canvas (null: none). */
  onDraft: (draft: DraftRef | null) => void;
  /** A draft of conversation `sessionId` was accepted: stored as `version` of graph `graph` (its slug). */
  onAccepted: (graph: string, version: number, sessionId: string) => void;
  onClose?: () => void;
}

/** A conversation that designs the graph (or a new one): the messages, the designer's progress,
 * question cards as forms, proposed drafts with their diff to accept or reject, runs with their
 * nodes' progress and answers as they are written; followed live on the chat's event stream. */
export function ChatPanel({ sessionId, graph, onSession, onDraft, onAccepted, onClose }: ChatPanelProps) {
  const [state, dispatch] = useReducer(reduce, EMPTY);
  const [connected, setConnected] = useState(false);
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [running, setRunning] = useState(false);
  const log = useRef<HTMLDivElement>(null);
  // The conversation followed: the page's, or the one the first message just started (before
  // the page's address names it).
  const [active, setActive] = useState<string | null>(sessionId);
  useEffect(() => setActive(sessionId), [sessionId]);
  // Which stream is connected now, and who waits for one to be: a new conversation's first
  // message is sent once its stream is read, so that the designer's first round is seen too.
  const up = useRef<string | null>(null);
  const waiting = useRef(new Map<string, (() => void)[]>());

  useEffect(() => {
    dispatch({ type: "reset" });
    setConnected(false);
    if (!active) return;
    const release = () => {
      (waiting.current.get(active) ?? []).forEach((resolve) => resolve());
      waiting.current.delete(active);
    };
    const stop = followChat(active, {
      onMessage: (message) => dispatch({ type: "message", message }),
      onProgress: (progress) => dispatch({ type: "progress", progress }),
      onRun: (event) => dispatch({ type: "run", event }),
      onConnected: (reading) => {
        setConnected(reading);
        up.current = reading ? active : up.current === active ? null : up.current;
        if (reading) release();
      },
      onRefused: (refusal) => {
        setProblem(refusal);
        release();
      },
    });
    return () => {
      if (up.current === active) up.current = null;
      stop();
    };
  }, [active]);

  /** Resolves once the stream of conversation `id` is read (or was refused). */
  function streaming(id: string): Promise<void> {
    if (up.current === id) return Promise.resolve();
    return new Promise((resolve) => waiting.current.set(id, [...(waiting.current.get(id) ?? []), resolve]));
  }

  const shown = proposedNow(state, active);
  const shownKey = shown ? `${shown.draftId}/${shown.seq}` : "";
  useEffect(() => {
    onDraft(shown);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shownKey]);

  // the newest line in view, as a conversation reads
  const size = state.messages.length + state.progress.length;
  useEffect(() => {
    const list = log.current;
    if (list) list.scrollTop = list.scrollHeight;
  }, [size, state.runs]);

  // the chat takes one thing at a time: a turn, or a run it follows
  const thinking = working(state) || runInFlight(state);
  const card = openCard(state);
  const runnable = acceptedGraph(state) ?? graph?.ref ?? null;

  /** The conversation to send to: this one, or a new one (on the page's graph, if any). */
  async function session(firstText: string): Promise<string> {
    if (active) return active;
    const title = graph ? `${graph.name}: ${firstText}` : firstText;
    const body: Schemas["SessionIn"] = { title: title.slice(0, 80), ...(graph ? { graph: graph.ref } : {}) };
    const opened = await post<Session>("/api/chat/sessions", body);
    setActive(opened.id);
    onSession(opened.id);
    await streaming(opened.id);
    return opened.id;
  }

  async function act(work: () => Promise<void>): Promise<boolean> {
    setProblem(null);
    setBusy(true);
    try {
      await work();
      return true;
    } catch (cause) {
      setProblem(cause);
      return false;
    } finally {
      setBusy(false);
    }
  }

  const send = (text: string) =>
    act(async () => {
      const id = await session(text);
      await post<Schemas["TakenOut"]>(`/api/chat/sessions/${q(id)}/messages`, { text });
    });

  const answer = (answers: Record<string, string | string[]>) =>
    act(async () => {
      await post<Schemas["TakenOut"]>(`/api/chat/sessions/${q(active!)}/answers`, { answers });
    });

  const decide = (draftId: string, how: "accept" | "reject") =>
    act(async () => {
      const said = await post<Schemas["MessageOut"]>(`/api/chat/sessions/${q(active!)}/drafts/${q(draftId)}/${how}`);
      dispatch({ type: "message", message: said });
      if (how === "accept" && typeof said.content.graph === "string") {
        onAccepted(said.content.graph, Number(said.content.version), active!);
      }
    });

  const startRun = (ref: string, input: Record<string, unknown>) =>
    act(async () => {
      const body: Pick<Schemas["RunIn"], "input" | "graph"> = { input, graph: ref };
      await post<Schemas["RunStartedOut"]>(`/api/chat/sessions/${q(active!)}/runs`, body);
      setRunning(false);
    });

  return (
    <aside className="panel chat-panel" aria-label="Chat">
      <div className="chat-head">
        <h2>Chat</h2>
        <span className="muted">
          {graph ? (
            <>
              on <code>{graph.ref}</code>
            </>
          ) : (
            "a new graph"
          )}
          {active && !connected ? " · connecting…" : ""}
        </span>
        {onClose ? (
          <button type="button" className="link" onClick={onClose}>
            Close the chat
          </button>
        ) : null}
      </div>
      <div className="chat-log" role="log" aria-label="Conversation" ref={log} tabIndex={0}>
        <ol>
          {state.messages.length === 0 && state.progress.length === 0 ? (
            <li className="muted">
              {graph
                ? "Say what to change in this graph. What the chat proposes is drawn on the canvas for you to accept or reject; nothing changes before you accept."
                : "Say what the graph should do. What the chat proposes is drawn on the canvas; it is stored only when you accept it."}
            </li>
          ) : null}
          <Progress lines={state.progress} after={0} />
          {state.messages.map((message) => (
            <MessageItem
              key={message.seq}
              message={message}
              state={state}
              current={shown?.seq === message.seq}
              open={card?.seq === message.seq}
              busy={busy || thinking}
              onAnswer={answer}
              onDecide={decide}
            />
          ))}
          {working(state) ? (
            <li className="chat-line muted" role="status" aria-busy="true">
              The designer is working on it…
            </li>
          ) : null}
        </ol>
      </div>
      <ErrorView error={problem} onDismiss={() => setProblem(null)} />
      {running && runnable && active ? (
        <RunForm graphRef={runnable} busy={busy} onStart={(input) => void startRun(runnable, input)} onCancel={() => setRunning(false)} />
      ) : null}
      {!running && runnable && active ? (
        <div className="row">
          <button type="button" onClick={() => setRunning(true)} disabled={thinking}>
            Run {runnable}…
          </button>
        </div>
      ) : null}
      <Composer disabled={busy || thinking} waiting={card !== null} onSend={send} />
    </aside>
  );
}

/** The run's input, in the form "Start a run…" shows: made from the graph's `input_schema`. */
function RunForm({
  graphRef,
  busy,
  onStart,
  onCancel,
}: {
  graphRef: string;
  busy: boolean;
  onStart: (input: Record<string, unknown>) => void;
  onCancel: () => void;
}) {
  const [schema, setSchema] = useState<unknown>(undefined);
  const [problem, setProblem] = useState<unknown>(null);
  const [values, setValues] = useState<InputValues>({});
  useEffect(() => {
    let live = true;
    get<Schemas["GraphOut"]>(`/api/graphs/${q(graphRef)}`).then(
      (stored) => live && setSchema((stored.graph as GraphDoc).input_schema ?? {}),
      (cause) => live && setProblem(cause),
    );
    return () => {
      live = false;
    };
  }, [graphRef]);
  return (
    <form
      className="chat-run"
      aria-label="Run input"
      onSubmit={(e) => {
        e.preventDefault();
        onStart(inputOf(schema, values));
      }}
    >
      <h3>
        Run <code>{graphRef}</code>
      </h3>
      {schema === undefined && !problem ? <p aria-busy="true">Loading its input…</p> : null}
      {schema !== undefined && inputProperties(schema).length === 0 ? (
        <p className="muted">Its input declares no fields: the run starts with an empty input.</p>
      ) : null}
      {schema !== undefined ? <InputFields schema={schema} values={values} onChange={setValues} /> : null}
      <ErrorView error={problem} />
      <div className="row">
        <button type="submit" disabled={busy || schema === undefined}>
          Start the run
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The message box: Enter sends, Shift+Enter starts a new line. */
function Composer({ disabled, waiting, onSend }: { disabled: boolean; waiting: boolean; onSend: (text: string) => Promise<boolean> }) {
  const [text, setText] = useState("");
  const submit = async () => {
    const said = text.trim();
    if (!said || disabled) return;
    if (await onSend(said)) setText("");
  };
  return (
    <form
      className="composer"
      aria-label="Send a message"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <textarea
        aria-label="Message"
        value={text}
        maxLength={8000}
        placeholder={waiting ? "Answer the questions above, or say more" : "What should the graph do, or what should change?"}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            void submit();
          }
        }}
      />
      <button type="submit" disabled={disabled || !text.trim()}>
        Send
      </button>
    </form>
  );
}
