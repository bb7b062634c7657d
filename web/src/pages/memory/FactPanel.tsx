import { useEffect, useRef, useState } from "react";
import { ApiError, get, post } from "../../api/client";
import { Field } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { useApi, when } from "../../components/useApi";
import { Confirmed } from "../knowledge/Confirmed";
import { correction, MAX_CHARS, type Typed, typedOf } from "./correction";
import { Source } from "./Source";
import { type Fact, type FactDetail, factPath, memoryHref, STATUS, short, triple } from "./types";

/** One fact: its history as a timeline (what it corrected, what corrected it), and, while it is
 * active, a form to correct it and a button to retract it; the page is told what each made. A
 * refusal because the fact changed meanwhile reads it again, so the page shows it as it is now. */
export function FactPanel({
  id,
  all,
  onCorrected,
  onRetracted,
}: {
  id: string;
  all: boolean;
  onCorrected: (made: Fact, old: Fact) => void;
  onRetracted: (fact: Fact) => void;
}) {
  const { data, error, reload } = useApi(() => get<FactDetail>(factPath(id)), [id]);
  const [problem, setProblem] = useState<unknown>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [id]);

  function refused(cause: unknown) {
    setProblem(cause);
    if (cause instanceof ApiError && cause.status === 409) reload();
  }

  async function retract(note: string) {
    setProblem(null);
    try {
      const done = await post<Fact>(factPath(id, "retract"), note ? { note } : {});
      reload();
      onRetracted(done);
    } catch (cause) {
      refused(cause);
    }
  }

  const newest = data?.history[data.history.length - 1];
  return (
    <section className="fact-panel" aria-labelledby="fact-heading">
      <div className="toolbar">
        <h2 id="fact-heading" ref={heading} tabIndex={-1}>
          Fact <code title={id}>{short(id)}</code>
        </h2>
        {data ? <a href={memoryHref(data.scope, null, all)}>close</a> : null}
      </div>
      <ErrorView error={error} />
      {data ? (
        <>
          <p className="fact-text">
            “{data.text}” <span className={`pill fact-${data.status}`} title={STATUS[data.status]}>{data.status}</span>
          </p>
          <h3 id="history-heading">History</h3>
          <History detail={data} />
          <ErrorView error={problem} onDismiss={problem ? () => setProblem(null) : undefined} />
          {data.status === "active" ? (
            <>
              <CorrectForm
                key={data.id}
                fact={data}
                onCorrected={(made) => onCorrected(made, data)}
                onRefused={refused}
              />
              <Retract fact={data} onRetract={retract} />
            </>
          ) : (
            <p className="muted" role="note">
              Only an active fact can be corrected or retracted.
              {newest && newest.status === "active" && newest.id !== data.id ? (
                <>
                  {" "}
                  The active one now: <a href={memoryHref(data.scope, newest.id, all)}>“{newest.text}”</a>.
                </>
              ) : null}
            </p>
          )}
        </>
      ) : null}
    </section>
  );
}

/** What happened to a fact, oldest first: remembered, each correction (by whom, when, why) or
 * newer value the chat said, and a retraction; the fact open on the page is marked. */
function History({ detail }: { detail: FactDetail }) {
  return (
    <ol className="timeline" aria-labelledby="history-heading">
      {detail.history.map((fact) => (
        <li
          key={fact.id}
          data-fact={fact.id}
          className={`fact-${fact.status}`}
          aria-current={fact.id === detail.id ? "step" : undefined}
        >
          <div className="when">
            <time dateTime={new Date(fact.created_at * 1000).toISOString()}>{when(fact.created_at)}</time>{" "}
            <span className="event">
              {"corrects" in fact.source ? "corrected" : "remembered"} by {fact.created_by}
            </span>{" "}
            <span className={`pill fact-${fact.status}`} title={STATUS[fact.status]}>
              {fact.status}
            </span>
            {fact.id === detail.id ? <span className="muted"> (this fact)</span> : null}
          </div>
          <div className="said">
            “{fact.text}” <span className="muted">({triple(fact)})</span>
          </div>
          <div className="muted">
            <Source fact={fact} />
            {fact.valid_from ? ` · true from ${when(fact.valid_from)}` : ""}
          </div>
          {fact.note ? <div className="note">note: {fact.note}</div> : null}
          {fact.status === "superseded" ? <div className="muted">replaced by the fact below</div> : null}
          {fact.status === "retracted" ? <div className="muted">retracted: never recalled again</div> : null}
        </li>
      ))}
    </ol>
  );
}

/** The corrected fact: its parts as they stand, changed where wrong, and why. */
function CorrectForm({
  fact,
  onCorrected,
  onRefused,
}: {
  fact: Fact;
  onCorrected: (made: Fact) => void;
  onRefused: (cause: unknown) => void;
}) {
  const [typed, setTyped] = useState<Typed>(() => typedOf(fact));
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (key: keyof Typed) => (e: { target: { value: string } }) => setTyped({ ...typed, [key]: e.target.value });

  async function submit() {
    setProblem(null);
    const checked = correction(fact, typed);
    if ("problem" in checked) {
      setProblem(checked.problem);
      return;
    }
    setBusy(true);
    try {
      onCorrected(await post<Fact>(factPath(fact.id, "correct"), checked.value));
    } catch (cause) {
      onRefused(cause);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form
      className="kb-form fact-form"
      noValidate
      aria-labelledby="correct-fact"
      onSubmit={(event) => {
        event.preventDefault();
        void submit();
      }}
    >
      <h3 id="correct-fact">Correct this fact</h3>
      <div className="row">
        <Field label="Subject">
          <input value={typed.subject} maxLength={MAX_CHARS} onChange={set("subject")} />
        </Field>
        <Field label="Predicate">
          <input value={typed.predicate} maxLength={MAX_CHARS} onChange={set("predicate")} />
        </Field>
        <Field label="Object">
          <input value={typed.object} maxLength={MAX_CHARS} onChange={set("object")} />
        </Field>
      </div>
      <Field label="Sentence">
        <input className="wide" value={typed.text} aria-describedby="fact-text-hint" onChange={set("text")} />
      </Field>
      <p className="hint" id="fact-text-hint">
        What the chat is shown. Left as it is while a part changes, it is written again from the subject, predicate and
        object.
      </p>
      <Field label="Why (optional note)">
        <input className="wide" value={typed.note} maxLength={MAX_CHARS} onChange={set("note")} />
      </Field>
      {problem ? (
        <p className="error" role="alert">
          {problem}
        </p>
      ) : null}
      <div className="row">
        <button type="submit" disabled={busy}>
          {busy ? "Correcting…" : "Correct"}
        </button>
        <span className="muted">The corrected fact replaces this one; this one stays in the history.</span>
      </div>
    </form>
  );
}

/** Retract: the fact is wrong and nothing replaces it; asked first, with an optional note. */
function Retract({ fact, onRetract }: { fact: Fact; onRetract: (note: string) => Promise<void> }) {
  const [note, setNote] = useState("");
  return (
    <div className="kb-form fact-retract" role="group" aria-labelledby="retract-fact">
      <h3 id="retract-fact">Retract this fact</h3>
      <div className="row">
        <Field label="Why (optional)">
          <input className="wide" value={note} maxLength={MAX_CHARS} onChange={(e) => setNote(e.target.value)} />
        </Field>
        <Confirmed
          label="Retract"
          what={`retract “${fact.text}”`}
          question={`Retract “${fact.text}”? The chat will no longer recall it; it stays in the history.`}
          yes="yes, retract"
          onConfirm={() => onRetract(note.trim())}
        />
      </div>
    </div>
  );
}
