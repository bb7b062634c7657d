"""Token efficiency measured: what a person's work on a five-node graph costs in model calls and
tokens with Plait (the response cache, pinned upstream outputs, reruns of what a change reaches)
against rerunning the whole graph from scratch after every change.

    .venv/bin/python bench/tokens.py [--quick] [--no-cache] [--json PATH]

The graph is a chain of five LLM_CALLs, `digest -> facts -> draft -> critique -> final`, each
answering `{summary}`. The work on it, done through `plait.Client` as a user does it:

1. one run;
2. the prompt of the middle node, `draft`, edited five times: each edit saved as a new version
   (`save_graph`) and the graph run again (`run`), as the workbench's "Start a run" does;
   `digest` and `facts` send the very requests they sent before, answered by the response cache;
3. two outputs of the last run corrected by a person (`override`, policy `RERUN_ALL`): `facts`,
   then `critique`; what they feed runs again, what comes before them keeps its recorded output.

The naive baseline does the same eight changes by running the whole graph from scratch each
time (`Client(cache=False)`): five calls a change. It has no override, so a correction is one
more whole run (its sizes are the same: the person's value is as long as the model's).

Two token distributions, the same 6,000 tokens of report text in both:

- front-loaded: the whole report goes into `digest`; the later nodes read the summary before them;
- flat: the report in five parts of 1,200 tokens, one to each node, beside the summary before it.

The model is the `scripted` provider, answering each node with a summary of ~80 tokens that
carries the marker of the newest change it read (`[r:e3]`: the third edit), so an edit or a
correction changes every answer after it, as it would on a real model. It is cached as a real
model is (the scripted provider itself is never cached, so that tests can count its calls).
Tokens are counted when a call reaches the model, with the product's own counter
(`plait.llm.tokens`, tiktoken's o200k_base): the messages sent, framed as OpenAI counts them, and
the answer. The same figures are the runs' recorded token totals in the store (checked).

`--quick`: a 2,000-token report (five parts of 400), the same work; a few seconds. `--no-cache`:
Plait's side without the response cache (what `cache: false` on the nodes gives). Progress goes
to stderr, the tables to stdout; `--json` also writes the figures. Exits 1 when a check fails (a
run not completed, a final answer without the marker of the last change, the store's token
totals not the model's).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import machine  # noqa: E402
from plait.client import Client  # noqa: E402
from plait.llm.scripted import ScriptedProvider, script_from  # noqa: E402
from plait.llm.tokens import ESTIMATE, TokenCounter, count_messages, tiktoken_counter  # noqa: E402
from plait.llm.types import ChatRequest, ChatResponse, Usage  # noqa: E402

TARGET_FEWER = 0.60
"""The product's claim: at least this much fewer tokens than naive reruns on the front-loaded case."""
NODES = ("digest", "facts", "draft", "critique", "final")
EDITED = "draft"
CORRECTED = ("facts", "critique")
EDITS = 5
ANSWER_TOKENS = 80
WORDINGS = [
    "Write a first draft of the findings for a general reader.",
    "Write the findings as a short draft for the board, plainly.",
    "Draft the findings for the board in plain words, numbers first.",
    "Draft the findings for the board: numbers first, then what they mean.",
    "Draft the findings for the board: the three largest numbers first, then what they mean.",
    "Draft the findings for the board: the three largest numbers first, then what they mean, then what to do next.",
]
"""The middle node's instruction: as first written, then after each edit."""
INSTRUCTIONS = {
    "digest": "Summarise this report in a few sentences.",
    "facts": "List the key figures and claims of this summary.",
    "critique": "Point out what the draft gets wrong or leaves out.",
    "final": "Write the final version of the findings, taking the critique into account.",
}
TEAMS = ["sales", "support", "logistics", "finance", "research", "billing", "hiring", "security", "marketing"]
METRICS = ["revenue", "churn", "response time", "delivery time", "headcount", "costs", "sign-ups", "refunds"]
MOVES = ["rose", "fell", "held steady", "recovered", "doubled", "slipped", "grew"]
CAUSES = ["a new pricing plan", "the move to the new warehouse", "a long outage in March", "two large customers",
          "the spring campaign", "a change of supplier", "the hiring freeze", "the new onboarding flow"]  # fmt: skip
REMARKS = ["The board asked for a closer look.", "Nobody expected it.", "It is likely to continue next quarter.",
           "The team disagrees on why.", "The figures were checked twice.",
           "Last year the opposite happened."]  # fmt: skip


@dataclass(frozen=True)
class Plan:
    quick: bool
    report_tokens: int
    cache: bool = True
    """Plait's side with the response cache (its default); off: what `cache: false` or `--no-cache` gives."""

    @classmethod
    def of(cls, quick: bool, cache: bool = True) -> Plan:
        return cls(quick, 2_000 if quick else 6_000, cache)


def prose(pick: random.Random, tokens: int, counter: TokenCounter) -> str:
    """Report-like sentences, drawn from `pick`, until they reach `tokens`."""
    sentences: list[str] = []
    while counter.count(" ".join(sentences)) < tokens:
        sentences.append(
            f"In {pick.choice(['Q1', 'Q2', 'Q3', 'Q4'])} the {pick.choice(TEAMS)} team's "
            f"{pick.choice(METRICS)} {pick.choice(MOVES)} by {pick.randint(2, 60)} % after {pick.choice(CAUSES)}."
        )
        if pick.random() < 0.3:
            sentences.append(pick.choice(REMARKS))
    return " ".join(sentences)


# -- the graph and its model ----------------------------------------------------------------------------------


def graph(case: str, edit: int) -> dict[str, Any]:
    """The chain of `case` ("front-loaded" or "flat") with the middle node's wording after `edit` edits."""
    nodes = []
    for k, node in enumerate(NODES):
        instruction = f"{WORDINGS[edit]} [r:e{edit}]" if node == EDITED else INSTRUCTIONS[node]
        before = f"Notes so far:\n{{{{ {NODES[k - 1]}.summary }}}}" if k else ""
        if case == "front-loaded":
            given = "{{ input.document }}" if k == 0 else before
        else:
            given = "\n\n".join(p for p in (before, f"Part {k + 1} of the report:\n{{{{ input.part{k + 1} }}}}") if p)
        nodes.append({"id": node, "type": "LLM_CALL", "system_prompt": "You help a team report on its quarter.",
                      "user_prompt_tpl": f"{instruction}\n\n{given}"})  # fmt: skip
    fields = ["document"] if case == "front-loaded" else [f"part{k + 1}" for k in range(len(NODES))]
    edges = [{"source": a, "target": b, "schema_id": "notes"} for a, b in itertools.pairwise(NODES)]
    return {
        "plait": 1, "id": f"tokens_{case.replace('-', '_')}", "name": f"Token bench ({case})",
        "input_schema": {"type": "object", "properties": {f: {"type": "string"} for f in fields}, "required": fields},
        "schemas": [{"id": "notes", "schema": {"type": "object", "properties": {"summary": {"type": "string"}},
                                               "required": ["summary"]}}],
        "nodes": nodes, "edges": [*edges, {"source": NODES[-1], "target": "END", "schema_id": "notes"}],
    }  # fmt: skip


def report_input(case: str, plan: Plan, counter: TokenCounter) -> dict[str, str]:
    """The same report for both cases: whole, or in five parts of a fifth each."""
    pick = random.Random(11)
    if case == "front-loaded":
        return {"document": prose(pick, plan.report_tokens, counter)}
    return {f"part{k + 1}": prose(pick, plan.report_tokens // len(NODES), counter) for k in range(len(NODES))}


CHANGES = ["e0", *(f"e{k}" for k in range(1, EDITS + 1)), "c1", "c2"]
"""Every change's marker, oldest first: the first wording, the edits, the corrections."""


def answer(node: str, marker: str, counter: TokenCounter) -> dict[str, str]:
    """What the model answers `node` when the newest change it read is `marker` (~80 tokens)."""
    pick = random.Random(f"{node}/{marker}")
    return {"summary": f"{prose(pick, ANSWER_TOKENS - 6, counter)} [r:{marker}]"}


def rules(counter: TokenCounter) -> list[dict[str, Any]]:
    """The scripted rules: each node answers for the newest marker in its prompt (first match
    wins, so the newest come first); `digest` reads no marker: it answers as at the start."""
    found = [{"node": node, "match": rf"\[r:{marker}\]", "output": answer(node, marker, counter)}
             for marker in reversed(CHANGES) for node in NODES]  # fmt: skip
    return [*found, {"node": NODES[0], "output": answer(NODES[0], "e0", counter)}]


class Counted(ScriptedProvider):
    """The scripted provider standing in for a real model: cached as one is, and each call's
    usage counted with the product's token counter, so a long input costs what it would."""

    def __init__(self, counter: TokenCounter) -> None:
        super().__init__(script_from({"responses": rules(counter)}))
        self.counter = counter
        self.calls, self.tokens_in, self.tokens_out = 0, 0, 0
        self.nodes: list[str] = []

    def cache_identity(self, request: ChatRequest) -> str | None:
        return f"{self.name}/scripted"  # what its answers name as their provider and model

    def counter_for_role(self, role: str, model: str | None = None) -> TokenCounter:
        return self.counter

    async def complete(self, request: ChatRequest) -> ChatResponse:
        response = await super().complete(request)
        usage = Usage(count_messages(self.counter, request.messages), self.counter.count(response.content or ""))
        self.calls += 1
        self.tokens_in += usage.input_tokens
        self.tokens_out += usage.output_tokens
        self.nodes.append(request.node_id or "?")
        return dataclasses.replace(response, usage=usage)

    def tally(self) -> tuple[int, int, int]:
        return self.calls, self.tokens_in, self.tokens_out


# -- the work -------------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One way of doing the work: its calls and tokens per step, and what went wrong."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    recorded: tuple[int, int] = (0, 0)
    """The token totals the store recorded on the runs (input, output)."""

    def total(self, key: str) -> int:
        return sum(int(s[key]) for s in self.steps)

    def figures(self) -> dict[str, Any]:
        totals = {key: self.total(key) for key in ("calls", "tokens_in", "tokens_out", "tokens")}
        return {**totals, "steps": self.steps}


def step(side: Side, provider: Counted, name: str, before: tuple[int, int, int], outcome: Any, marker: str,
         reused: list[str] | None = None) -> None:  # fmt: skip
    """Record the step `name` (the provider's tallies since `before`, the nodes that cost no call)
    and check how its run ended."""
    calls, tokens_in, tokens_out = (a - b for a, b in zip(provider.tally(), before, strict=True))
    called = provider.nodes[len(provider.nodes) - calls :] if calls else []
    side.steps.append({"step": name, "calls": calls, "tokens_in": tokens_in, "tokens_out": tokens_out,
                       "tokens": tokens_in + tokens_out, "nodes": called, "reused": reused or []})  # fmt: skip
    if str(outcome.status) != "completed":
        side.failed.append(f"{name}: the run ended {outcome.status}")
    elif not str((outcome.output or {}).get("summary", "")).endswith(f"[r:{marker}]"):
        side.failed.append(f"{name}: the final answer does not follow the change {marker}: {outcome.output}")
    if reused is not None and sorted([*called, *(r.split()[0] for r in reused)]) != sorted(NODES):
        side.failed.append(f"{name}: asked {called}, reused {reused}: not every node once")


def current(client: Client, run_id: str) -> dict[str, Any]:
    """The run's newest activation of each node."""
    return dict(client.get_run(run_id).current)


def reused(client: Client, run_id: str, kept: dict[str, Any]) -> list[str]:
    """The nodes of the run that cost no call: kept as they were before the step (their newest
    activation is the one of `kept`), or answered from the response cache."""
    found = []
    for node_id, record in sorted(current(client, run_id).items(), key=lambda item: NODES.index(item[0])):
        if node_id in kept and kept[node_id].id == record.id:
            found.append(f"{node_id} (kept)")
        elif record.attempts and record.attempts[0].get("cache_hit"):
            found.append(f"{node_id} (cache)")
    return found


def plait_side(db: str, case: str, inputs: dict[str, str], counter: TokenCounter, cache: bool = True) -> Side:
    """The work done with Plait: edits as new versions run again, corrections as overrides."""
    side, provider = Side(), Counted(counter)
    with Client(db, llm=provider, cache=cache) as client:
        ref = client.save_graph(graph(case, 0)).graph_id
        before = provider.tally()
        last = client.run(ref, inputs)
        step(side, provider, "first run", before, last, "e0", reused(client, last.run_id, {}))
        for edit in range(1, EDITS + 1):
            client.save_graph(graph(case, edit))
            before = provider.tally()
            last = client.run(ref, inputs)
            step(side, provider, f"edit {edit}", before, last, f"e{edit}", reused(client, last.run_id, {}))
        for number, node in enumerate(CORRECTED, start=1):
            before, kept = provider.tally(), current(client, last.run_id)
            value = answer(node, f"c{number}", counter)  # as long as the model's answer
            corrected = client.override(last.run_id, node, value, policy="RERUN_ALL", note="corrected by hand")
            assert corrected.result is not None, f"correcting {node} left nothing to run"
            after = [f"{node} (corrected)" if r == f"{node} (kept)" else r for r in reused(client, last.run_id, kept)]
            step(side, provider, f"correction {number} ({node})", before, corrected.result, f"c{number}", after)
        side.recorded = recorded(client, ref)
    return side


def naive_side(db: str, case: str, inputs: dict[str, str], counter: TokenCounter) -> Side:
    """The same changes, each a whole run from scratch: no response cache, no pinned outputs."""
    side, provider = Side(), Counted(counter)
    with Client(db, llm=provider, cache=False) as client:
        ref = client.save_graph(graph(case, 0)).graph_id
        names = ["first run", *(f"edit {k}" for k in range(1, EDITS + 1)),
                 *(f"correction {k} ({n})" for k, n in enumerate(CORRECTED, start=1))]  # fmt: skip
        for number, name in enumerate(names):
            edit = min(number, EDITS)
            if name.startswith("edit"):
                client.save_graph(graph(case, edit))
            before = provider.tally()
            step(side, provider, name, before, client.run(ref, inputs), f"e{edit}")
        side.recorded = recorded(client, ref)
    return side


def recorded(client: Client, ref: str) -> tuple[int, int]:
    """The input and output tokens the store recorded on the graph's runs (a cached answer: 0)."""
    runs = client.list_runs(graph=ref, limit=1_000)
    return sum(r.tokens_input for r in runs), sum(r.tokens_output for r in runs)


def measure(case: str, plan: Plan, folder: Path, counter: TokenCounter) -> dict[str, Any]:
    """Both sides of the work on `case`, each on its own store; their figures and failed checks."""
    inputs = report_input(case, plan, counter)
    slug = case.replace("-", "_")
    sides = {"plait": plait_side(f"sqlite:///{folder / f'{slug}_plait.db'}", case, inputs, counter, plan.cache),
             "naive": naive_side(f"sqlite:///{folder / f'{slug}_naive.db'}", case, inputs, counter)}  # fmt: skip
    failed = [f"{case}, {name}: {line}" for name, side in sides.items() for line in side.failed]
    for name, side in sides.items():
        counted = (side.total("tokens_in"), side.total("tokens_out"))
        if side.recorded != counted:
            failed.append(f"{case}, {name}: the runs recorded {side.recorded} tokens, the model counted {counted}")
    plait, naive = sides["plait"], sides["naive"]
    figures = {
        "input_tokens": {k: counter.count(v) for k, v in inputs.items()},
        "plait": plait.figures(),
        "naive": naive.figures(),
        "fewer_tokens": 1 - plait.total("tokens") / naive.total("tokens"),
        "fewer_calls": 1 - plait.total("calls") / naive.total("calls"),
    }
    _progress(f"{case}: {plait.total('tokens')} tokens with Plait, {naive.total('tokens')} naive")
    return {"figures": figures, "failed": failed}


# -- report ---------------------------------------------------------------------------------------------------


def report(figures: dict[str, Any]) -> None:
    m = figures["machine"]
    print(f"token bench: a {figures['report_tokens']:,}-token report, 1 run + {EDITS} edits of {EDITED} + "
          f"{len(CORRECTED)} corrections ({', '.join(CORRECTED)}); tokens by {figures['counter']}; "
          f"{m['cores']} cores, {figures['seconds']:.0f} s")  # fmt: skip
    if not figures["cache"]:
        print("Plait without the response cache (--no-cache): an edit is a whole run again")
    print("\n  front-loaded: the whole report into the first node, the later nodes read the summary before them")
    print(f"  flat: the report in {len(NODES)} parts, one to each node, beside the summary before it")
    print(f"\n  {'case':<13} {'Plait calls':>11} {'Plait tokens':>12} {'naive calls':>11} {'naive tokens':>12} "
          f"{'saving':>7}")  # fmt: skip
    for case, c in figures["cases"].items():
        p, n = c["plait"], c["naive"]
        print(f"  {case:<13} {p['calls']:>11} {p['tokens']:>12} {n['calls']:>11} {n['tokens']:>12} "
              f"{100 * c['fewer_tokens']:>6.1f}%")  # fmt: skip
    split = "; ".join(f"{case}: Plait {c['plait']['tokens_in']} + {c['plait']['tokens_out']}, naive "
                      f"{c['naive']['tokens_in']} + {c['naive']['tokens_out']}"
                      for case, c in figures["cases"].items())  # fmt: skip
    print(f"  (tokens in + out: {split})")
    for case, c in figures["cases"].items():
        print(f"\n  {case}, step by step (tokens: in + out)")
        print(f"  {'step':<26} {'Plait calls':>11} {'Plait tokens':>12} {'naive calls':>11} {'naive tokens':>12}  "
              "Plait asked the model for; it reused")  # fmt: skip
        for p, n in zip(c["plait"]["steps"], c["naive"]["steps"], strict=True):
            print(f"  {p['step']:<26} {p['calls']:>11} {p['tokens']:>12} {n['calls']:>11} {n['tokens']:>12}  "
                  f"{', '.join(p['nodes']) or '-'}; {', '.join(p['reused']) or '-'}")  # fmt: skip
    front = figures["cases"]["front-loaded"]["fewer_tokens"]
    met = "met" if front >= TARGET_FEWER else "NOT met"
    print(f"\ntarget: >= {100 * TARGET_FEWER:.0f} % fewer tokens than naive reruns on the front-loaded case: "
          f"{100 * front:.1f} % fewer: {met}")  # fmt: skip
    for line in figures["failed"] or ["every run completed, followed its change, and recorded the tokens counted"]:
        print(f"check: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 2,000-token report: a few seconds")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--no-cache", action="store_true", help="Plait's side without the response cache")
    args = parser.parse_args()
    plan = Plan.of(args.quick, cache=not args.no_cache)
    counter = tiktoken_counter("o200k_base")
    figures: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv), "quick": plan.quick,
                               "cache": plan.cache, "report_tokens": plan.report_tokens, "cases": {}, "failed": [],
                               "counter": "an estimate (4 characters a token)" if counter is ESTIMATE
                               else "tiktoken o200k_base"}  # fmt: skip
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("front-loaded", "flat"):
            measured = measure(case, plan, Path(tmp), counter)
            figures["cases"][case] = measured["figures"]
            figures["failed"] += measured["failed"]
    figures["seconds"] = time.perf_counter() - began
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")
    if figures["failed"]:
        raise SystemExit(1)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
