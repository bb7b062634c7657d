import { type ReactNode, useEffect, useReducer, useRef, useState } from "react";
import { type ChatMessage, followChat } from "../../api/chatEvents";
import { type Answer, get, post, q, type Schemas } from "../../api/client";
import { ErrorView, Hint } from "../../components/ErrorView";
import { FailureView } from "../../components/FailureView";
import { InputFields, inputOf, inputProperties, type InputValues } from "../../components/InputFields";
import type { GraphDoc } from "../../graph/model";
import { href } from "../../router";
import {
  acceptedGraph,
  type Conversation,
  EMPTY,
  openCard,
  type ProgressLine,
  proposedNow,
  reduce,
  runInFlight,
  type RunProgress,
  working,
} from "./conversation";
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

function Progress({ lines, after }: { lines: ProgressLine[]; after: number }) {
  return (
    <>
      {lines
        .filter((line) => line.after === after)
        .map((line, index) =>
          line.kind === "round" ? (
            <li key={`p${after}-${index}`} className="chat-line tool">
              ⚙ round {line.round}: asking the designer
              {line.runId ? (
                <>
                  {" "}
                  (<a href={href("runs", line.runId)}>its run</a>)
                </>
              ) : null}
            </li>
          ) : (
            <li key={`p${after}-${index}`} className="chat-line tool">
              ▶ run started{line.runId ? <> (<a href={href("runs", line.runId)}>{line.runId.slice(0, 8)}</a>)</> : null}
            </li>
          ),
        )}
    </>
  );
}

function MessageItem({
  message,
  state,
  current,
  open,
  busy,
  onAnswer,
  onDecide,
}: {
  message: ChatMessage;
  state: Conversation;
  current: boolean;
  open: boolean;
  busy: boolean;
  onAnswer: (answers: Record<string, string | string[]>) => Promise<boolean>;
  onDecide: (draftId: string, how: "accept" | "reject") => Promise<boolean>;
}) {
  const content = message.content;
  const text = typeof content.text === "string" ? content.text : "";
  let body: ReactNode = null;
  switch (message.kind) {
    case "text":
      body = <p className="chat-text">{text}</p>;
      break;
    case "answers":
      body = <Answers answers={(content.answers ?? {}) as Record<string, unknown>} />;
      break;
    case "questions": {
      // a card answered shows what was answered
      const reply = state.messages.find((m) => m.seq > message.seq && (m.kind === "answers" || m.kind === "questions"));
      const given = reply?.kind === "answers" ? ((reply.content.answers ?? {}) as Record<string, string | string[]>) : {};
      body = (
        <>
          {text ? <p className="chat-text">{text}</p> : null}
          <QuestionCard message={message} given={given} open={open} busy={busy} onAnswer={onAnswer} />
        </>
      );
      break;
    }
    case "draft":
      body = <DraftCard message={message} current={current} busy={busy} onDecide={onDecide} />;
      break;
    case "run": {
      // one card per run, where it started: its progress, then how it ended
      const first = state.messages.find((m) => m.kind === "run" && m.run_id === message.run_id);
      if (first && first.seq !== message.seq) return null;
      const last = [...state.messages].reverse().find((m) => m.kind === "run" && m.run_id === message.run_id) ?? message;
      body = <RunCard message={last} progress={message.run_id ? state.runs[message.run_id] : undefined} />;
      break;
    }
    case "error":
      body = (
        <p className="error chat-error">
          {text || "Something went wrong."}
          {message.run_id ? (
            <>
              {" "}
              <a href={href("runs", message.run_id)}>Open the run</a>
            </>
          ) : null}
        </p>
      );
      break;
    default:
      body = <p className="chat-text">{text}</p>;
  }
  return (
    <>
      <li className={`chat-message from-${message.role} kind-${message.kind}`} data-seq={message.seq} data-kind={message.kind}>
        <span className="chat-who">{message.role === "user" ? "You" : "Plait"}</span>
        {body}
      </li>
      <Progress lines={state.progress} after={message.seq} />
    </>
  );
}

function Answers({ answers }: { answers: Record<string, unknown> }) {
  return (
    <p className="chat-text">
      {Object.entries(answers).map(([id, value], index) => (
        <span key={id}>
          {index ? "; " : ""}
          {id}: {Array.isArray(value) ? value.join(", ") : String(value)}
        </span>
      ))}
    </p>
  );
}

interface Question {
  id: string;
  text: string;
  kind: "single" | "multiple" | "text";
  choices?: string[];
}

/** A question card as a form: a choice of one (radio buttons), of several (check boxes), or text.
 * Only the card waiting for answers can be sent; an earlier one shows its questions. */
function QuestionCard({
  message,
  given,
  open,
  busy,
  onAnswer,
}: {
  message: ChatMessage;
  given: Record<string, string | string[]>;
  open: boolean;
  busy: boolean;
  onAnswer: (answers: Record<string, string | string[]>) => Promise<boolean>;
}) {
  const questions = (Array.isArray(message.content.questions) ? message.content.questions : []) as Question[];
  const [typed, setValues] = useState<Record<string, string | string[]>>({});
  const values = open ? typed : { ...typed, ...given };
  const name = (id: string) => `q${message.seq}-${id}`;
  const missing = questions.filter((question) => {
    const value = values[question.id];
    return question.kind === "multiple" ? false : !value || (typeof value === "string" && !value.trim());
  });
  return (
    <form
      className="question-card"
      aria-label="Questions"
      onSubmit={(event) => {
        event.preventDefault();
        const answers: Record<string, string | string[]> = {};
        for (const question of questions) answers[question.id] = values[question.id] ?? (question.kind === "multiple" ? [] : "");
        void onAnswer(answers);
      }}
    >
      {questions.map((question) => (
        <fieldset key={question.id} className="question" disabled={!open}>
          <legend>{question.text}</legend>
          {question.kind === "text" || !question.choices?.length ? (
            <input
              type="text"
              aria-label={question.text}
              name={name(question.id)}
              value={typeof values[question.id] === "string" ? (values[question.id] as string) : ""}
              onChange={(e) => setValues({ ...values, [question.id]: e.target.value })}
            />
          ) : (
            question.choices.map((choice) => {
              const multiple = question.kind === "multiple";
              const picked = values[question.id];
              const checked = multiple ? Array.isArray(picked) && picked.includes(choice) : picked === choice;
              return (
                <label key={choice} className="choice">
                  <input
                    type={multiple ? "checkbox" : "radio"}
                    name={name(question.id)}
                    value={choice}
                    checked={checked}
                    onChange={(e) => {
                      if (!multiple) setValues({ ...values, [question.id]: choice });
                      else {
                        const before = Array.isArray(picked) ? picked : [];
                        const next = e.target.checked ? [...before, choice] : before.filter((c) => c !== choice);
                        setValues({ ...values, [question.id]: question.choices!.filter((c) => next.includes(c)) });
                      }
                    }}
                  />{" "}
                  {choice}
                </label>
              );
            })
          )}
        </fieldset>
      ))}
      {open ? (
        <button type="submit" disabled={busy || missing.length > 0}>
          Send answers
        </button>
      ) : (
        <p className="muted">Answered.</p>
      )}
    </form>
  );
}

const STATUS_WORDS: Record<string, string> = {
  proposed: "proposed",
  invalid: "not valid",
  accepted: "accepted",
  rejected: "rejected",
};

/** A draft: the reply, its diff lines, what is wrong with it (an invalid one: nothing to accept),
 * and, for the one proposed now, Accept and Reject. */
function DraftCard({
  message,
  current,
  busy,
  onDecide,
}: {
  message: ChatMessage;
  current: boolean;
  busy: boolean;
  onDecide: (draftId: string, how: "accept" | "reject") => Promise<boolean>;
}) {
  const content = message.content;
  const status = String(content.status ?? "");
  const text = typeof content.text === "string" ? content.text : "";
  const lines = (Array.isArray(content.lines) ? content.lines : []) as string[];
  const errors = (Array.isArray(content.errors) ? content.errors : []) as {
    category?: string;
    code?: string;
    message?: string;
    node_id?: string | null;
    hint?: string | null;
  }[];
  const rounds = typeof content.rounds === "number" ? content.rounds : null;
  if (status === "accepted" || status === "rejected") {
    const graph = typeof content.graph === "string" ? content.graph : null;
    return (
      <p className="chat-text" data-status={status}>
        {text}
        {graph ? (
          <>
            {" "}
            <a href={href("graphs", graph)}>Open {graph}</a>
          </>
        ) : null}
      </p>
    );
  }
  return (
    <div className={`draft-card status-${status}`} data-status={status} data-draft={message.draft_id ?? ""}>
      {text ? <p className="chat-text">{text}</p> : null}
      <p className="draft-head">
        <span className={`badge draft-${status}`}>draft {STATUS_WORDS[status] ?? status}</span>
        {rounds ? <span className="muted"> after {rounds === 1 ? "1 round" : `${rounds} rounds`}</span> : null}
        {current ? <span className="muted"> · drawn on the canvas</span> : null}
      </p>
      {lines.length ? (
        <ul className="diff-lines" aria-label="What the draft changes">
          {lines.map((line, index) => (
            <li key={index} className={`diff-line ${line[0] === "+" ? "added" : line[0] === "-" ? "removed" : "changed"}`}>
              <code>{line}</code>
            </li>
          ))}
        </ul>
      ) : status === "proposed" ? (
        <p className="muted">It changes nothing.</p>
      ) : null}
      {errors.length ? (
        <ul className="draft-errors" aria-label="What is wrong with the draft">
          {errors.map((error, index) => (
            <li key={index}>
              <strong>
                {error.category}/{error.code}
              </strong>{" "}
              {error.node_id ? <code>{error.node_id}</code> : null} {error.message}
              <Hint hint={error.hint} />
            </li>
          ))}
        </ul>
      ) : null}
      {status === "invalid" ? <p className="muted">Not valid, so it cannot be accepted: say what to fix in a message.</p> : null}
      {current && status === "proposed" && message.draft_id ? (
        <div className="row">
          <button type="button" className="accept" disabled={busy} onClick={() => void onDecide(message.draft_id!, "accept")}>
            Accept
          </button>
          <button type="button" disabled={busy} onClick={() => void onDecide(message.draft_id!, "reject")}>
            Reject
          </button>
        </div>
      ) : null}
    </div>
  );
}

/** A run the chat started: its nodes as they start and end, each answer as the model writes it,
 * then how the run ended (its output, or why it failed), with a link to its page. */
function RunCard({ message, progress }: { message: ChatMessage; progress?: RunProgress }) {
  const content = message.content;
  const runId = message.run_id ?? String(content.run_id ?? "");
  const said = String(content.status ?? "pending");
  const status = said === "pending" ? progress?.status ?? said : said;
  const error = content.error && typeof content.error === "object" ? (content.error as Record<string, unknown>) : null;
  const cause = error && error.node_error && typeof error.node_error === "object" ? (error.node_error as Record<string, unknown>) : error;
  return (
    <div className="run-card" data-run={runId}>
      <p>
        Run <a href={href("runs", runId)}>{runId.slice(0, 8)}</a> of <code>{String(content.graph ?? "")}</code>
        {content.version ? ` v${String(content.version)}` : ""}:{" "}
        <span className={`pill status-${status}`} data-testid="run-status">
          {status}
        </span>
      </p>
      {progress?.nodes.length ? (
        <ul className="run-nodes" aria-label={`Nodes of run ${runId.slice(0, 8)}`}>
          {progress.nodes.map((node) => (
            <li key={node.id}>
              <code>{node.id}</code> {node.status}
              {node.text ? (
                <pre className="answer" aria-label={`Answer of ${node.id}`}>
                  {node.text}
                </pre>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      {said !== "pending" && content.output !== undefined && content.output !== null ? (
        <pre className="run-output" aria-label="Output">
          {JSON.stringify(content.output, null, 2)}
        </pre>
      ) : null}
      {cause ? <FailureView error={cause} node={typeof cause.node_id === "string" ? cause.node_id : null} /> : null}
    </div>
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
