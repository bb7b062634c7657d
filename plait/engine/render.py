"""Rendering: what names a node sees, and prompts rendered from the normalised templates.

Data is inserted as data (Jinja never re-parses a value). In a prompt (a text rendered against
a `PromptBudget`) a value reads as a person would write it (`to_text`): a list one item per
line, an object one `key: value` line per field, `| tojson` for JSON; anywhere else (a
program's arguments, an MCP URI, a child run's inputs) a value that is not a text is JSON, which
is what a program parses. `context_max_chars` (characters) and `token_budget_input` (tokens of
the node's model, see `prompt_budget`) are budgets shared by every insertion of one node's
prompts: once spent, further values are cut with a visible marker, or, with `context_overflow:
retrieve`, replaced by their most relevant passages (`overflow.py`).

Every render is bounded by the render budget (`render_limits.py`). Executors render with
`arender`, which renders on the event loop while the render stays small and starts it again on a
thread when it needs more, so that a large render never holds the loop. What is rendered goes into
a node's input snapshot as a bounded prefix (`for_the_record`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Collection, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from plait.caches import bounded, text_weight
from plait.compile.plan import NodePlan
from plait.compile.refs import (
    NODE_ID_NAME,
    OUTPUT_STEP,
    STATE_ALIASES,
    RefError,
    RefKind,
    ResolvedRef,
    resolve_ref,
)
from plait.compile.template_types import Template
from plait.compile.templates import split_path
from plait.engine.insertions import Insertions
from plait.engine.render_limits import (
    LIMITS,
    ON_THE_LOOP,
    OverTheLoopBudget,
    RenderLimits,
    printed,
    start_meter,
    stop_meter,
)
from plait.engine.state import RunState
from plait.llm.tokens import CHARS_PER_TOKEN, ESTIMATE, TokenCounter
from plait.model.nodes import NodeBase, ParamType, node_field

COMPILED_WEIGHT = 24
"""Bytes a compiled template holds per character of its source (measured with tracemalloc:
14-19 for templates full of expressions and loops, 1 for plain text)."""
RECORD_CHARS = 262_144
"""The most characters of one rendered text an input snapshot keeps (the rest is counted in a marker)."""
_CUT = re.compile(r"…\[(\d+) more characters not kept in this record\]$")
_SINGLE_REF = re.compile(r"^\{\{\s*([^\W\d][\w.\[\]]*)\s*\}\}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff]")


@dataclass
class PromptBudget:
    """What the values inserted in one node's prompts may still take. A text rendered against
    one is a prompt, so its values read as text (`to_text`)."""

    remaining: int | None
    """Characters inserted values may still take (None: no limit)."""
    sanitize: bool = False
    truncated: int = 0
    """Characters cut, in all."""
    tokens: int | None = None
    """Tokens of `counter` inserted values may still take (None: no limit)."""
    counter: TokenCounter = ESTIMATE
    log: Insertions | None = None
    """The values inserted, and what replaces some of them (`context_overflow: retrieve`)."""

    def copy(self) -> PromptBudget:
        """`dataclasses.replace(self)`, without its field-by-field introspection (every render tries
        on a copy, see `arender`)."""
        log = self.log.copy() if self.log is not None else None
        return PromptBudget(self.remaining, self.sanitize, self.truncated, self.tokens, self.counter, log)

    def take(self, text: str) -> str:
        """`text` as far as the budgets allow, with a marker saying how much was cut; the rest is spent."""
        if self.log is not None and (planned := self.log.insert(text)) is not None:  # its chosen passages
            self.truncated += planned.omitted_chars
            if not planned.counted:
                return planned.shown
            text = planned.shown
        kept = text if self.remaining is None else text[: self.remaining]
        if self.tokens is not None:
            used = self.counter.count(kept)
            if used > self.tokens:
                kept, used = self.counter.truncate(kept, self.tokens), self.tokens
            self.tokens -= used
        if self.remaining is not None:
            self.remaining -= len(kept)
        if len(kept) == len(text):
            return text
        cut = len(text) - len(kept)
        self.truncated += cut
        return kept + f"…[truncated {cut} chars]"


_budget: ContextVar[PromptBudget | None] = ContextVar("plait_render_budget", default=None)


def to_text(value: Any) -> str:
    """How a value reads in a prompt: a model reads lines better than JSON. A text as it is; a
    list one item per line; an object one `key: value` line per field; a list or object inside
    a line as one line of JSON; a number or boolean as JSON (`true`); nothing (None) as nothing."""
    if isinstance(value, list | tuple):
        return "\n".join(json_text(item) for item in value)
    if isinstance(value, dict):
        return "\n".join(f"{key}: {json_text(item)}" for key, item in value.items())
    return json_text(value)


def json_text(value: Any) -> str:
    """How a value reads outside a prompt (a program's argument, a URI, an answer shown as it
    was given) and inside one line of a prompt: a text as it is, nothing as nothing, anything
    else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if type(value) is int:  # what JSON writes for it, without the encoder (a count, an id: common)
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _finalize(value: Any) -> str:
    from jinja2 import Undefined

    budget = _budget.get()
    if budget is None:
        return "" if isinstance(value, Undefined) else json_text(value)
    text = "" if isinstance(value, Undefined) else to_text(value)
    if budget.sanitize:
        text = _CONTROL.sub("", text)
    return budget.take(text)


def _tojson(value: Any, indent: int | None = None) -> str:
    """`| tojson` as plain JSON: prompts are not HTML, so `<`, `&` and `'` stay as written
    (Jinja's own filter escapes them for HTML), and non-ASCII text stays readable."""
    return json.dumps(value, ensure_ascii=False, indent=indent)


def for_the_record(text: str | None) -> str | None:
    """`text` as an input snapshot keeps it: whole up to `RECORD_CHARS`, else its beginning and
    a marker saying how many characters were left out."""
    if text is None or len(text) <= RECORD_CHARS:
        return text
    return text[:RECORD_CHARS] + f"…[{len(text) - RECORD_CHARS} more characters not kept in this record]"


def cut_for_the_record(text: str) -> bool:
    """Whether `text` (from an input snapshot) is a prefix `for_the_record` cut."""
    return len(text) > RECORD_CHARS and _CUT.search(text) is not None


@cache
def _environment() -> Any:
    from jinja2 import ChainableUndefined

    from plait.engine.render_limits import BudgetedEnvironment

    class DataFirst(BudgetedEnvironment):
        """`{{ make.items }}` is the output field `items`, not `dict.items`: in Plait's templates
        data keys win over Python attributes (Jinja tries the attribute first). `<node_id>.output`
        is read as `plait.compile.refs` resolves it (`_output_of`)."""

        def getattr(self, obj: Any, attribute: str) -> Any:
            if isinstance(obj, dict) and attribute in obj:
                return obj[attribute]
            return super().getattr(obj, attribute)

        def _parse(self, source: str, name: str | None, filename: str | None) -> Any:
            from plait.engine.render_aliases import with_output_of

            return with_output_of(super()._parse(source, name, filename))

    environment = DataFirst(
        autoescape=False, keep_trailing_newline=True, undefined=ChainableUndefined, finalize=_finalize
    )
    environment.add_filter("tojson", _tojson)
    return environment


@bounded("compiled templates", max_bytes=64 << 20, weigh=lambda _, args: COMPILED_WEIGHT * len(args[0]) + 32_768)
def _compiled(source: str) -> Any:
    return _environment().from_string(source)


@dataclass
class NodeView:
    """The names a node's templates and expressions see, and its templates as the compiler parsed them."""

    names: dict[str, Any]
    """Template names: input, nodes, current, params, context, every available node id, and the
    other names for some of them (`currentInput`, `nodeOutputs`, `currentNodeId`)."""
    context_slice: dict[str, Any]
    plan: NodePlan
    _prepared: dict[tuple[str, int], str] = field(default_factory=dict, repr=False)
    """Texts `prepare` rendered already, by template and budget: `render` hands them out once."""

    def render(self, text: str, budget: PromptBudget | None = None, names: dict[str, Any] | None = None) -> str:
        """One of the node's templates (`text`, as its definition has it) rendered against its
        names (or `names`), inserted values counted against `budget`; on the calling thread,
        unless `prepare` rendered it already."""
        if not text:
            return ""
        if names is None and self._prepared:
            ready = self._prepared.pop((text, id(budget)), None)
            if ready is not None:
                return ready
        return render(self.plan.template(text), self.names if names is None else names, budget)

    async def arender(self, text: str, budget: PromptBudget | None = None, names: dict[str, Any] | None = None) -> str:
        """`render`, on a thread when the render turns out large (see `arender`)."""
        if not text:
            return ""
        return await arender(self.plan.template(text), self.names if names is None else names, budget)

    async def prepare(self, texts: Iterable[str | None], budget: PromptBudget | None) -> None:
        """Render `texts` with `budget`, in the order the synchronous code that uses them will
        (each once, off the loop when large): its `render` calls then find them done."""
        for text in texts:
            if text:
                self._prepared[(text, id(budget))] = await self.arender(text, budget)

    @property
    def js_scope(self) -> dict[str, Any]:
        return {"input": self.names["input"], "nodes": self.names["nodes"], "current": self.names["current"]}


def build_view(state: RunState, node: NodeBase) -> NodeView:
    """The names `node` sees now (input, nodes, current, params, context; inside an inlined SKILL,
    its own names and inputs) with its templates as the compiler parsed them."""
    outputs = state.outputs()
    run_input: Any = state.input
    scope = state.compiled.scopes.get(node.id)
    if scope is not None:  # inside an inlined SKILL: its own ids unprefixed, `input` = the SKILL's inputs
        parent = {**outputs, "input": state.input, "nodes": outputs}
        run_input = render_value(scope.inputs, parent, state.compiled.plan.nodes[node.id])
        inner = {k[len(scope.prefix) :]: v for k, v in outputs.items() if k.startswith(scope.prefix)}
        outputs = {**outputs, **inner}
    names: dict[str, Any] = {**outputs, "input": run_input, "nodes": outputs, "current": state.current_for(node.id)}
    if scope is not None and not state.compiled.in_edges[node.id]:
        names["current"] = run_input
    names.update({alias: names[plait_name] for alias, plait_name in STATE_ALIASES.items()})
    names[NODE_ID_NAME] = node.id
    names["params"] = _params(node, names)
    names.update(names["params"])
    context = _context_slice(state, node, outputs, run_input)
    names["context"] = context
    return NodeView(names, context, state.compiled.plan.nodes[node.id])


def js_scope(state: RunState, node: NodeBase) -> dict[str, Any]:
    """What a node's JavaScript (or Python CODE) sees: `input`, `current`, and of `nodes` the
    outputs the plan says it reads (those it names, else every upstream one), so that a long run
    does not hand every evaluation every earlier output, and what it is given is what the ledger
    records it read."""
    if state.compiled.scopes.get(node.id) is not None:  # inside a SKILL: ids are remapped
        return build_view(state, node).js_scope
    nodes = state.outputs_named(state.compiled.plan.nodes[node.id].js_names)
    return {"input": state.input, "nodes": nodes, "current": state.current_for(node.id)}


def _params(node: NodeBase, names: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for param in node_field(node, "params", []):
        if param.type is ParamType.INPUT:
            values[param.name] = param.value
        else:
            values[param.name] = lookup(names, split_path(param.reference_node))
    return values


def _context_slice(state: RunState, node: NodeBase, outputs: dict[str, Any], run_input: Any) -> dict[str, Any]:
    include = node.context_include
    if include is None:
        include = state.active_predecessors(node.id)
    return {name: (run_input if name == "input" else outputs.get(name)) for name in include}


def resolved(names: dict[str, Any], path: tuple[str | int, ...]) -> ResolvedRef | None:
    """What `path` names among `names` (None: nothing), as `lookup` reads it."""
    try:
        return resolve_ref(path, _Roots(names), names.get("params", {}))
    except RefError:
        return None


class _Roots(Collection[str]):
    """The names a path may start with: `names` but `params` and `context`. A view, not a copy:
    most paths start with `input` or `current` and never look, and `names` holds every output."""

    __slots__ = ("_names",)
    _NOT_ROOTS = frozenset({"params", "context"})

    def __init__(self, names: dict[str, Any]) -> None:
        self._names = names

    def __contains__(self, name: object) -> bool:
        return name in self._names and name not in self._NOT_ROOTS

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._names if name not in self._NOT_ROOTS)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def named_value(names: dict[str, Any], ref: ResolvedRef) -> Any:
    """The value `ref`'s root names in `names` (the run input, a node's output, a param...)."""
    if ref.kind is RefKind.PARAM:
        return names["params"].get(str(ref.target))
    if ref.kind is RefKind.NODE:
        return names["nodes"].get(str(ref.target), names.get(str(ref.target)))
    if ref.kind is RefKind.NODE_ID:
        return names.get(NODE_ID_NAME)
    return names["input" if ref.kind is RefKind.INPUT else "current"]


def has_output_field(value: Any) -> bool:
    """Whether `value` has a field `output` (then `<node_id>.output` reads it, not the whole value)."""
    return isinstance(value, dict) and OUTPUT_STEP in value


def lookup(names: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    """Value at `path` (`node.field[0]`), or None when any step is missing."""
    ref = resolved(names, path)
    if ref is None:
        return None
    current = named_value(names, ref)
    for step in ref.inside(has_output_field(current)):
        if isinstance(current, dict):
            current = current.get(str(step)) if str(step) in current else current.get(step)
        elif isinstance(current, list) and isinstance(step, int) and -len(current) <= step < len(current):
            current = current[step]
        else:
            return None
    return current


def value_at(names: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    """`lookup`, where `context.x` reads the node's context slice too: the value a template
    printing `path` would show (None when there is none)."""
    if path[0] != "context":
        return lookup(names, path)
    value: Any = names.get("context")
    for step in path[1:]:
        value = value.get(str(step)) if isinstance(value, dict) else None
    return value


def render(
    template: Template,
    names: dict[str, Any],
    budget: PromptBudget | None = None,
    *,
    limits: RenderLimits = LIMITS,
    on_loop: bool = False,
) -> str:
    """Render one parsed template (any of the three spellings, normalised) against `names`,
    within `limits` (`RenderLimitError`; with `on_loop`, `OverTheLoopBudget`)."""
    if not template.refs and "{" not in template.source:
        return template.source
    token = _budget.set(budget)
    meter = start_meter(limits, on_loop=on_loop)
    try:
        plain = _plain(template.source)
        values = None if plain is None else _looked_up(plain, names)
        if plain is not None and values is not None:
            return printed(_plain_chunks(plain, values))
        compiled = _compiled(template.source)
        return printed(compiled.root_render_func(compiled.new_context(names)))
    finally:
        stop_meter(meter)
        _budget.reset(token)


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PLAIN_PRINT = re.compile(rf"\{{\{{ *({_NAME}(?:\.{_NAME})*) *\}}\}}")
"""`{{ name.field.field }}`: a path printed as it is, no filter, no whitespace control."""
Plain = tuple[tuple[str, tuple[str, ...] | None], ...]


@bounded("plain templates", max_bytes=4 << 20, weigh=text_weight)
def _plain(source: str) -> Plain | None:
    """`source` as (text, path printed after it) pairs when that is all it is, as most prompts
    are (`Feedback: {{ input.feedback }}`); None: Jinja renders it. Text holding a brace (a
    block, a comment, JSON), a carriage return (Jinja rewrites newlines) or a path through
    `output` (read as the node's whole output) is left to Jinja."""
    parts: list[tuple[str, tuple[str, ...] | None]] = []
    at = 0
    for match in _PLAIN_PRINT.finditer(source):
        parts.append((source[at : match.start()], tuple(match.group(1).split("."))))
        at = match.end()
    parts.append((source[at:], None))
    for text, path in parts:
        if "{" in text or "}" in text or "\r" in text or (path is not None and OUTPUT_STEP in path):
            return None
    return tuple(parts)


def _looked_up(plain: Plain, names: dict[str, Any]) -> list[Any] | None:
    """The value of each path `plain` prints, read as Jinja reads it here (a name the render is
    given, then data keys); None when a step is anything else (a global, an attribute, a
    missing field): Jinja renders it, with its own rules."""
    values: list[Any] = []
    for _, path in plain:
        if path is None:
            continue
        if path[0] not in names:
            return None
        value = names[path[0]]
        for step in path[1:]:
            if type(value) is not dict or step not in value:
                return None
            value = value[step]
        values.append(value)
    return values


def _plain_chunks(plain: Plain, values: list[Any]) -> Iterator[str]:
    """What Jinja's compiled template yields for `plain`: each text, each value finalized."""
    found = iter(values)
    for text, path in plain:
        if text:
            yield text
        if path is not None:
            yield _finalize(next(found))


async def arender(template: Template, names: dict[str, Any], budget: PromptBudget | None = None) -> str:
    """`render`, without holding the event loop: tried on the loop within `ON_THE_LOOP`; a render
    that needs more is started again on a thread with the full budget (rendering changes nothing
    but `budget`, which each try takes from where it stood)."""
    if not template.refs and "{" not in template.source:
        return template.source
    trial = budget.copy() if budget is not None else None
    try:
        text = render(template, names, trial, limits=ON_THE_LOOP, on_loop=True)
    except OverTheLoopBudget:
        trial = budget.copy() if budget is not None else None
        text = await asyncio.to_thread(render, template, names, trial)
    if budget is not None and trial is not None:
        vars(budget).update(vars(trial))  # what the try spent, cut and inserted
    return text


def render_value(value: Any, names: dict[str, Any], plan: NodePlan) -> Any:
    """Render templates inside a JSON value; a string that is exactly `{{ path }}` keeps the value's type."""
    if isinstance(value, str):
        single = _SINGLE_REF.match(value.strip())
        if single:
            return lookup(names, split_path(single.group(1)))
        return render(plan.template(value), names)
    if isinstance(value, dict):
        return {k: render_value(v, names, plan) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, names, plan) for v in value]
    return value


async def arender_value(value: Any, names: dict[str, Any], plan: NodePlan) -> Any:
    """`render_value`, each template rendered with `arender`."""
    if isinstance(value, str):
        single = _SINGLE_REF.match(value.strip())
        if single:
            return lookup(names, split_path(single.group(1)))
        return await arender(plan.template(value), names)
    if isinstance(value, dict):
        return {k: await arender_value(v, names, plan) for k, v in value.items()}
    if isinstance(value, list):
        return [await arender_value(v, names, plan) for v in value]
    return value


def prompt_budget(node: NodeBase, counter: TokenCounter = ESTIMATE) -> PromptBudget:
    """What inserted values a node's prompts may take: `context_max_chars` characters and
    `token_budget_input` tokens, counted by `counter` (the node's model's tokenizer). Without a
    real tokenizer the tokens become characters at ~4 per token and the smaller limit wins."""
    chars = node.context_max_chars
    tokens = node_field(node, "token_budget_input", None)
    if tokens is not None and not counter.exact:
        chars = min(x for x in (chars, int(tokens) * CHARS_PER_TOKEN) if x is not None)
        tokens = None
    sanitize = bool(node_field(node, "sanitize_input", False))
    return PromptBudget(remaining=chars, sanitize=sanitize, tokens=tokens, counter=counter)
