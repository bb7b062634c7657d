"""Hints in the words of Python: the layers below write their hints for the command line
(`plait rerun RUN NODE`); a client user is told the method that does the same thing.

Commands are matched by name, whatever sentence carries them. A command with no client
counterpart (`plait config check`, a deployer's tool) is left as it is: it still says what to
run, in a terminal.
"""

from __future__ import annotations

import re
from typing import overload

_RULES = [
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"`plait rerun (\S+) (\S+?) --downstream`", r'`client.rerun("\1", "\2", downstream=True)`'),
        (r"`plait rerun (\S+) (\S+?)`", r'`client.rerun("\1", "\2")`'),
        (r"`plait override (\S+) (\S+) --file F`", r'`client.override("\1", "\2", value)`'),
        (r"`plait review (\S+) (\S+) --approve`", r'`client.review("\1", "\2", approve=True)`'),
        (r"`plait review (\S+) (\S+) --file F`", r'`client.review("\1", "\2", value)`'),
        (r"`plait resume (\S+?)`", r'`client.resume("\1")`'),
        (r"`plait runs show (\S+?)(?: --json)?`", r'`client.get_run("\1")`'),
        (r"`plait runs show (\S+) --ledger(?: --json)?`", r'`client.ledger("\1")`'),
        (r"`plait runs list[^`]*`", "`client.list_runs()`"),
        (r"`plait graphs list[^`]*`", "`client.list_graphs()`"),
        (r"`plait eval run (\S+) --set (\S+) --version (\d+)`", r'`client.evals.run("\1", set="\2", version=\3)`'),
        (r"pass --force --note TEXT to promote anyway", "pass force=True and a note= to promote anyway"),
        (r"pass --note TEXT with --force", "pass note= with force=True"),
        (r"pass --gate NAME", "pass gate=NAME"),
        (r"`plait graphs versions (\S+?)`", r'`client.graph_versions("\1")`'),
        (r"`plait graphs fork (\S+?)`", r'`client.fork("\1")`'),
        (r"by its id or slug with --version", "by its id or slug with version="),
        (r"`plait eval show[^`]*`", "`client.evals.sets(graph)`"),
        (r"`plait eval build[^`]*`", "`client.evals.build(graph, name=...)`"),
        (r"`plait templates preview[^`]*`", "`client.templates.preview(...)`"),
        (r"`plait skills list[^`]*`", "`client.skills.list()`"),
        (r"`plait skills show[^`]*`", "`client.skills.get(name)`"),
        (r"`plait skills add[^`]*`", "`client.skills.add(file)`"),
        (r"`plait skills update (\S+?) FILE`", r'`client.skills.update("\1", file)`'),
        (r"`plait skills delete[^`]*`", "`client.skills.delete(name)`"),
        (r"`plait validate (\S+?)`", r'`plait.validate("\1")`'),
        (r"`plait validate`", "`plait.validate(path)`"),
        (r"pass --llm scripted:FILE", 'pass llm="scripted:FILE"'),
        (r"pass --llm local or --llm scripted:FILE", 'pass llm="local" or llm="scripted:FILE"'),
        (r"pass --llm or --config", "pass llm= or config="),
        (r"with -i key=value or --input-file", "in the input"),
    )
]


@overload
def for_python(text: str) -> str: ...
@overload
def for_python(text: None) -> None: ...
def for_python(text: str | None) -> str | None:
    """`text` with the commands it names said as the client's methods."""
    if text is None:
        return None
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
