// The conversation's messages as the chat panel lists them: each message by its kind, the
// designer's progress lines between them, and the cards (questions as a form, a draft with its
// diff to accept or reject, a run with its nodes' progress and answers as they are written).
import { type ReactNode, useState } from "react";
import type { ChatMessage } from "../../api/chatEvents";
import { Hint } from "../../components/ErrorView";
import { FailureView } from "../../components/FailureView";
import { href } from "../../router";
import type { Conversation, ProgressLine, RunProgress } from "./conversation";

export function Progress({ lines, after }: { lines: ProgressLine[]; after: number }) {
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

export function MessageItem({
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
