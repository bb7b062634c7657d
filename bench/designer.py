"""The chat's designer on stated tasks: how often it gets a graph right, in how many rounds, and
what an edit costs in tokens against rewriting the whole graph.

    .venv/bin/python bench/designer.py                           # the embedded model, live
    .venv/bin/python bench/designer.py --llm scripted:FILE       # or --config plait.toml: a provider
    .venv/bin/python bench/designer.py --record answers.json     # live, keeping the designer's answers
    .venv/bin/python bench/designer.py --replay bench/recorded/designer-gemma-3-270m.json   # no model

The tasks (`bench/design_tasks.yaml`, 42): one per shipped example, one per scenario of the
source designs, and edits of existing graphs, each with its check. Each task is one chat turn
through the real use case (`plait.runs.chat`), on a throwaway SQLite store: the designer's runs
on the model, the operations applied and compiled, config problems sent back. A question card
is answered with each question's first choice (or "as you think best"). A proposed draft is
accepted and its graph run on a scripted model answering each call with a minimal value of its
schema. Reported:

- valid on the first compile, rounds to valid (median, p90), never valid;
- questions asked, and how many of those turns changed the graph once answered;
- task success: the accepted graph passes the task's check, and its run completes (or waits
  for the person its review asks);
- tokens per accepted graph (the designer's, in and out), and per edit: the operations the
  designer wrote against the graph written out whole (what a whole-graph answer would cost).

With only the embedded model, a new graph comes from the nearest starter (docs/chat.md): those
tasks take no model call. `--replay` feeds each task the answers a `--record` run kept, in order
(the answers only: a retry inside a round is not replayed), so CI measures the harness and the
recorded model's answers without the model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TASKS = Path(__file__).resolve().parent / "design_tasks.yaml"
sys.path.insert(0, str(ROOT))


@dataclass
class Outcome:
    """What one task's turn gave."""

    task: str
    new: bool
    status: str = "error"
    rounds: int = 0
    questions: int = 0
    answered_changed: bool = False
    accepted: bool = False
    passed: bool = False
    ran: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    ops_tokens: int = 0
    whole_tokens: int = 0
    note: str = ""
    answers: list[Any] = field(default_factory=list)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", help="the model spec, as `plait run --llm` (default: the embedded model)")
    parser.add_argument("--config", help="a plait.toml whose chat role designs")
    parser.add_argument("--record", type=Path, help="keep the designer's answers in this JSON file")
    parser.add_argument("--replay", type=Path, help="answer from a recorded file instead of a model")
    parser.add_argument("--limit", type=int, help="only the first N tasks")
    parser.add_argument("--only", help="a comma-separated list of task ids")
    parser.add_argument("--json", action="store_true", help="print each task's outcome as JSON too")
    args = parser.parse_args()
    tasks = yaml.safe_load(TASKS.read_text(encoding="utf-8"))["tasks"]
    if args.only:
        tasks = [t for t in tasks if t["id"] in set(args.only.split(","))]
    tasks = tasks[: args.limit] if args.limit else tasks
    recorded = json.loads(args.replay.read_text()) if args.replay else None
    outcomes = [asyncio.run(_task(task, args, recorded)) for task in tasks]
    if args.record:
        args.record.write_text(json.dumps({o.task: o.answers for o in outcomes}, indent=1) + "\n")
    _report(outcomes, args)


async def _task(task: dict[str, Any], args: argparse.Namespace, recorded: dict[str, Any] | None) -> Outcome:
    from plait.evolve.system import open_store
    from plait.runs.chat import Chat, ChatPorts
    from plait.runs.session import RunSession

    outcome = Outcome(task["id"], new="base" not in task)
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/bench.db")
        provider, selection = _model(args, recorded, task["id"])
        session = RunSession(store, provider, cache=False)
        try:
            base = _stored_base(store, task)
            ports = ChatPorts(
                drive=session.finish,
                check_graph=session.check_graph,
                check_run=session.check_executable,
                llm=selection,
            )
            chat = Chat(store, ports)
            conversation = chat.open(task["id"].replace("_", " "), base)
            await _turns(chat, store, conversation.id, task, base, outcome)
        except Exception as exc:  # a task that breaks the harness is reported, not the end of the run
            outcome.note = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            await session.aclose()
            store.close()
    return outcome


def _model(args: argparse.Namespace, recorded: dict[str, Any] | None, task_id: str) -> tuple[Any, Any]:
    """The designer's provider and the selection its runs record (a replay: the recorded answers,
    in order, and a selection that is not the embedded model's, so no design is retrieved)."""
    if recorded is not None:
        from plait.testing import scripted

        answers = recorded.get(task_id, [])
        if answers == "retrieved":  # designed from a starter: no model answers, the design is retrieved again
            return scripted(), {"llm": "local"}
        return scripted(in_order=answers), {"llm": "replay"}
    from plait.runs.model_choice import chosen

    return chosen(args.llm, args.config)


def _stored_base(store: Any, task: dict[str, Any]) -> str | None:
    if "base" not in task:
        return None
    from plait.compile import compile_file
    from plait.evolve.save import save_graph

    result = compile_file(ROOT / task["base"])
    assert result.expanded is not None, [d.format() for d in result.errors]
    return str(save_graph(store, result.expanded).stored.slug)


async def _turns(chat: Any, store: Any, sid: str, task: dict[str, Any], base: str | None, outcome: Outcome) -> None:
    messages = await chat.send(sid, task["request"])
    last = messages[-1]
    if last.kind == "questions":
        outcome.questions = len(last.content["questions"])
        before = chat.store.chat.open_draft(sid)
        messages = await chat.answer(sid, {q["id"]: _auto_answer(q) for q in last.content["questions"]})
        last = messages[-1]
        after = chat.store.chat.get_draft(before.id) if before else None
        outcome.answered_changed = bool(before and after and after.document != before.document)
    drafts = [m for m in messages if m.kind == "draft"]
    if not drafts:
        outcome.status = str(last.kind)
        outcome.note = str(last.content.get("text", ""))[:200]
        _spent(store, chat, sid, outcome)
        return
    content = drafts[-1].content
    outcome.status, outcome.rounds = str(content["status"]), int(content.get("rounds") or 0)
    _spent(store, chat, sid, outcome, drafts[-1])
    if outcome.status != "proposed":
        outcome.note = "; ".join(e["code"] for e in content.get("errors", []))[:200]
        return
    accepted = chat.accept(sid, drafts[-1].draft_id)
    outcome.accepted = True
    graph = store.graphs.get(accepted.content["graph"]).graph
    base_graph = store.graphs.get(base, 1).graph if base else None
    problems = _checked(graph, base_graph, task["check"])
    outcome.ran = await _run_scripted(store, accepted.content["graph"], graph)
    outcome.passed = not problems and outcome.ran in ("completed", "paused")
    outcome.note = "; ".join(problems)[:200]


def _auto_answer(question: dict[str, Any]) -> Any:
    choices = question.get("choices") or []
    if question.get("kind") == "multiple":
        return choices[:1]
    return choices[0] if choices else "As you think best."


def _spent(store: Any, chat: Any, sid: str, outcome: Outcome, draft_message: Any = None) -> None:
    """The designer's tokens, and the answers it gave (for --record)."""
    from plait.llm.tokens import EstimateCounter

    runs = [r for d in store.chat.drafts(sid) for r in d.designer_runs]
    for run_id in runs:
        run = store.runs.get(run_id)
        outcome.tokens_in += run.tokens_input
        outcome.tokens_out += run.tokens_output
        outcome.answers.append({k: v for k, v in (run.output or {}).items() if not k.startswith("_")})
    if not runs:
        outcome.answers = "retrieved"  # type: ignore[assignment]
    if draft_message is not None:
        counter = EstimateCounter()
        draft = store.chat.get_draft(draft_message.draft_id)
        outcome.ops_tokens = counter.count(json.dumps(draft.operations, separators=(",", ":")))
        outcome.whole_tokens = counter.count(json.dumps(draft.document, separators=(",", ":")))


def _checked(graph: Any, base: Any, check: dict[str, Any]) -> list[str]:
    """Why the accepted graph fails the task's check (empty: it passes)."""
    problems: list[str] = []
    kinds = [str(n.type) for n in graph.nodes]
    before = [str(n.type) for n in base.nodes] if base is not None else []
    for kind, count in (check.get("types") or {}).items():
        if kinds.count(kind) < count:
            problems.append(f"fewer than {count} {kind}")
    for kind, count in (check.get("more") or {}).items():
        if kinds.count(kind) < before.count(kind) + count:
            problems.append(f"not {count} more {kind}")
    declared = ((graph.input_schema or {}).get("properties") or {}).keys()
    problems += [f"input lacks {name}" for name in check.get("input") or [] if name not in declared]
    ids = {n.id: n for n in graph.nodes}
    problems += [f"still has {name}" for name in check.get("without") or [] if name in ids]
    for node_id, wanted in (check.get("upstream") or {}).items():
        if not _upstream_of(graph, node_id, wanted):
            problems.append(f"no {wanted} before {node_id}")
    for node_id, fields in (check.get("field") or {}).items():
        for name, text in fields.items():
            value = str(getattr(ids.get(node_id), name, "")).lower() if node_id in ids else ""
            if not any(part in value for part in str(text).lower().split("|")):
                problems.append(f"{node_id}.{name} lacks {text!r}")
    if check.get("edges_named"):
        llm = {n.id for n in graph.nodes if str(n.type) == "LLM_CALL"}
        problems += [
            f"edge from {e.source_node_id} names no schema"
            for e in graph.edges
            if e.source_node_id in llm and not e.schema_id
        ]
    return problems


def _upstream_of(graph: Any, node_id: str, kind: str) -> bool:
    parents: dict[str, list[str]] = {}
    for edge in graph.edges:
        parents.setdefault(edge.target_node_id, []).append(edge.source_node_id)
    types = {n.id: str(n.type) for n in graph.nodes}
    seen, todo = set(), list(parents.get(node_id, []))
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if types.get(current) == kind:
            return True
        todo += parents.get(current, [])
    return False


async def _run_scripted(store: Any, slug: str, graph: Any) -> str:
    """Run the accepted graph on a model answering each call with a minimal value of its schema."""
    from plait.runs.session import RunSession
    from plait.runs.start import start_run
    from plait.testing import scripted

    answers = _minimal_answers(graph.model_dump(mode="json", by_alias=True))
    session = RunSession(store, scripted(*answers), cache=False)
    try:
        run_input = _minimal(graph.input_schema or {"type": "object"})
        run_id = start_run(store, slug, run_input, files=False, check=session.check_executable)
        return str((await session.finish(run_id)).status)
    except Exception as exc:  # reported in the table
        return f"refused: {exc}"[:80]
    finally:
        await session.aclose()


def _minimal_answers(document: dict[str, Any]) -> list[dict[str, Any]]:
    """One scripted rule per model-calling node (inline bodies too): a minimal valid answer."""
    schemas = {s["id"]: s["schema"] for s in document.get("schemas") or []}
    rules: list[dict[str, Any]] = []
    for node in document.get("nodes") or []:
        if node.get("body"):
            rules += _minimal_answers(node["body"])
        decided = (node.get("condition_llm") or {}).get("choices")
        if decided:
            rules.append({"node": node["id"], "output": {"branch": decided[0]}})
        if node.get("type") != "LLM_CALL":
            continue
        out = [e.get("schema_id") for e in document.get("edges") or [] if e.get("source_node_id") == node["id"]]
        schema = next((schemas[s] for s in out if s in schemas), None)
        rules.append({"node": node["id"], **({"output": _minimal(schema)} if schema else {"text": "ok"})})
    return rules


def _minimal(schema: Any) -> Any:
    """A small value `schema` accepts (for the shapes designs use)."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _minimal(schema[key][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {name: _minimal(props.get(name, {})) for name in schema.get("required") or []}
    if kind == "array":  # one item at least: a required list left empty fails the node's non-empty check
        count = max(schema.get("minItems", 1), 1) if schema.get("maxItems", 1) > 0 else 0
        return [_minimal(schema.get("items") or {}) for _ in range(count)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    return "x"


def _report(outcomes: list[Outcome], args: argparse.Namespace) -> None:
    total = len(outcomes)
    designed = [o for o in outcomes if o.answers != "retrieved"]
    valid = [o for o in outcomes if o.status == "proposed"]
    first = [o for o in valid if o.rounds <= 1]
    rounds = sorted(o.rounds for o in valid if o.rounds)
    asked = [o for o in outcomes if o.questions]
    edits = [o for o in valid if not o.new and o.whole_tokens and o.ops_tokens > 2]
    mode = f"replay of {args.replay}" if args.replay else (args.llm or args.config or "the embedded model")
    print(f"designer bench: {total} tasks, {mode}")
    print(f"  valid on the first compile   {len(first)}/{total}")
    if rounds:
        p90 = rounds[min(len(rounds) - 1, int(0.9 * len(rounds)))]
        print(f"  rounds to valid              median {statistics.median(rounds):g}, p90 {p90}")
    print(f"  never valid                  {total - len(valid)}/{total}")
    print(f"  questions asked              {sum(o.questions for o in asked)} in {len(asked)} turns, "
          f"{sum(o.answered_changed for o in asked)} of those turns changed the graph")  # fmt: skip
    new, edited = [o for o in outcomes if o.new], [o for o in outcomes if not o.new]
    print(f"  task success                 {sum(o.passed for o in outcomes)}/{total}: new graphs "
          f"{sum(o.passed for o in new)}/{len(new)}, edits {sum(o.passed for o in edited)}/{len(edited)}")  # fmt: skip
    print(f"  designed by the model        {len(designed)}/{total} (the others retrieved a starter)")
    accepted = [o for o in outcomes if o.accepted and o.answers != "retrieved"]
    if accepted:
        mean_in = statistics.mean(o.tokens_in for o in accepted)
        mean_out = statistics.mean(o.tokens_out for o in accepted)
        print(f"  tokens per accepted graph    {mean_in:,.0f} in, {mean_out:,.0f} out (the designer's)")
    if edits:
        ops = statistics.mean(o.ops_tokens for o in edits)
        whole = statistics.mean(o.whole_tokens for o in edits)
        print(f"  tokens per edit, written     {ops:,.0f} as operations vs {whole:,.0f} as the whole graph "
              f"(x{ops / whole:.2f})")  # fmt: skip
    print()
    print(f"  {'task':32} {'status':9} {'rounds':>6} {'q':>2} {'check':6} {'run':10} note")
    for o in outcomes:
        check = "pass" if o.passed else ("fail" if o.accepted else "-")
        print(f"  {o.task:32} {o.status:9} {o.rounds:>6} {o.questions:>2} {check:6} {o.ran[:10]:10} {o.note[:60]}")
    if args.json:
        print(json.dumps([o.__dict__ for o in outcomes], default=str, indent=1))


if __name__ == "__main__":
    main()
