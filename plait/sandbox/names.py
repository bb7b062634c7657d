"""Which members of a scope name an expression reads, found in its text without running it.

An expression sees `nodes`: every completed node's output. Handing all of them to every
evaluation makes a run's cost grow with the square of its length (a 10,000-node chain would
encode ~50 million outputs as JSON), though an expression names one or two. So the engine
passes only the outputs an expression names as `nodes.id`, `nodes?.id` or `nodes["id"]`; an
expression that uses `nodes` in any other way (passes it on, iterates it, indexes it with a
computed key) gets all of them. The reading is conservative: text that merely looks like such a
use (inside a string or a comment) adds a name, which costs nothing; no real use is missed,
because every occurrence of the binding that is not a plain member read means "all".

    named_members("({n: nodes.a.n + nodes['b'].n})")   # frozenset({'a', 'b'})
    named_members("Object.keys(nodes).length")          # None: every output
"""

from __future__ import annotations

import re

from plait.caches import bounded, text_weight

_IDENTIFIER = r"[A-Za-z_$][\w$]*"
_MEMBER = re.compile(
    rf"\s*(?:\?\.|\.)\s*(?P<dot>{_IDENTIFIER})"
    r"|\s*(?:\?\.)?\s*\[\s*(?:'(?P<single>[^'\\\n]*)'|\"(?P<double>[^\"\\\n]*)\")\s*\]"
)


@bounded("names expressions read", max_bytes=4 << 20, weigh=text_weight)
def named_members(source: str, binding: str = "nodes") -> frozenset[str] | None:
    """The members of `binding` that `source` reads by a literal name, or None when it may read
    any (it uses the binding other than as `binding.name` / `binding["name"]`)."""
    names: set[str] = set()
    for use in re.finditer(rf"(?<![\w$]){re.escape(binding)}(?![\w$])", source):
        before = source[: use.start()].rstrip(" \t")
        if before.endswith(".") and not before.endswith("..."):
            continue  # `x.nodes`, `x?.nodes`: a property of something else (`...nodes` spreads the binding)
        member = _MEMBER.match(source, use.end())
        if member is None:
            return None
        names.add(member.group("dot") or member.group("single") or member.group("double") or "")
    return frozenset(names)
