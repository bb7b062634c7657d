"""The evaluation gate measured on two example graphs: the verdicts it reaches, what an
evaluation costs at node level against run level, how long 200 cases take under a concurrency
limit at a simulated model latency, and that the same candidate gets the same verdict twice.

    .venv/bin/python bench/eval_gate.py [--quick] [--json PATH]

Everything runs on the `scripted` provider (rules keyed on each input's tag, `[F007]`, `[E007]`,
and on a marker each version writes in its prompt) and a SQLite store in a temporary folder.

1. Setup, per graph (`examples/feedback_triage.yaml`, `examples/video_chapters.yaml`): 60 runs,
   every second output corrected (`Corrections.override`), the others approved, `build_set` ->
   `gate` (30 + 30); 140 more judged the same way -> `scale` (200 cases). video_chapters' review
   is approved as shown (a corrected run: chapter_split overridden, then the review approved).
   feedback_triage has no review: an approval is an override restating the model's label, which
   the set builder labels `approved` (the expected value is what the graph produced).
2. Verdicts on `gate` (gate rules: `max_regressions=2`, the rest default): `mixed` fixes 20
   corrected cases and breaks 3 approved ones (fail), `clean` fixes all, breaks none (pass),
   `breaking` changes a schema without a migration (feedback: the label's property renamed;
   video: the transcript's, which chapter_split reads), feedback's `migrated` the same with a
   migration. `mixed` is evaluated twice: the verdicts must be the same.
3. Cost: `clean` on `scale` against `scale-run`, the same 200 cases at run level, written with
   `create_set` (nothing makes `build_set` or `run_evaluation` run a node's cases whole). Calls
   and tokens counted at the provider, beside the dry-run estimate.
4. Time: `clean` on `scale`, each answer 50 ms late, at most 64 model calls in flight
   (`llm_concurrency`), at `run_evaluation`'s `concurrency` 4 (its default, what the CLI, HTTP
   API and client use), 16 and 64, and at 64 without latency: wall time against the ideal,
   ceil(cases / min(concurrency, 64)) x 50 ms.

`--quick`: 10 + 10 cases in `gate` (fixes 6, breaks 3), 40 in `scale`: under a minute. Progress
goes to stderr, the tables to stdout; `--json` also writes the figures. Exits 1 when a verdict
is not the one expected or the repeated one differs.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import math
import os
import re
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._machine import machine  # noqa: E402
from plait.evaluation import GateRules  # noqa: E402
from plait.evolve.system import open_store  # noqa: E402
from plait.evolve.upload import UploadMode, save_upload  # noqa: E402
from plait.llm.scripted import ScriptedProvider, script_from  # noqa: E402
from plait.llm.types import ChatRequest, ChatResponse  # noqa: E402
from plait.model.output_meta import strip_meta  # noqa: E402
from plait.runs.corrections import Corrections  # noqa: E402
from plait.runs.eval_build import build_set  # noqa: E402
from plait.runs.eval_run import EvaluationReport, estimate_evaluation, resolve, run_evaluation, start_evaluation  # noqa: E402
from plait.runs.session import RunSession  # noqa: E402
from plait.runs.start import start_run  # noqa: E402
from plait.store import Store  # noqa: E402
from plait.store.evaluations import NewCase  # noqa: E402

POOL = 64
"""The engine's limit on model calls in flight (`llm_concurrency`)."""
LATENCY_MS = 50
GATE = GateRules(max_regressions=2)
LABELS = ("bug", "praise", "question")
RIGHT = [{"title": "Introduction", "start_sec": 0, "end_sec": 12},
         {"title": "Cutting the pieces", "start_sec": 12, "end_sec": 70},
         {"title": "Assembly and painting", "start_sec": 70, "end_sec": 140}]  # fmt: skip
WRONG = [{**RIGHT[0], "end_sec": 20}, {**RIGHT[1], "start_sec": 20}, RIGHT[2]]
"""The first chapter boundary off by 8 seconds: what version 1 answers where it is corrected."""
BROKEN = [RIGHT[0], {**RIGHT[1], "end_sec": 95}, {"title": "Painting", "start_sec": 95, "end_sec": 140}]
TEXTS = {
    "bug": ["The app crashes when I upload a photo larger than 10 MB.", "Saving a draft fails with error 500.",
            "The export button does nothing on Firefox.", "Search returns results from the wrong account."],
    "praise": ["I love how fast the new editor is.", "The dark theme is beautiful, thank you!",
               "Sharing a board with my team took seconds. Great job.", "Best note app I have used."],
    "question": ["How do I export my notes as PDF?", "Can I share a board with people outside my team?",
                 "Is there a keyboard shortcut for search?", "Where do I change my billing address?"],
}  # fmt: skip
TOPICS = ["a birdhouse from one pine board", "a bookshelf from reclaimed oak", "a planter box for herbs",
          "a small step stool", "a wall-mounted key rack"]  # fmt: skip


@dataclass(frozen=True)
class Plan:
    quick: bool
    gate_each: int
    fixed: int
    broken: int
    scale: int
    concurrencies: tuple[int, ...]

    @classmethod
    def of(cls, quick: bool) -> Plan:
        return cls(True, 10, 6, 3, 40, (4, 64)) if quick else cls(False, 30, 20, 3, 200, (4, 16, 64))

    def corrected(self, i: int) -> bool:
        return i % 2 == 0

    def fixed_ids(self) -> set[int]:
        return set(range(0, 2 * self.fixed, 2))

    def broken_ids(self) -> set[int]:
        return set(range(1, 2 * self.broken, 2))


class Graph(ABC):
    """One example graph: its inputs, the judged node's answer per version, the versions saved."""

    slug: str
    node: str
    letter: str
    tags: tuple[str, ...]

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.content: dict[str, Any] = yaml.safe_load((ROOT / "examples" / f"{self.slug}.yaml").read_text())
        self.versions: dict[str, int] = {"v1": 1}

    @abstractmethod
    def run_input(self, i: int) -> dict[str, Any]: ...
    @abstractmethod
    def values(self, i: int) -> tuple[Any, Any, Any]:
        """The judged node's right answer for input `i`, the wrong one version 1 gives where it is
        corrected, and the one `mixed` breaks an approved case with."""

    @abstractmethod
    def prompt(self, tag: str) -> str: ...
    @abstractmethod
    def version(self, tag: str) -> dict[str, Any]: ...
    @abstractmethod
    def other_rules(self) -> list[dict[str, Any]]: ...
    @abstractmethod
    def judge(self, person: Corrections, run_id: str, i: int) -> list[Callable[[], object]]: ...

    def answer(self, tag: str, i: int) -> Any:
        """What the judged node answers for input `i` in the version `tag`."""
        right, wrong, broken = self.values(i)
        v1 = wrong if self.plan.corrected(i) else right
        if tag == "v1":
            return v1
        if tag != "mixed":
            return right
        return right if i in self.plan.fixed_ids() else broken if i in self.plan.broken_ids() else v1

    def rules(self, delay_ms: int) -> list[dict[str, Any]]:
        """The scripted rules of every version: one per distinct answer, its inputs' tags in one regex."""
        found: list[dict[str, Any]] = []
        for tag in self.tags:
            groups: dict[str, list[int]] = {}
            for i in range(self.plan.scale):
                groups.setdefault(json.dumps(self.answer(tag, i), sort_keys=True), []).append(i)
            for output, ids in groups.items():
                tagged = "|".join(f"{i:03d}" for i in ids)
                match = rf"(?s){re.escape(self.prompt(tag))}.*\[{self.letter}(?:{tagged})\]"
                found.append({"node": self.node, "match": match, "output": json.loads(output), "delay_ms": delay_ms})
        return found + [{**r, "delay_ms": delay_ms} for r in self.other_rules()]

    def node_prompt(self, content: dict[str, Any], tag: str, template: str) -> None:
        node = next(n for n in content["nodes"] if n["id"] == self.node)
        node["user_prompt_tpl"] = template.replace("{PROMPT}", self.prompt(tag))


class Feedback(Graph):
    slug, node, letter = "feedback_triage", "classify", "F"
    tags = ("v1", "mixed", "clean", "breaking", "migrated")

    def run_input(self, i: int) -> dict[str, Any]:
        label = LABELS[i % 3]
        return {"feedback": f"{TEXTS[label][(i // 3) % 4]} [F{i:03d}]"}

    def values(self, i: int) -> tuple[Any, Any, Any]:
        return {"label": LABELS[i % 3]}, {"label": LABELS[(i + 1) % 3]}, {"label": LABELS[(i + 2) % 3]}

    def answer(self, tag: str, i: int) -> Any:
        found = super().answer(tag, i)
        return {"category": found["label"]} if tag in ("breaking", "migrated") else found

    def prompt(self, tag: str) -> str:
        return "Feedback: " if tag == "v1" else f"Feedback ({tag}): "

    def version(self, tag: str) -> dict[str, Any]:
        content = copy.deepcopy(self.content)
        self.node_prompt(content, tag, "{PROMPT}{{ input.feedback }}")
        if tag in ("breaking", "migrated"):  # `label` renamed `category`: a major change
            label = next(s for s in content["schemas"] if s["id"] == "label")
            label["version"] = "2.0.0"
            label["schema"] = {"type": "object", "required": ["category"],
                               "properties": {"category": {"type": "string", "enum": list(LABELS)}}}  # fmt: skip
            for node in content["nodes"]:
                for key in ("condition_expr", "transform_expr"):
                    if key in node:
                        node[key] = node[key].replace("classify.label", "classify.category")
        if tag == "migrated":
            content["migrations"] = [{"schema_id": "label", "from_version": "1.x.x", "to_version": "2.0.0",
                                      "migrate_expr": "old => ({category: old.label})"}]  # fmt: skip
        return content

    def other_rules(self) -> list[dict[str, Any]]:
        return [{"node": "file_bug", "output": {"title": "Upload of large photos crashes", "severity": "high"}},
                {"node": "answer", "output": {"reply": "You can do that from the Settings page."}}]  # fmt: skip

    def judge(self, person: Corrections, run_id: str, i: int) -> list[Callable[[], object]]:
        """Corrected: the right label. Approved: the label the model gave, restated (no review node)."""
        if self.plan.corrected(i):
            right = self.values(i)[0]
            return [lambda: person.override(run_id, "classify", right, note="wrong label")]

        def restate() -> object:
            given = next(r for r in person.store.runs.node_runs(run_id) if r.node_id == "classify").output
            return person.override(run_id, "classify", strip_meta(given), note="approved as shown")

        return [restate]


class Video(Graph):
    slug, node, letter = "video_chapters", "chapter_split", "E"
    tags = ("v1", "mixed", "clean", "breaking")

    def run_input(self, i: int) -> dict[str, Any]:
        topic = TOPICS[i % len(TOPICS)]
        said = "First we measure and cut the pieces. Then we assemble them.\nFinally we sand and paint it."
        return {"transcript": f"[E{i:03d}] Welcome back. Today we build {topic}.\n{said}", "language": "en"}

    def values(self, i: int) -> tuple[Any, Any, Any]:
        return {"chapters": RIGHT}, {"chapters": WRONG}, {"chapters": BROKEN}

    def prompt(self, tag: str) -> str:
        return "Split this transcript into chapters" if tag == "v1" else f"Split this transcript ({tag}) into chapters"

    def version(self, tag: str) -> dict[str, Any]:
        content = copy.deepcopy(self.content)
        read = "{{ transcribe.body }}" if tag == "breaking" else "{{ transcribe.text }}"
        self.node_prompt(content, tag, "{PROMPT} with start and end seconds.\nTranscript:\n" + read + "\n")
        if tag == "breaking":  # the transcript's `text` renamed `body`: chapter_split's recorded input is unreadable
            transcript = next(s for s in content["schemas"] if s["id"] == "transcript")
            transcript["version"] = "2.0.0"
            properties = {"body": {"type": "string"}, "language": {"type": "string"}}
            transcript["schema"] = {"type": "object", "required": ["body"], "properties": properties}
            transcribe = next(n for n in content["nodes"] if n["id"] == "transcribe")
            transcribe["transform_expr"] = "({body: input.transcript.trim(), language: input.language || 'en'})"
        return content

    def other_rules(self) -> list[dict[str, Any]]:
        return [{"node": "clip_points", "output": {"clips": [{"at_sec": 75, "reason": "The roof goes on"}]}},
                {"node": "subtitles", "output": {"lines": [{"start_sec": c["start_sec"], "text": c["title"]}
                                                           for c in RIGHT]}}]  # fmt: skip

    def judge(self, person: Corrections, run_id: str, i: int) -> list[Callable[[], object]]:
        """Corrected: the chapters overridden, then the review (opened again on them) approved.
        Approved: the review approved as shown."""
        approve: list[Callable[[], object]] = [lambda: person.review(run_id, "review", approve=True)]
        if not self.plan.corrected(i):
            return approve
        correct = self.values(i)[0]
        return [lambda: person.override(run_id, "chapter_split", correct, note="first boundary at 12 s"), *approve]


class Counted(ScriptedProvider):
    """The scripted provider, counting the calls it answers, their tokens and how many were in flight."""

    def __init__(self, rules: list[dict[str, Any]]) -> None:
        super().__init__(script_from({"responses": rules}))
        self.reset()

    def reset(self) -> None:
        self.calls, self.tokens_in, self.tokens_out, self.in_flight, self.peak = 0, 0, 0, 0, 0
        self.nodes: Counter[str] = Counter()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            response = await super().complete(request)
        finally:
            self.in_flight -= 1
        self.calls += 1
        self.nodes[request.node_id or "?"] += 1
        self.tokens_in += response.usage.input_tokens
        self.tokens_out += response.usage.output_tokens
        return response

    async def aclose(self) -> None:  # shared by every session of the bench
        return None


# -- setup ---------------------------------------------------------------------------------------------------


async def judged_runs(store: Store, graph: Graph, provider: Counted, ids: range) -> None:
    """A run of version 1 per input, driven to its end (or its review), then judged in the inputs'
    order, one step of every run at a time (so a set's positions are the same every time)."""
    person = Corrections(store, by="ann")
    session = RunSession(store, provider, llm_concurrency=POOL)
    slots = asyncio.Semaphore(16)
    runs: dict[int, str] = {}

    async def drive(run_id: str) -> None:
        async with slots:
            await session.finish(run_id)

    async def start(i: int) -> None:
        runs[i] = await asyncio.to_thread(start_run, store, graph.slug, graph.run_input(i), files=False, version=1)
        await drive(runs[i])

    try:
        await asyncio.gather(*(start(i) for i in ids))
        steps = {i: graph.judge(person, runs[i], i) for i in ids}
        for k in range(max(len(s) for s in steps.values())):
            resumed = [runs[i] for i in ids if k < len(steps[i]) and getattr(steps[i][k](), "needs_run", False)]
            await asyncio.gather(*(drive(run_id) for run_id in resumed))
    finally:
        await session.aclose()


def run_level_set(store: Store, graph_id: str, graph_slug: str, source: str, name: str) -> None:
    """The cases of `source` at run level: each source run's input, and its output (node -> its
    out-edge schema) as judged."""
    exits = {"feedback_triage": [("summarize", "triage_result")],
             "video_chapters": [("clip_points", "clip_points"), ("subtitles", "subtitles")]}[graph_slug]  # fmt: skip
    eval_set = store.evaluations.get_set(graph_id, source)
    cases = []
    for case in store.evaluations.cases(eval_set.id):
        run = store.runs.get(case.source_run_id)
        got = run.output or {}
        output = strip_meta(got) if len(exits) == 1 else {e: strip_meta(got.get(e)) for e, _ in exits}
        cases.append(NewCase(level="run", label=case.label, source_run_id=run.id, graph_version=run.graph_version,
                             ledger_version=case.ledger_version, input=run.input, original=output, expected=output,
                             schemas=[{"id": s, "version": "1.0.0"} for _, s in exits], judged_by=case.judged_by,
                             judged_at=case.judged_at, note=case.note))  # fmt: skip
    store.evaluations.create_set(graph_id, name, cases, built_from={"from": f"{source}, at run level"}, by="bench")


# -- evaluations ---------------------------------------------------------------------------------------------


@dataclass
class Measured:
    report: EvaluationReport
    seconds: float
    calls: int
    tokens_in: int
    tokens_out: int
    peak: int
    nodes: dict[str, int] = field(default_factory=dict)

    def outcomes(self) -> Counter[str]:
        return Counter(str((c.outcome or {}).get("outcome")) for c in self.report.cases)

    def run_level(self) -> int:
        return sum(1 for c in self.report.cases for r in c.candidate if (r.score or {}).get("level") == "run")

    def reasons(self) -> Counter[str]:
        found = [(c.outcome or {}).get("reason") or "" for c in self.report.cases]
        return Counter(re.sub(r"run [0-9a-f-]{36}", "run RUN", r) for r in found if r)


async def evaluate(store: Store, graph: Graph, provider: Counted, set_ref: str, tag: str, concurrency: int) -> Measured:
    """Version `tag` evaluated on the set (gate rules `GATE`), `concurrency` cases at a time."""
    evaluation = await asyncio.to_thread(start_evaluation, store, graph.slug, set_ref,
                                         candidate_version=graph.versions[tag], rules=GATE, by="bench")  # fmt: skip
    session = RunSession(store, provider, llm_concurrency=POOL)
    provider.reset()
    try:
        began = time.perf_counter()
        report = await run_evaluation(store, evaluation.id, session.finish, concurrency=concurrency)
        seconds = time.perf_counter() - began
    finally:
        await session.aclose()
    p = provider
    return Measured(report, seconds, p.calls, p.tokens_in, p.tokens_out, p.peak, dict(p.nodes))


def verdict_figures(m: Measured) -> dict[str, Any]:
    verdict = m.report.verdict or {}
    return {"status": verdict.get("status"), "exit_code": verdict.get("exit_code"), "lines": verdict.get("lines"),
            "outcomes": dict(m.outcomes()), "run_level": m.run_level(), "reasons": dict(m.reasons()),
            "calls": m.calls, "seconds": m.seconds}  # fmt: skip


async def measure(store: Store, plan: Plan, graph: Graph, figures: dict[str, Any]) -> list[str]:
    """Every measure on one graph, its figures in `figures`; the checks that failed."""
    failed: list[str] = []
    provider = Counted(graph.rules(0))
    graph_id = save_upload(store, graph.version("v1"), mode=UploadMode.CREATE).stored.graph_id
    began = time.perf_counter()
    await judged_runs(store, graph, provider, range(2 * plan.gate_each))
    gate = build_set(store, graph.slug, name="gate", by="bench")
    await judged_runs(store, graph, provider, range(2 * plan.gate_each, plan.scale))
    scale = build_set(store, graph.slug, name="scale", by="bench")
    run_level_set(store, graph_id, graph.slug, "scale", "scale-run")
    figures["setup"] = {"runs": plan.scale, "seconds": time.perf_counter() - began, "gate": gate.built_from,
                        "scale": scale.built_from}  # fmt: skip
    _progress(f"{graph.slug}: {plan.scale} runs judged; gate {gate.cases} cases, scale {scale.cases}")
    for tag in graph.tags[1:]:
        saved = save_upload(store, graph.version(tag), mode=UploadMode.UPDATE, ref=graph.slug)
        graph.versions[tag] = saved.stored.version
    verdicts: dict[str, Any] = {}
    for tag in graph.tags[1:]:
        verdicts[tag] = verdict_figures(await evaluate(store, graph, provider, "gate", tag, 16))
        _progress(f"{graph.slug}: {tag} -> {verdicts[tag]['status']}")
    verdicts["mixed (again)"] = verdict_figures(await evaluate(store, graph, provider, "gate", "mixed", 16))
    figures["verdicts"] = verdicts
    for tag, wanted in (("mixed", "fail"), ("clean", "pass"), ("migrated", "pass")):
        if tag in verdicts and verdicts[tag]["status"] != wanted:
            failed.append(f"{graph.slug}: {tag} should {wanted}, got {verdicts[tag]['status']}")
    first, again = verdicts["mixed"], verdicts["mixed (again)"]
    if (first["status"], first["lines"], first["outcomes"]) != (again["status"], again["lines"], again["outcomes"]):
        failed.append(f"{graph.slug}: mixed evaluated twice gave {first['status']} then {again['status']}")
    cost = {}
    for name in ("scale", "scale-run"):
        m = await evaluate(store, graph, provider, name, "clean", 16)
        target = resolve(store, graph.slug, name, candidate_version=graph.versions["clean"])
        estimate = (await estimate_evaluation(store, target, provider)).candidate
        estimated = {"calls": estimate.calls, "tokens_in": estimate.tokens_in, "tokens_out": estimate.tokens_out,
                     "node_level": estimate.node_level, "run_level": estimate.run_level,
                     "incomparable": len(estimate.incomparable)}  # fmt: skip
        cost[name] = {"cases": len(m.report.cases), "calls": m.calls, "tokens_in": m.tokens_in,
                      "tokens_out": m.tokens_out, "nodes": m.nodes, "outcomes": dict(m.outcomes()),
                      "reasons": dict(m.reasons()), "estimate": estimated}  # fmt: skip
        _progress(f"{graph.slug}: cost of {name}: {m.calls} calls")
    figures["cost"] = cost
    slow = Counted(graph.rules(LATENCY_MS))
    timed = []
    for concurrency, latency in [*((c, LATENCY_MS) for c in plan.concurrencies), (POOL, 0)]:
        m = await evaluate(store, graph, slow if latency else provider, "scale", "clean", concurrency)
        ideal = math.ceil(len(m.report.cases) / min(concurrency, POOL)) * latency / 1000
        timed.append({"concurrency": concurrency, "latency_ms": latency, "cases": len(m.report.cases),
                      "seconds": m.seconds, "ideal": ideal, "peak_calls": m.peak, "calls": m.calls,
                      "load": os.getloadavg()[0]})  # fmt: skip
        _progress(f"{graph.slug}: {len(m.report.cases)} cases at concurrency {concurrency}, {latency} ms: "
                  f"{m.seconds:.2f} s")  # fmt: skip
    figures["time"] = timed
    return failed


# -- report --------------------------------------------------------------------------------------------------


def report(figures: dict[str, Any]) -> None:
    m = figures["machine"]
    print(f"evaluation gate bench: {m['cores']} cores, load {m['load'][0]:.1f} before, {m['load_after'][0]:.1f} "
          f"after; SQLite; scripted provider; {figures['seconds']:.0f} s")  # fmt: skip
    for slug, g in figures["graphs"].items():
        s = g["setup"]
        skipped = s["gate"]["skipped"]["count"] + s["scale"]["skipped"]["count"]
        print(f"\n== {slug}: {s['runs']} runs judged in {s['seconds']:.1f} s; gate {s['gate']['labels']}, "
              f"scale {s['scale']['labels']}; skipped {skipped}")  # fmt: skip
        for tag, v in g["verdicts"].items():
            print(f"\n-- candidate {tag} on gate ({v['calls']} calls, {v['seconds']:.2f} s): outcomes {v['outcomes']}, "
                  f"evaluated at run level {v['run_level']}")  # fmt: skip
            for line in v["lines"] or []:
                print(f"   {line}")
            for reason, count in v["reasons"].items():
                print(f"   ({count} cases) {reason}")
        cases = g["cost"]["scale"]["cases"]
        print(f"\n   cost of {cases} cases (candidate clean; the recorded baseline costs nothing)")
        print(f"   {'set':<10} {'level':<6} {'calls':>6} {'tokens in':>10} {'tokens out':>11} {'est. calls':>11} "
              f"{'est. in':>8} {'incomparable':>13}  calls by node")  # fmt: skip
        for name, c in g["cost"].items():
            level = "run" if name.endswith("-run") else "node"
            e = c["estimate"]
            print(f"   {name:<10} {level:<6} {c['calls']:>6} {c['tokens_in']:>10} {c['tokens_out']:>11} "
                  f"{e['calls']:>11} {e['tokens_in']:>8} {c['outcomes'].get('incomparable', 0):>13}  "
                  f"{c['nodes']}")  # fmt: skip
            for reason, count in c["reasons"].items():
                print(f"     ({count} cases) {reason}")
        print(f"\n   time: node-level cases, llm_concurrency {POOL}")
        print(f"   {'cases':>5} {'concurrency':>11} {'latency':>8} {'wall s':>7} {'ideal s':>8} {'over':>7} "
              f"{'ms/case over':>12} {'peak calls':>10} {'load':>5}")  # fmt: skip
        for t in g["time"]:
            over = t["seconds"] - t["ideal"]
            print(f"   {t['cases']:>5} {t['concurrency']:>11} {t['latency_ms']:>6}ms {t['seconds']:>7.2f} "
                  f"{t['ideal']:>8.2f} {over:>7.2f} {1000 * over / t['cases']:>12.1f} {t['peak_calls']:>10} "
                  f"{t['load']:>5.1f}")  # fmt: skip
    print()
    for line in figures["failed"] or ["every verdict as expected; mixed gave the same verdict twice"]:
        print(f"check: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 + 10 judged cases, 40 in scale: under a minute")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    plan = Plan.of(args.quick)
    figures: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv), "quick": plan.quick, "graphs": {}}
    began = time.perf_counter()
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'eval.db'}")
        try:
            for graph in (Feedback(plan), Video(plan)):
                found: dict[str, Any] = {}
                failed += asyncio.run(measure(store, plan, graph, found))
                figures["graphs"][graph.slug] = found
        finally:
            store.close()
    figures["machine"]["load_after"] = os.getloadavg()
    figures["seconds"] = time.perf_counter() - began
    figures["failed"] = failed
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n", encoding="utf-8")
    if failed:
        raise SystemExit(1)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
