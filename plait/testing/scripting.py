"""The scripted provider, built from rules written in Python instead of a YAML file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from plait.llm.scripted import ScriptedProvider, ScriptedResponse, script_from


def scripted(
    *rules: Mapping[str, Any] | ScriptedResponse,
    nodes: Mapping[str, Any] | None = None,
    in_order: Iterable[Any] = (),
    log: str | os.PathLike[str] | None = None,
) -> ScriptedProvider:
    """A `ScriptedProvider` answering from `rules`, each a rule of a script file's `responses`
    (`node`, `match`, `output` or `text` or `tool_calls` or `error`, `times`, `delay_ms`...:
    see `plait.llm.scripted`); for every call the first rule that matches answers. Shorthands,
    after the rules: `nodes` maps a node id to the output of every call from that node;
    `in_order` gives outputs one call each, in order, whatever the node. A call nothing matches
    fails as unmatched. `log`: a JSONL file that gets one line per call. ScriptError when a
    rule is invalid."""
    responses: list[Any] = [
        r.model_dump(exclude_none=True) if isinstance(r, ScriptedResponse) else dict(r) for r in rules
    ]
    responses += [{"node": node, "output": output} for node, output in (nodes or {}).items()]
    responses += [{"output": output, "times": 1} for output in in_order]
    script = script_from({"responses": responses, "log": os.fspath(log) if log is not None else None})
    return ScriptedProvider(script)
