"""Few-shot examples from corrections (docs/corrections.md): a person's overrides of a node
in earlier runs of the same graph become (input, corrected output) pairs in the node's prompt.

With `use_overrides_as_fewshot`, up to `fewshot_max_count` pairs are chosen by
`fewshot_selection`: `latest` (newest corrections), `random`, or `similar` (closest inputs to
this call's prompt: all-MiniLM-L6-v2 sentence embeddings when `plait[similar]` is installed,
see `plait.llm.embedding`, else a cosine over word counts). The pairs are
appended to the system prompt, and recorded in the input snapshot (`fewshot`).

A run an evaluation makes says which corrections its pool must leave out (`RunRecord.options`,
`fewshot_exclude`: the evaluated case's own correction, and with a time split every correction
made after it), so that a case is never answered by learning its expected value; what the run
says is read with the run, so a resumed run leaves out the same ones. Runs evaluations make are
never in any pool (`RunRepository.corrections_of`).

A correction written under another major version of the node's out-edge schema (or under a
schema its out-edges no longer name) has a shape the model must no longer produce: shown, it
would teach the old shape. Migrating it is the evolve layer's work, above the engine, so it is
left out, and the snapshot says which and why (`fewshot_left_out`). Minor and patch changes
keep the examples: their shape still holds.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plait.model.nodes import FewshotSelection, LlmCallNode
from plait.model.output_meta import SCHEMA_ID, SCHEMA_VERSION, is_current, strip_meta
from plait.store import NodeRunRecord, Store

CANDIDATES = 200
"""Corrections considered per call (the newest ones)."""
EXCLUSIONS_KEPT = 256
"""Runs whose exclusions a source remembers (a run's options never change)."""
FEWSHOT_EXCLUDE = "fewshot_exclude"
"""The key of `RunRecord.options` that leaves corrections out of a run's pools: `{"runs": [run
ids], "node_runs": [node run ids], "before": Unix seconds or null}`."""
LEFT_OUT_LISTED = 20
"""Left-out corrections named in a snapshot (the newest); `fewshot_left_out_count` counts them all."""

Embed = Callable[[Sequence[str]], list[list[float]]]
FewshotLookup = Callable[[LlmCallNode, str], "Fewshot"]
"""(node, rendered user prompt) -> the examples for this call, and the corrections left out."""


@dataclass(frozen=True, slots=True)
class Example:
    """One few-shot pair: what a corrected node run was asked (its rendered user prompt, or its
    context slice as JSON) and the output a person gave it instead."""

    input: str
    output: Any
    node_run_id: str

    def as_json(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output, "node_run_id": self.node_run_id}


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A correction not shown as an example: the schema and version it was written under, and why."""

    node_run_id: str
    schema_id: str
    version: str
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {
            "node_run_id": self.node_run_id,
            "schema_id": self.schema_id,
            "version": self.version,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Fewshot:
    """The examples chosen for one call, and the corrections left out of the choice."""

    examples: list[Example] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """The input snapshot's keys: `fewshot`, and when any was left out `fewshot_left_out`
        (the newest `LEFT_OUT_LISTED`) with `fewshot_left_out_count`."""
        shown: dict[str, Any] = {"fewshot": [e.as_json() for e in self.examples]}
        if self.left_out:
            shown["fewshot_left_out"] = [e.as_json() for e in self.left_out[:LEFT_OUT_LISTED]]
            shown["fewshot_left_out_count"] = len(self.left_out)
        return shown


class FewshotSource:
    """Reads corrections from the store for the engine's runs."""

    def __init__(self, store: Store, embed: Embed | None = None):
        self.store = store
        self._embed = embed
        self._exclusions: dict[str, dict[str, Any]] = {}

    def examples(
        self, node: LlmCallNode, graph_id: str, run_id: str, prompt: str, schemas: Mapping[str, str]
    ) -> Fewshot:
        """The examples for one call of `node`, chosen among the corrections written under the
        major versions of `schemas` (the node's out-edge schemas now: {schema id: version})."""
        if not node.use_overrides_as_fewshot or node.fewshot_max_count == 0:
            return Fewshot()
        excluded = self.exclusions(run_id)
        records = self.store.runs.corrections_of(
            graph_id,
            node.id,
            exclude_run=run_id,
            exclude_runs=[str(r) for r in excluded.get("runs") or ()],
            exclude_node_runs=[str(n) for n in excluded.get("node_runs") or ()],
            before=float(excluded["before"]) if excluded.get("before") is not None else None,
            limit=CANDIDATES,
        )
        pool: list[Example] = []
        left_out: list[LeftOut] = []
        for record in records:
            outdated = left_out_of(record, schemas)
            if outdated is None:
                pool.append(_example(record))
            else:
                left_out.append(outdated)
        embed = (self._embed or embedder()) if node.fewshot_selection == FewshotSelection.SIMILAR else None
        return Fewshot(select(pool, node.fewshot_selection, node.fewshot_max_count, prompt, embed), left_out)

    def exclusions(self, run_id: str) -> dict[str, Any]:
        """What the run's options leave out of its pools (empty for a run no evaluation made)."""
        if run_id not in self._exclusions:
            options = self.store.runs.get(run_id).options or {}
            found = options.get(FEWSHOT_EXCLUDE)
            if len(self._exclusions) >= EXCLUSIONS_KEPT:
                self._exclusions.pop(next(iter(self._exclusions)))
            self._exclusions[run_id] = dict(found) if isinstance(found, dict) else {}
        return self._exclusions[run_id]


def left_out_of(record: NodeRunRecord, schemas: Mapping[str, str]) -> LeftOut | None:
    """Why `record`'s correction may not be shown to a node whose out-edge schemas are `schemas`
    ({schema id: version}), or None: it was written under another major version of its schema,
    or under a schema the node's out-edges no longer name. A correction without a schema (the
    node's answer was text) is shown."""
    value = record.override
    if not isinstance(value, dict) or not isinstance(value.get(SCHEMA_ID), str):
        return None
    schema_id, version = value[SCHEMA_ID], str(value.get(SCHEMA_VERSION, "?"))
    current = schemas.get(schema_id)
    if current is None:
        named = ", ".join(f"'{s}'" for s in schemas) or "none"
        reason = f"written under schema '{schema_id}', which the node's out-edges no longer name (they name {named})"
        return LeftOut(record.id, schema_id, version, reason)
    if is_current(value, schema_id, current):
        return None
    reason = (
        f"written under schema '{schema_id}' {version}; the node's out-edge schema is {current} now, another "
        "major version, so the correction no longer has the shape the model must produce"
    )
    return LeftOut(record.id, schema_id, version, reason)


def _example(record: NodeRunRecord) -> Example:
    snapshot = record.input_snapshot or {}
    text = str(snapshot.get("rendered_user_prompt") or json.dumps(snapshot.get("context_slice"), ensure_ascii=False))
    return Example(text, strip_meta(record.override), record.id)


def select(pool: list[Example], how: FewshotSelection, count: int, prompt: str, embed: Embed | None) -> list[Example]:
    """Up to `count` examples of `pool` (newest first): the newest, a random sample, or the ones
    most similar to `prompt` (by `embed`'s vectors, else by word counts), as `how` says."""
    if how == FewshotSelection.LATEST:
        return pool[:count]
    if how == FewshotSelection.RANDOM:
        return random.sample(pool, min(count, len(pool)))
    if not pool:
        return []
    scores = _embedding_scores(pool, prompt, embed) if embed is not None else _lexical_scores(pool, prompt)
    ranked = sorted(range(len(pool)), key=lambda i: -scores[i])
    return [pool[i] for i in ranked[:count]]


def _lexical_scores(pool: list[Example], prompt: str) -> list[float]:
    query = _words(prompt)
    return [_cosine(query, _words(e.input)) for e in pool]


def _embedding_scores(pool: list[Example], prompt: str, embed: Embed) -> list[float]:
    vectors = embed([prompt, *(e.input for e in pool)])
    return [_dot(vectors[0], v) for v in vectors[1:]]


def _words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return sum(a[w] * b[w] for w in a.keys() & b.keys()) / norm if norm else 0.0


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def embedder() -> Embed | None:
    """The local sentence-embedding model (`plait[similar]`), or None: `similar` then compares words."""
    from plait.llm.embedding import local_embedder

    model = local_embedder()
    return model.embed if model is not None else None


def render_examples(examples: list[Example]) -> str:
    """The block appended to the system prompt."""
    parts = ["Examples of answers a person corrected for this step (follow them):"]
    for number, example in enumerate(examples, 1):
        answer = json.dumps(example.output, ensure_ascii=False)
        parts.append(f"Example {number} input:\n{example.input}\nExample {number} corrected answer:\n{answer}")
    return "\n\n".join(parts)
