import { useEffect, useId, useRef, useState } from "react";
import { get, post, q, type Schemas } from "../../api/client";
import { Notice } from "../../components/bits";
import { ErrorView } from "../../components/ErrorView";
import { useApi, when } from "../../components/useApi";
import { go } from "../../router";
import { useEscape } from "../../components/useEscape";

type EvalSet = Schemas["EvalSetOut"];
const NEW = "";
const NAME = /^[a-z0-9][a-z0-9_.-]{0,119}$/;
/** The gate's rules as the server takes them, with its defaults (docs/evaluation.md, "Rules"). */
const RULES = [
  ["max_regressions", "Max regressions", "0", "more regressed cases than this fail the gate"],
  ["alpha", "Alpha (McNemar)", "0.05", "the candidate fails when the test says it is worse at this level"],
  ["max_approved_drop", "Max approved drop (0 to 1)", "0", "how far the pass rate on approved cases may fall: 0.02 is two points"],
  ["min_cases", "Min comparable cases", "10", "fewer cases that both sides answered: inconclusive"],
] as const;
type Rule = (typeof RULES)[number][0];

/** "Evaluate against corrections" for one version of a graph: an existing evaluation set of the
 * graph, or one built here from its corrections and approvals, then the evaluation started
 * (its page opens and follows it). */
export function EvaluateDialog({
  graph,
  version,
  versions,
  onClose,
}: {
  graph: Schemas["GraphOut"];
  version: number;
  versions: number[];
  onClose: () => void;
}) {
  const sets = useApi(() => get<EvalSet[]>(`/api/graphs/${q(graph.id)}/eval-sets`), [graph.id]);
  const [picked, setPicked] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [sources, setSources] = useState({ corrections: true, approvals: true });
  const [baseline, setBaseline] = useState("recorded");
  const [repeat, setRepeat] = useState("1");
  const [rules, setRules] = useState<Record<Rule, string>>(
    Object.fromEntries(RULES.map(([key, , value]) => [key, value])) as Record<Rule, string>,
  );
  const [timeSplit, setTimeSplit] = useState(false);
  const [problem, setProblem] = useState<unknown>(null);
  const [said, setSaid] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ids = useId();
  const list = sets.data ?? [];
  // The newest set is chosen at first; a graph without one starts on building one.
  const chosen = picked ?? (sets.data ? (list[0]?.ref ?? NEW) : null);

  // The keyboard starts inside the dialog; Esc leaves it.
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => box.current?.focus(), []);
  useEscape(onClose);

  async function build() {
    setProblem(null);
    setSaid(null);
    const wanted = name.trim();
    const from = (["corrections", "approvals"] as const).filter((s) => sources[s]);
    if (!NAME.test(wanted)) {
      setProblem(
        new Error(
          wanted
            ? `“${wanted}” cannot name a set: use lower-case letters, digits, '_', '.' and '-', starting with a letter or digit`
            : "give the new set a name, e.g. triage: lower-case letters, digits, '_', '.' and '-'",
        ),
      );
      return;
    }
    if (from.length === 0) {
      setProblem(new Error("tick corrections, approvals or both: a set takes its cases from what people said"));
      return;
    }
    setBusy(true);
    try {
      const made = await post<EvalSet>(`/api/graphs/${q(graph.id)}/eval-sets`, { name: wanted, sources: from });
      setSaid(`Built ${made.ref}: ${describe(made)}.`);
      setPicked(made.ref);
      setName("");
      sets.reload();
    } catch (cause) {
      setProblem(cause);
    } finally {
      setBusy(false);
    }
  }

  async function start() {
    setProblem(null);
    if (!chosen) {
      setProblem(new Error("choose a set, or build one first: the evaluation scores the version on its cases"));
      return;
    }
    const numbers: Record<string, number> = {};
    for (const [key, label] of [["repeat", "Repetitions"], ...RULES] as const) {
      const text = key === "repeat" ? repeat : rules[key];
      const value = Number(text);
      if (text.trim() === "" || !Number.isFinite(value) || value < 0) {
        setProblem(new Error(`${label} must be a number of 0 or more, not “${text}”`));
        return;
      }
      numbers[key] = value;
    }
    setBusy(true);
    try {
      const started = await post<Schemas["EvaluationStartedOut"]>(`/api/graphs/${q(graph.id)}/evaluations`, {
        set: chosen,
        version,
        ...(baseline === "recorded" ? {} : { baseline_version: Number(baseline) }),
        ...numbers,
        time_split: timeSplit,
      });
      go("evaluations", started.id);
    } catch (cause) {
      setProblem(cause);
      setBusy(false);
    }
  }

  return (
    <>
      <div className="backdrop" onClick={onClose} />
      <div ref={box} tabIndex={-1} className="dialog evaluate" role="dialog" aria-modal="true" aria-labelledby={`${ids}-title`}>
        <button type="button" className="close" aria-label="Close" onClick={onClose}>
          ✕
        </button>
        <h2 id={`${ids}-title`}>
          Evaluate version {version} of {graph.slug} against corrections
        </h2>
        <p className="muted">
          Each case is something a person corrected or approved; version {version} answers it again, and the gate compares
          its answers with the baseline's.
        </p>
        <ErrorView error={sets.error} />
        <fieldset className="sets">
          <legend>Evaluation set</legend>
          {sets.data && list.length === 0 ? (
            <p className="muted">This graph has no evaluation set yet: build one from its corrections and approvals.</p>
          ) : null}
          {list.map((s) => (
            <label className="check" key={s.id}>
              <input type="radio" name={`${ids}-set`} checked={chosen === s.ref} onChange={() => setPicked(s.ref)} />{" "}
              <code>{s.ref}</code> · {describe(s)} · built {when(s.created_at)}
            </label>
          ))}
          <label className="check">
            <input type="radio" name={`${ids}-set`} checked={chosen === NEW} onChange={() => setPicked(NEW)} /> build a new
            set
          </label>
          {chosen === NEW ? (
            <div className="new-set">
              <div className="row">
                <label htmlFor={`${ids}-name`} className="field-label">
                  Set name
                </label>
                <input
                  id={`${ids}-name`}
                  value={name}
                  placeholder={graph.slug.replace(/[^a-z0-9_.-]/g, "_")}
                  onChange={(e) => setName(e.target.value)}
                />
              </div>
              <fieldset className="show">
                <legend>Cases from</legend>
                <label className="check">
                  <input
                    type="checkbox"
                    checked={sources.corrections}
                    onChange={(e) => setSources({ ...sources, corrections: e.target.checked })}
                  />{" "}
                  corrections
                </label>
                <label className="check">
                  <input
                    type="checkbox"
                    checked={sources.approvals}
                    onChange={(e) => setSources({ ...sources, approvals: e.target.checked })}
                  />{" "}
                  approvals
                </label>
              </fieldset>
              <button type="button" disabled={busy} onClick={() => void build()}>
                Build set
              </button>
            </div>
          ) : null}
        </fieldset>
        <Notice>{said}</Notice>
        <fieldset className="eval-options">
          <legend>How</legend>
          <div className="field">
            <label htmlFor={`${ids}-baseline`} className="field-label">
              Baseline
            </label>
            <select id={`${ids}-baseline`} value={baseline} onChange={(e) => setBaseline(e.target.value)}>
              <option value="recorded">the recorded outputs (costs nothing)</option>
              {versions
                .filter((v) => v !== version)
                .map((v) => (
                  <option key={v} value={String(v)}>
                    version {v}, run afresh
                  </option>
                ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${ids}-repeat`} className="field-label">
              Repetitions (candidate runs per case)
            </label>
            <input id={`${ids}-repeat`} type="number" min={1} max={20} value={repeat} onChange={(e) => setRepeat(e.target.value)} />
          </div>
          <label className="check">
            <input type="checkbox" checked={timeSplit} onChange={(e) => setTimeSplit(e.target.checked)} /> split by time
            (few-shot examples leave out corrections made after each case's)
          </label>
        </fieldset>
        <fieldset className="eval-options">
          <legend>The gate's rules</legend>
          {RULES.map(([key, label, fallback, help]) => (
            <div className="field" key={key}>
              <label htmlFor={`${ids}-${key}`} className="field-label">
                {label}
              </label>
              <input
                id={`${ids}-${key}`}
                type="number"
                step="any"
                min={0}
                value={rules[key]}
                aria-describedby={`${ids}-${key}-help`}
                onChange={(e) => setRules({ ...rules, [key]: e.target.value })}
              />
              <span id={`${ids}-${key}-help`} className="field-help muted">
                {help} (default {fallback})
              </span>
            </div>
          ))}
        </fieldset>
        <ErrorView error={problem} onDismiss={() => setProblem(null)} />
        <div className="row">
          <button type="button" className="accept" disabled={busy || chosen === null} onClick={() => void start()}>
            Start the evaluation
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </>
  );
}

/** A set's size in words: its cases, by label, and what was left out. */
function describe(found: EvalSet): string {
  const labels = (found.built_from.labels ?? {}) as Record<string, number>;
  const parts = Object.entries(labels).map(([label, n]) => `${n} ${label}`);
  const skipped = (found.built_from.skipped as { count?: number } | undefined)?.count ?? 0;
  return `${found.cases} ${found.cases === 1 ? "case" : "cases"}${parts.length ? ` (${parts.join(", ")})` : ""}${
    skipped ? `, ${skipped} skipped` : ""
  }`;
}
