"""The render budget: a template's rendering is bounded in what it prints, in the steps it takes
and in the text its operations build, whatever the template does.

Jinja's sandbox keeps a template away from Python's internals, but not from Python's speed: one
`{{ 'a' * input.n }}` builds a string of any size, `{% for %}` nested three deep over a 100,000-item
`range` runs 10^15 times, and `~` in a loop doubles a string until memory runs out. So rendering
is metered, per render (a context variable, so that renders on several threads never mix):

- **output**: the characters a template prints, counted as they are produced;
- **steps**: every loop iteration, every call (a macro, a method, `loop()`), and the items a
  filter or a method walks (`|sum`, `|join`, `.count()`);
- **work**: the characters (or items) every operation builds: `*`, `+`, `%`, `**`, `~`, a filter's
  result, a method's result, a block captured with `{% set %}` or a macro's body. The operations
  whose result size is known beforehand (`*`, `+`, `~`, `join`, `replace`, `center`, `indent`,
  widths in `%` and `format` specs, `**` on integers) are checked before they run, so no single
  one can allocate past the budget.

Going over any of them raises `RenderLimitError` naming the limit. `lipsum` is not offered.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator, Sized
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes, pass_context
from jinja2.compiler import CodeGenerator, Frame
from jinja2.sandbox import ImmutableSandboxedEnvironment


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """How much one render may print, step and build."""

    output_chars: int
    steps: int
    work_chars: int


LIMITS = RenderLimits(output_chars=4_000_000, steps=1_000_000, work_chars=32_000_000)
"""A render's budget: 4 million characters printed, a million steps, 32 million characters built."""
ON_THE_LOOP = RenderLimits(output_chars=65_536, steps=20_000, work_chars=1_000_000)
"""What a render may take on the event loop (a few milliseconds at most): one that needs more is
stopped and rendered again from the start on a thread, with `LIMITS`."""


class RenderLimitError(Exception):
    """A template went over its render budget; the message names the limit and how to stay within it."""


class OverTheLoopBudget(Exception):
    """A render on the event loop needs more than `ON_THE_LOOP`: render it on a thread instead."""


@dataclass
class _Meter:
    limits: RenderLimits
    on_loop: bool
    output: int = 0
    steps: int = 0
    work: int = 0

    def over(self, what: str, limit: int, advice: str) -> Exception:
        if self.on_loop:
            return OverTheLoopBudget(what)
        return RenderLimitError(f"the template {what} {limit:,} {advice}")

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > self.limits.steps:
            what = "took more steps (loop iterations, calls, items walked) than the render limit of"
            raise self.over(what, self.limits.steps, "allows; loop over less data, or do the work in a TRANSFORM")

    def build(self, size: int) -> None:
        """Count `size` characters (or items) an operation is about to build."""
        self.work += size
        if self.work > self.limits.work_chars:
            raise self.over("built more text (with `*`, `+`, `~`, filters, string methods) than the render limit of",
                            self.limits.work_chars, "characters allows; build less")  # fmt: skip

    def print(self, size: int) -> None:
        self.output += size
        if self.output > self.limits.output_chars:
            raise self.over("printed more than the render limit of", self.limits.output_chars,
                            "characters; print less, or cut the data it prints")  # fmt: skip


_meter: ContextVar[_Meter | None] = ContextVar("plait_render_meter", default=None)


def _current() -> _Meter:
    """The meter of the render in progress; outside one (Jinja folding constants while it compiles
    a template), a fresh one for this operation alone, so that no single operation goes past the
    full budget."""
    meter = _meter.get()
    return meter if meter is not None else _Meter(LIMITS, on_loop=False)


def start_meter(limits: RenderLimits, *, on_loop: bool) -> Token[_Meter | None]:
    """Meter what renders from now on in this context (one template): over `limits` raises
    `RenderLimitError`, or with `on_loop` `OverTheLoopBudget`. Pass the token to `stop_meter`."""
    return _meter.set(_Meter(limits, on_loop))


def stop_meter(token: Token[_Meter | None]) -> None:
    _meter.reset(token)


def printed(chunks: Iterable[str]) -> str:
    """A template's output (its root render function's chunks), counted as it is produced."""
    meter = _current()
    out: list[str] = []
    for chunk in chunks:
        meter.print(len(chunk))
        out.append(chunk)
    return "".join(out)


# -- sizes known before an operation runs ------------------------------------------------------------------


def _size(value: Any) -> int:
    """Characters or items of a built value (what `build` counts)."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3  # about its decimal digits
    return 1


def _repeat_size(left: Any, right: Any) -> int | None:
    """The size of `left * right` when one is a sequence and the other an int; None otherwise."""
    if isinstance(right, int) and isinstance(left, str | list | tuple):
        return len(left) * max(right, 0)
    if isinstance(left, int) and isinstance(right, str | list | tuple):
        return len(right) * max(left, 0)
    if isinstance(left, int) and isinstance(right, int):
        return (left.bit_length() + right.bit_length()) // 3
    return None


_WIDTH = re.compile(r"%[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")


def _format_widths(spec_text: str, where: str) -> int:
    """The widest field a `%` format string asks for (a `*` width, taken from the values, is refused)."""
    widest = 0
    for match in _WIDTH.finditer(spec_text):
        for part in match.groups():
            if part == "*":
                raise RenderLimitError(f"{where}: a width taken from a value (`*`) is not supported in templates")
            if part:
                widest = max(widest, int(part))
    return widest


def _brace_widths(text: str) -> int:
    """The widest field a `str.format` string asks for (a width taken from a value is refused)."""
    widest = 0
    for _, _, spec, _ in string.Formatter().parse(text):
        if spec and "{" in spec:
            raise RenderLimitError("format(): a width taken from a value is not supported in templates")
        widest = max([widest, *(int(n) for n in re.findall(r"\d+", spec or ""))])
    return widest


def _join_size(items: list[Any], separator: str) -> int:
    return sum(len(str(item)) for item in items) + len(separator) * max(len(items) - 1, 0)


def _replace_size(text: str, old: str, new: str, count: int = -1) -> int:
    hits = text.count(old) if old else len(text) + 1
    if count >= 0:
        hits = min(hits, count)
    return len(text) + hits * (len(new) - len(old))


# -- the environment ---------------------------------------------------------------------------------------


class _Steps:
    """Iterates `iterable`, one step per item; keeps its length where it has one (`loop.length`)."""

    def __init__(self, iterable: Any) -> None:
        self._iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        meter = _current()
        for item in self._iterable:
            meter.step()
            yield item

    def __len__(self) -> int:
        return len(self._iterable)


STEPS_FILTER = "__plait_steps__"
"""The filter every `{% for %}`'s iterable is passed through (`_Steps`). A context filter, so that
Jinja never calls it while it compiles (folding constants)."""


@pass_context
def _steps(_context: Any, iterable: Any) -> _Steps:
    return _Steps(iterable)


class _Generator(CodeGenerator):
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.joined((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` (a filter) with its input walked counted as steps, its result as work, and the
    filters that can grow a value checked before they run."""
    pre = _PRECHECKS.get(name)

    def filtered(*args: Any, **kwargs: Any) -> Any:
        meter = _current()
        own = _value_after_pass_arg(args)
        value = own[0] if own else None
        if isinstance(value, Sized):
            meter.step(len(value))
        if pre is not None:
            meter.build(pre(*args, **kwargs))
        result = func(*args, **kwargs)
        if pre is None:
            meter.build(_size(result))
        return result

    for attribute in ("jinja_pass_arg",):  # pass_context / pass_eval_context / pass_environment filters
        if hasattr(func, attribute):
            setattr(filtered, attribute, getattr(func, attribute))
    return filtered


def _value_after_pass_arg(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The filter's own arguments (the value first) after what `pass_*` filters are given first."""
    from jinja2.nodes import EvalContext
    from jinja2.runtime import Context

    return args[1:] if args and isinstance(args[0], EvalContext | Context) else args


def _center(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    width = kwargs.get("width", rest[0] if rest else 80)
    return max(len(str(value)), int(width))


def _indent(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    width = kwargs.get("width", rest[0] if rest else 4)
    pad = len(width) if isinstance(width, str) else int(width)
    text = str(value)
    return len(text) + pad * (text.count("\n") + 1)


def _join(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    separator = kwargs.get("d", rest[0] if rest else "")
    items = list(value) if isinstance(value, Iterable) else []
    return _join_size(items, str(separator))


def _replace(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    old = str(kwargs.get("old", rest[0] if rest else ""))
    new = str(kwargs.get("new", rest[1] if len(rest) > 1 else ""))
    count = kwargs.get("count", rest[2] if len(rest) > 2 else None)
    return _replace_size(str(value), old, new, -1 if count is None else int(count))


def _format(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    return len(str(value)) + _format_widths(str(value), "format") + sum(len(str(a)) for a in rest)


def _count_argument(position: int, keyword: str) -> Callable[..., int]:
    """A filter whose argument at `position` (or `keyword`) is a count of things it makes."""

    def check(*args: Any, **kwargs: Any) -> int:
        own = _value_after_pass_arg(args)
        count = kwargs.get(keyword, own[position] if len(own) > position else 1)
        _current().step(max(int(count), 0))
        return _size(own[0]) if own else 0

    return check


def _wordwrap(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    width = int(kwargs.get("width", rest[0] if rest else 79))
    wrap = kwargs.get("wrapstring", rest[2] if len(rest) > 2 else "\n")
    text = str(value)
    return len(text) + len(str(wrap)) * (len(text) // max(width, 1) + 1)


def _tojson(*args: Any, **kwargs: Any) -> int:
    value, *rest = _value_after_pass_arg(args)
    indent = kwargs.get("indent", rest[0] if rest else None)
    if indent is not None and int(indent) > 16:
        raise RenderLimitError("tojson: an indent over 16 is not supported in templates")
    return _size(value) * 8


def _sum(*args: Any, **kwargs: Any) -> int:
    _value, *rest = _value_after_pass_arg(args)
    start = kwargs.get("start", rest[1] if len(rest) > 1 else 0)
    if not isinstance(start, int | float):
        raise RenderLimitError("sum: only numbers can be summed in templates (give `start` a number)")
    return 1


_PRECHECKS: dict[str, Callable[..., int]] = {
    "center": _center,
    "indent": _indent,
    "join": _join,
    "replace": _replace,
    "format": _format,
    "batch": _count_argument(1, "linecount"),
    "slice": _count_argument(1, "slices"),
    "wordwrap": _wordwrap,
    "tojson": _tojson,
    "sum": _sum,
}
"""Filters whose result can be far larger than their input, checked before they run."""

_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
CALL_STEPS = 25
"""Steps a call of a macro or of a recursive loop counts: each costs as much as some 25 loop
iterations (a new context and frame; about 25 µs, measured)."""
_HEAVY_CALLS = frozenset({"Macro", "LoopContext"})


def _method_size(method: Any, args: tuple[Any, ...]) -> int | None:
    """What a method of a string will build, when it can be known before it runs."""
    owner = getattr(method, "__self__", None)
    name = getattr(method, "__name__", "")
    wrapped = getattr(method, "__wrapped__", None)  # the sandbox's wrapper of str.format
    if wrapped is not None and isinstance(getattr(wrapped, "__self__", None), str):
        text = wrapped.__self__
        return int(len(text) + _brace_widths(text) * (text.count("{") + 1) + sum(len(str(a)) for a in args))
    if not isinstance(owner, str):
        return None
    if name in _WIDTH_METHODS and args:
        return max(len(owner), int(args[0]))
    if name == "expandtabs":
        return len(owner) + owner.count("\t") * int(args[0] if args else 8)
    if name == "replace" and len(args) >= 2:
        return _replace_size(owner, str(args[0]), str(args[1]), int(args[2]) if len(args) > 2 else -1)
    if name == "join" and args:
        return _join_size(list(args[0]), owner)
    return None


class BudgetedEnvironment(ImmutableSandboxedEnvironment):
    """The sandboxed environment, metered by the render budget (see the module docstring)."""

    code_generator_class = _Generator
    intercepted_binops = frozenset({"+", "*", "%", "**"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = {name: _bounded_filter(name, func) for name, func in self.filters.items()}
        self.filters[STEPS_FILTER] = _steps
        self.globals.pop("lipsum", None)

    def add_filter(self, name: str, func: Callable[..., Any]) -> None:
        """Register a filter, metered like the built-in ones."""
        self.filters[name] = _bounded_filter(name, func)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for loop in list(tree.find_all(nodes.For)):
            loop.iter = nodes.Filter(loop.iter, STEPS_FILTER, [], [], None, None, lineno=loop.iter.lineno)
        return tree

    @staticmethod
    def joined(parts: tuple[Any, ...]) -> str:
        """`a ~ b`: the parts as text, joined, counted before they are."""
        texts = [str(part) for part in parts]
        _current().build(sum(len(text) for text in texts))
        return "".join(texts)

    @staticmethod
    def concat(chunks: Iterable[str]) -> str:
        """A captured block's or macro's output (`{% set %}...{% endset %}`, a macro body)."""
        texts = list(chunks)
        _current().build(sum(len(text) for text in texts))
        return "".join(texts)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        meter = _current()
        if operator == "*":
            size = _repeat_size(left, right)
            if size is not None:
                meter.build(size)
        elif operator == "+" and isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
            meter.build(len(left) + len(right))
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
            meter.build(left.bit_length() * right // 3)
        elif operator == "%" and isinstance(left, str):
            meter.build(len(left) + _format_widths(left, "%"))
        result = self.binop_table[operator](left, right)
        if operator in ("%", "+") or _repeat_size(left, right) is None:
            meter.build(_size(result))
        return result

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """A call from a template (a macro, a method, `loop()`): a step, plus what it walks."""
        meter = _current()
        meter.step(CALL_STEPS if type(obj).__name__ in _HEAVY_CALLS else 1)
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, Sized) and not isinstance(owner, type):
            meter.step(len(owner))  # a method walks what it belongs to
        if args and isinstance(args[0], Sized) and type(obj).__name__ == "LoopContext":
            meter.step(len(args[0]))  # a recursive loop's `loop(children)`
        size = _method_size(obj, args)
        if size is not None:
            meter.build(size)
        result = super().call(context, obj, *args, **kwargs)
        if size is None:
            meter.build(_size(result))
        return result
