"""Prompt templates: three accepted spellings, one internal form.

* `{{ path }}` — sandboxed Jinja2, the primary spelling;
* `%path%` — the original format's spelling, `%%` is a literal `%`;
* `params:` — named variables, referenced as `{{ name }}`/`%name%`.

`parse_template` normalises any mix into Jinja source (the one form the
renderer executes) and lists every data reference as a `TemplateRef` so that
the compiler can check each against the graph. Most prompts are plain text
with simple `{{ a.b }}` holes; those are read by a regular expression, and
only templates using real Jinja syntax (loops, conditionals, filter arguments)
pay for a Jinja parse.
"""

from __future__ import annotations

import re

from plait.caches import bounded
from plait.compile.template_types import FILTERS, Segment, Template, TemplateError, TemplateRef

_PATH = r"[^\W\d]\w*(?:\.\w+|\[\d+\])*"
_PERCENT_RE = re.compile(rf"%%|%({_PATH})%")
_BLOCK_RE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_SIMPLE_EXPR_RE = re.compile(rf"^\{{\{{-?\s*({_PATH})\s*((?:\|\s*\w+\s*)*)-?\}}\}}$")
_FILTER_RE = re.compile(r"\|\s*(\w+)")
_SEGMENT_RE = re.compile(r"\.(\w+)|\[(\d+)\]")


def parse_template(text: str) -> Template:
    """Normalise `text` to Jinja source and list its references; raise TemplateError on bad syntax."""
    return _parse(text)


@bounded(
    "parsed templates", max_bytes=16 << 20, weigh=lambda parsed, _: 2 * len(parsed.source) + 256 * len(parsed.refs)
)
def _parse(text: str) -> Template:
    if "{" not in text and "%" not in text:
        return Template(text, ())
    source, percent_refs = _normalise_percent(text)
    refs = _simple_refs(source)
    if refs is None:
        from plait.compile.jinja_refs import jinja_refs

        refs = jinja_refs(source)
    percent = {r.path for r in percent_refs}
    tagged = tuple(TemplateRef(r.path, "percent" if r.path in percent else "jinja") for r in refs)
    return Template(source, tagged)


def _normalise_percent(text: str) -> tuple[str, list[TemplateRef]]:
    """Rewrite `%path%` to `{{ path }}` and `%%` to `%` in the text between Jinja blocks."""
    if "%" not in text:
        return text, []
    out: list[str] = []
    refs: list[TemplateRef] = []
    pos = 0
    for block in _BLOCK_RE.finditer(text):
        out.append(_rewrite_percent(text[pos : block.start()], refs))
        out.append(block.group(0))
        pos = block.end()
    out.append(_rewrite_percent(text[pos:], refs))
    return "".join(out), refs


def _rewrite_percent(chunk: str, refs: list[TemplateRef]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        refs.append(TemplateRef(split_path(match.group(1)), "percent"))
        return "{{ " + match.group(1) + " }}"

    return _PERCENT_RE.sub(replace, chunk)


def split_path(dotted: str) -> tuple[Segment, ...]:
    """`a.b[0].c` -> ('a', 'b', 0, 'c'); purely numeric dotted parts become indexes."""
    head = dotted.partition(".")[0].partition("[")[0]
    parts: list[Segment] = [head]
    tail = dotted[len(head) :]
    for name, index in _SEGMENT_RE.findall(tail):
        if index:
            parts.append(int(index))
        else:
            parts.append(int(name) if name.isdigit() else name)
    return tuple(parts)


def _simple_refs(source: str) -> list[TemplateRef] | None:
    """Refs of a template whose blocks are all `{{ path | filter }}`; None when real Jinja is used."""
    refs: list[TemplateRef] = []
    for block in _BLOCK_RE.finditer(source):
        match = _SIMPLE_EXPR_RE.match(block.group(0))
        if match is None:
            return None
        for name in _FILTER_RE.findall(match.group(2)):
            if name not in FILTERS:
                raise TemplateError(f"unknown filter '{name}'", source.count("\n", 0, block.start()) + 1)
        refs.append(TemplateRef(split_path(match.group(1)), "jinja"))
    rest = _BLOCK_RE.sub("", source)
    if "{{" in rest or "{%" in rest or "{#" in rest or ("}}" in rest and "{{" in source):
        return None  # unbalanced delimiters: let Jinja produce the precise error
    return refs
