"""A long chat's memory measured: over a scripted 300-turn conversation, what the chat's designer
is shown of it (the compressed conversation) against the whole conversation replayed, in prompt
tokens per turn and in whether the answer to a question about the person or their project is
still in it, the new value when the fact has changed since.

    .venv/bin/python bench/memory.py [--quick] [--variant N] [--json PATH]

The conversation is drawn from `--variant` (the same number, the same conversation): 300 turns,
each a person's message and the assistant's reply, mostly the requests and small talk of people
designing graphs, with the 40 facts of `bench/memory_facts.yaml` said in 40 of the person's
messages ("I live in Paris.", "The API uses port 8443.") and 10 of them changed later ("I moved to
Lyon last month."). Each turn goes through what the chat does with it: the message is stored,
`remember_leaving` sends the turns leaving the verbatim window to a real run of
`plait.memory_extract` and remembers its facts in the session's memory (the real store), and
`conversation_shown` assembles what the designer reads. The extraction's model is the scripted
provider answering, for each run, the facts of exactly the turns in it as a careful extractor
would write them; the extraction model is not what is measured here, the memory is.

At turns 100, 200 and 300 every fact said before the turn is asked about, in other words than it
was said in ("Which city am I based in these days?"), as that turn's request. Two conditions:

- compressed: `conversation_shown` for the question (recall searches by it);
- full replay: every turn so far, whole, as the chat shows a conversation under its budget.

The reader is an oracle, not a model: it reads the context as a timeline and takes the newest
statement of the fact (the summary's first sentences oldest, then the remembered facts, which hold
what the memory knows of every turn that left the window, then the latest turns verbatim; within
the summary and the turns, later lines are newer). A question is answered when that newest
statement holds the fact's current value; it is `stale` when it holds an older value or the
remembered facts give both, `missing` when no value of the fact is in the context. Tokens are
counted with one counter for both conditions (tiktoken's o200k_base when installed, else ~4
characters a token), over the conversation's part of the prompt only: the draft, the catalog and
the instructions around it are the same in both.

`--quick`: 60 turns, 12 facts (3 changed), questions at turns 30 and 60, under a minute. Progress
goes to stderr, the tables to stdout; `--json` also writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FACTS = Path(__file__).resolve().parent / "memory_facts.yaml"
sys.path.insert(0, str(ROOT))

from bench._machine import machine  # noqa: E402
from plait.evolve.system import open_store  # noqa: E402
from plait.llm.tokens import ESTIMATE, TokenCounter, tiktoken_counter  # noqa: E402
from plait.runs._chat_memory import conversation_shown, remember_leaving  # noqa: E402
from plait.runs._designer import message_line  # noqa: E402
from plait.runs.session import RunSession  # noqa: E402
from plait.runs.start import start_run  # noqa: E402
from plait.store import Store  # noqa: E402
from plait.testing.scripting import scripted  # noqa: E402

TARGET_FEWER = 0.70
"""The product's target: at least this much fewer prompt tokens at the last turn, same accuracy."""
SECTIONS = ("Earlier in this conversation (first sentences):", "Remembered facts:", "The latest turns:")
"""The parts of a compressed conversation, oldest first (as `conversation_shown` writes them)."""

NODES = ["classifier", "summariser", "router", "translator", "extractor", "formatter", "reviewer", "notifier"]
THINGS = ["ticket", "email", "invoice", "review", "meeting note", "support chat", "bug report", "changelog entry"]
VERBS = ["classifies", "translates", "summarises", "tags", "scores", "deduplicates", "routes", "cleans up"]
REQUESTS = [
    "Can you add a node that {verb} each {thing}?",
    "Please make the {node} node retry when the model call fails.",
    "Let's rename the {node} node to something clearer.",
    "I'd like each {thing} summarised before the {node} step.",
    "Could the {node} step skip an empty {thing}?",
    "Make the output of the {node} a list of short bullet points.",
    "Connect the {node} to a review so a person can approve what it writes.",
    "What happens if the {node} call times out?",
    "Use a cheaper model for the {node} node.",
    "Add a condition: only pass a {thing} on when it mentions a refund.",
    "Show me what the {node} receives as input.",
    "Can the {node} ask for clarification when a {thing} is ambiguous?",
]
ASIDES = [
    "It should stay cheap.", "Keep the prompts short, please.", "The current version feels slow.",
    "We tried something like this before and it was noisy.", "No rush on this one.",
    "That would help the support folks a lot.", "I keep going back and forth on it.",
    "Long day today, sorry for the slow replies.", "Thanks for bearing with me.",
]  # fmt: skip
SMALL_TALK = [
    "Good morning!", "Thanks, that looks better.", "Hmm, let me think about that for a moment.",
    "Back from lunch, where were we?", "Sorry, got pulled into a meeting.", "Nice, that reads well.",
]  # fmt: skip
REPLIES = [
    "Done: the {node} node now {verb} each {thing}.",
    "Noted. I updated the draft accordingly.",
    "Sure, I added a check before the {node} step.",
    "Good point; the draft now sends failures of the {node} to a review.",
    "Understood. Anything else for the {node}?",
    "Thanks for the context, I'll keep it in mind while we work on the graph.",
    "The {node} now writes a short summary of each {thing} first.",
]


@dataclass(frozen=True)
class Planted:
    """One fact of the conversation: its values in order with the turns that said them."""

    key: str
    values: tuple[str, ...]
    said_at: tuple[int, ...]
    asks: tuple[str, ...]

    def current(self, turn: int) -> str:
        return [v for v, at in zip(self.values, self.said_at, strict=True) if at < turn][-1]


@dataclass
class Script:
    """The conversation: the person's messages and the replies, the facts said in them, and the
    facts a careful extractor writes for each message."""

    person: list[str]
    replies: list[str]
    facts: list[Planted]
    extracted: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """By the line the chat shows for a message (`person: ...`)."""


@dataclass(frozen=True)
class Plan:
    quick: bool
    turns: int
    facts: int
    changed: int
    checkpoints: tuple[int, ...]

    @classmethod
    def of(cls, quick: bool) -> Plan:
        return cls(True, 60, 12, 3, (30, 60)) if quick else cls(False, 300, 40, 10, (100, 200, 300))


def conversation(plan: Plan, variant: int) -> Script:
    """The scripted conversation of `plan`, drawn from `variant`."""
    pick = random.Random(variant)
    templates = yaml.safe_load(FACTS.read_text(encoding="utf-8"))["facts"]
    changeable = [t for t in templates if t.get("changes")]
    chosen = pick.sample(changeable, plan.changed)
    chosen += pick.sample([t for t in templates if t not in chosen], plan.facts - plan.changed)
    last = plan.turns - 2  # nothing is said in the last turns: every fact is asked about at the end
    free = set(range(2, last))
    plant_at, change_at = [], []
    for _ in range(plan.changed):  # said in the first 60 %, changed at least a tenth later
        first = pick.choice(sorted(t for t in free if t < 0.6 * last))
        later = pick.choice(sorted(t for t in free if t > first + plan.turns // 10))
        free -= {first, later}
        plant_at.append(first)
        change_at.append(later)
    plant_at += pick.sample(sorted(free), plan.facts - plan.changed)
    said: dict[int, tuple[str, dict[str, Any]]] = {}
    facts = []
    for number, (template, at) in enumerate(zip(chosen, plant_at, strict=True)):
        value, *others = pick.sample(template["values"], len(template["values"]))
        entry = {"subject": template["subject"], "predicate": template["predicate"], "object": value,
                 "text": template["text"].format(value)}  # fmt: skip
        said[at] = (pick.choice(template["says"]).format(value), entry)
        values, turns = [value], [at]
        if number < plan.changed:
            new, moved = others[0], change_at[number]
            entry = entry | {"object": new, "text": template["changed_text"].format(new)}
            said[moved] = (pick.choice(template["changes"]).format(new), entry)
            values, turns = [value, new], [at, moved]
        facts.append(Planted(template["key"], tuple(values), tuple(turns), tuple(template["asks"])))
    person, replies, extracted = [], [], {}
    for turn in range(1, plan.turns + 1):
        words = {"node": pick.choice(NODES), "thing": pick.choice(THINGS), "verb": pick.choice(VERBS)}
        if turn in said:
            sentence, entry = said[turn]
            other = pick.choice(REQUESTS).format(**words)
            text = f"{sentence} {other}" if pick.random() < 0.5 else f"{other} By the way: {sentence}"
            extracted[f"person: {text}"] = [entry]
        elif pick.random() < 0.2:
            text = pick.choice(SMALL_TALK)
        else:
            text = pick.choice(REQUESTS).format(**words)
            text += f" {pick.choice(ASIDES)}" if pick.random() < 0.6 else ""
        person.append(text)
        replies.append(pick.choice(REPLIES).format(**words))
    script = Script(person, replies, facts, extracted)
    _check_values_are_distinct(script)
    return script


def _check_values_are_distinct(script: Script) -> None:
    """Every value occurs in the one message that says it and nowhere else the oracle looks (no
    other message, reply or question): else it would count a value where it was never said."""
    for fact in script.facts:
        for value in fact.values:
            where = [t for t in script.person if mentions(t, value)]
            elsewhere = [t for t in [*script.replies, *(q for f in script.facts for q in f.asks)] if mentions(t, value)]
            if len(where) != 1 or elsewhere:
                raise SystemExit(f"the value {value!r} of {fact.key} occurs in {where + elsewhere}: make it unique")


def mentions(text: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value.casefold())}(?!\w)", text.casefold()) is not None


class ScriptedExtraction:
    """Starts and drives each `plait.memory_extract` run on a scripted provider whose one answer
    is the facts of the turns that run reads (looked up by the lines of its input)."""

    def __init__(self, store: Store, script: Script) -> None:
        self.store, self.script = store, script
        self.session: RunSession | None = None
        self.runs: list[str] = []

    def start(self, run_input: dict[str, Any]) -> str:
        facts = [fact for line in run_input["turns"].splitlines() for fact in self.script.extracted.get(line, [])]
        self.session = RunSession(self.store, scripted({"node": "extract", "output": {"facts": facts}}))
        run_id = start_run(self.store, "plait.memory_extract", run_input, files=False,
                           check=self.session.check_executable)  # fmt: skip
        self.runs.append(run_id)
        return run_id

    async def drive(self, run_id: str) -> None:
        assert self.session is not None
        try:
            await self.session.drive(run_id)
        finally:
            await self.session.aclose()


def timeline(text: str, compressed: bool) -> list[tuple[tuple[int, int], str]]:
    """The context's lines, each with its place in time (see the module doc)."""
    if not compressed:
        return [((2, i), line) for i, line in enumerate(text.splitlines())]
    starts = [text.index(title) for title in SECTIONS]
    parts = [text[a + len(t) : b] for a, t, b in zip(starts, SECTIONS, [*starts[1:], len(text)], strict=True)]
    lines: list[tuple[tuple[int, int], str]] = []
    for rank, part in enumerate(parts):
        body = [line for line in part.strip().splitlines() if line]
        lines += [((rank, 0 if rank == 1 else i), line) for i, line in enumerate(body)]
    return lines


def read(text: str, compressed: bool, fact: Planted, turn: int) -> str:
    """The oracle reader's verdict on `fact` at `turn`: answered, stale or missing."""
    said = [v for v, at in zip(fact.values, fact.said_at, strict=True) if at < turn]
    found = [(when, v) for when, line in timeline(text, compressed) for v in said if mentions(line, v)]
    if not found:
        return "missing"
    newest = max(when for when, _ in found)
    return "answered" if {v for when, v in found if when == newest} == {fact.current(turn)} else "stale"


@dataclass
class Checkpoint:
    turn: int
    asked: int
    changed: int
    compressed: dict[str, int]
    full: dict[str, int]
    compressed_changed: dict[str, int]
    full_changed: dict[str, int]
    compressed_tokens: float
    full_tokens: int
    wrong: list[str]


async def converse(store: Store, script: Script, plan: Plan, counter: TokenCounter) -> dict[str, Any]:
    """The conversation through the chat's memory, turn by turn; tokens per turn and checkpoints."""
    session_id = store.chat.create_session("memory bench").id
    extraction = ScriptedExtraction(store, script)
    tokens: list[tuple[int, int, int]] = []
    """Per turn: the compressed conversation, the whole one, the extraction runs' prompts."""
    checkpoints: list[Checkpoint] = []
    pick = random.Random(len(script.person))
    for turn, (text, reply) in enumerate(zip(script.person, script.replies, strict=True), start=1):
        store.chat.add_message(session_id, "user", "text", {"text": text})
        started = len(extraction.runs)
        await remember_leaving(store, session_id, extraction.drive, extraction.start)
        extracting = extraction_tokens(store, extraction.runs[started:], counter)
        session = store.chat.get_session(session_id)
        assert session is not None
        before = store.chat.messages(session_id, limit=10_000)[:-1]
        full = "\n".join(line for m in before if (line := message_line(m)) is not None)
        shown = conversation_shown(store, session, before, text)
        tokens.append((counter.count(shown.text), counter.count(full), extracting))
        if turn in plan.checkpoints:
            checkpoints.append(ask(store, session, before, full, script, turn, counter, pick))
            _progress(f"turn {turn}: {checkpoints[-1].compressed} compressed, {checkpoints[-1].full} full")
        elif turn % 25 == 0:
            _progress(f"turn {turn}: {tokens[-1][0]} / {tokens[-1][1]} tokens")
        store.chat.add_message(session_id, "assistant", "text", {"text": reply})
    facts = store.memory.facts(f"chat:{session_id}", history=True)
    statuses = {s: sum(1 for f in facts if f.status == s) for s in ("active", "superseded", "retracted")}
    return {"tokens": tokens, "checkpoints": checkpoints, "extraction_runs": len(extraction.runs), "facts": statuses}


def ask(store: Store, session: Any, before: list[Any], full: str, script: Script, turn: int, counter: TokenCounter,
        pick: random.Random) -> Checkpoint:  # fmt: skip
    """Every fact said before `turn`, asked as that turn's request, in both conditions."""
    asked = [f for f in script.facts if f.said_at[0] < turn]
    tally: dict[str, dict[str, int]] = {k: {"answered": 0, "stale": 0, "missing": 0} for k in ("c", "f", "cc", "fc")}
    sizes, wrong = [], []
    for fact in asked:
        question = pick.choice(fact.asks)
        shown = conversation_shown(store, session, before, question)
        sizes.append(counter.count(shown.text))
        compressed = read(shown.text, shown.text.startswith(SECTIONS[0]), fact, turn)
        replayed = read(full, False, fact, turn)
        changed = sum(1 for at in fact.said_at if at < turn) > 1
        tally["c"][compressed] += 1
        tally["f"][replayed] += 1
        if changed:
            tally["cc"][compressed] += 1
            tally["fc"][replayed] += 1
        if compressed != "answered":
            wrong.append(f"{fact.key} ({compressed}): {question}")
    changed_count = sum(tally["cc"].values())
    return Checkpoint(turn, len(asked), changed_count, tally["c"], tally["f"], tally["cc"], tally["fc"],
                      statistics.mean(sizes) if sizes else 0.0, counter.count(full), wrong)  # fmt: skip


def extraction_tokens(store: Store, runs: list[str], counter: TokenCounter) -> int:
    """The prompt tokens of the extraction runs (their rendered prompts), the memory's own cost."""
    total = 0
    for run_id in runs:
        for node in store.runs.node_runs(run_id):
            snapshot = node.input_snapshot or {}
            prompts = (snapshot.get("rendered_system_prompt"), snapshot.get("rendered_user_prompt"))
            total += sum(counter.count(str(prompt or "")) for prompt in prompts)
    return total


def report(figures: dict[str, Any]) -> None:
    m = figures["machine"]
    print(f"memory bench: {figures['turns']} turns, {figures['planted']} facts ({figures['changed']} changed), "
          f"variant {figures['variant']}; tokens by {figures['counter']}; {m['cores']} cores, "
          f"{figures['seconds']:.0f} s")  # fmt: skip
    print("\nprompt tokens of the conversation at a turn (the designer's; the extraction's own prompts beside)")
    print(f"  {'turn':>5} {'compressed':>11} {'full replay':>12} {'fewer':>7} {'extraction':>11} {'fewer with it':>14}")
    rows = [(str(t), c, f, x) for t, (c, f, x) in figures["tokens_at"].items()] + [("all", *figures["tokens_total"])]
    for turn, shown, full, extracting in rows:
        print(f"  {turn:>5} {shown:>11} {full:>12} {_fewer(shown, full):>6.1f}% {extracting:>11} "
              f"{_fewer(shown + extracting, full):>13.1f}%")  # fmt: skip
    print(f"  ('all': the sum over every turn; {figures['extraction_runs']} extraction runs; facts at the end: "
          f"{figures['facts']})")  # fmt: skip
    print("\naccuracy (oracle reader: the newest statement of the fact in the context holds its current value)")
    print("  answered of all asked, then of the changed facts; the compressed conversation's misses, its tokens")
    print(f"  {'turn':>5} {'asked':>5} {'compressed':>11} {'full replay':>12}   {'changed':>8} {'compressed':>11} "
          f"{'full replay':>12}   {'stale':>6} {'missing':>8} {'tokens':>8}")  # fmt: skip
    for c in figures["checkpoints"]:
        print(f"  {c['turn']:>5} {c['asked']:>5} {c['compressed']['answered']:>11} {c['full']['answered']:>12}   "
              f"{c['changed']:>8} {c['compressed_changed']['answered']:>11} {c['full_changed']['answered']:>12}   "
              f"{c['compressed']['stale']:>6} {c['compressed']['missing']:>8} "
              f"{c['compressed_tokens']:>8.0f}")  # fmt: skip
    for c in figures["checkpoints"]:
        for line in c["wrong"]:
            print(f"  turn {c['turn']}, not answered in the compressed conversation: {line}")
    last = figures["checkpoints"][-1]
    fewer = figures["fewer_at_last"]
    met = fewer >= TARGET_FEWER and last["compressed"]["answered"] >= last["full"]["answered"]
    print(f"\ntarget: >= {100 * TARGET_FEWER:.0f} % fewer tokens at turn {figures['turns']}, no loss of accuracy: "
          f"{100 * fewer:.1f} % fewer; {last['compressed']['answered']}/{last['asked']} answered against "
          f"{last['full']['answered']}/{last['asked']}: {'met' if met else 'NOT met'}")  # fmt: skip


def _fewer(shown: int, full: int) -> float:
    return 100 * (1 - shown / full) if full else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 turns, 12 facts: under a minute")
    parser.add_argument("--variant", type=int, default=1, help="which conversation (the same number, the same one)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    plan = Plan.of(args.quick)
    script = conversation(plan, args.variant)
    counter = tiktoken_counter("o200k_base")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'memory.db'}")
        try:
            measured = asyncio.run(converse(store, script, plan, counter))
        finally:
            store.close()
    tokens = measured["tokens"]
    figures: dict[str, Any] = {
        "machine": machine(), "command": " ".join(sys.argv), "quick": plan.quick, "variant": args.variant,
        "turns": plan.turns, "planted": plan.facts, "changed": sum(len(f.values) > 1 for f in script.facts),
        "counter": "an estimate (4 characters a token)" if counter is ESTIMATE else "tiktoken o200k_base",
        "tokens_at": {t: tokens[t - 1] for t in sorted({*plan.checkpoints, plan.turns})},
        "tokens_total": [sum(column) for column in zip(*tokens, strict=True)],
        "tokens_per_turn": tokens, "checkpoints": [asdict(c) for c in measured["checkpoints"]],
        "extraction_runs": measured["extraction_runs"], "facts": measured["facts"],
        "fewer_at_last": 1 - tokens[-1][0] / tokens[-1][1], "seconds": time.perf_counter() - began,
    }  # fmt: skip
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
