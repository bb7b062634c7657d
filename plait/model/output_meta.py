"""The keys Plait adds to a node's output, and reading them.

An output bound to a schema carries `_schema_id` and `_schema_version`, so that a later reader
knows which version of the schema it was written against (and can migrate it); an LLM_CALL
output whose tools sent results down other edges carries `_routed`; the output of a SUBGRAPH or
LOOP carries `_prompt_graph_run_id`, the child run it came from. A MERGE output is a map
`{predecessor: output}` whose members may carry them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from plait.model.semver import major

SCHEMA_ID, SCHEMA_VERSION = "_schema_id", "_schema_version"
ROUTED = "_routed"
"""On an LLM_CALL output: {out-edge id: tool result} for edges its tools' results go down."""
CHILD_RUN = "_prompt_graph_run_id"
"""On a SUBGRAPH or LOOP output (an object): the child run it came from."""
META_KEYS = (SCHEMA_ID, SCHEMA_VERSION, ROUTED, CHILD_RUN)


def strip_meta(value: Any) -> Any:
    """`value` without the keys Plait added (the same object when it has none)."""
    if isinstance(value, dict) and (
        SCHEMA_ID in value or SCHEMA_VERSION in value or ROUTED in value or CHILD_RUN in value
    ):
        return {k: v for k, v in value.items() if k not in META_KEYS}
    return value


def strip_meta_deep(value: Any) -> Any:
    """`value` without the keys Plait added at any depth (a MERGE output nests annotated outputs)."""
    value = strip_meta(value)
    if isinstance(value, dict):
        return {k: strip_meta_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_meta_deep(v) for v in value]
    return value


def annotated(output: Any) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """The schema-annotated objects of a stored output: `(None, output)` when the output itself
    is annotated, else `(key, member)` for each annotated member of a MERGE map."""
    if not isinstance(output, dict):
        return
    if SCHEMA_ID in output:
        yield None, output
        return
    for key, member in output.items():
        if isinstance(member, dict) and SCHEMA_ID in member:
            yield key, member


def is_current(value: dict[str, Any], schema_id: str, version: str) -> bool:
    """False when `value` was written against an older major version of schema `schema_id`
    than `version` (it needs migrating before it is read at `version`); a value of another
    schema, or without a version, is current."""
    if value.get(SCHEMA_ID) != schema_id or SCHEMA_VERSION not in value:
        return True
    stored = major(str(value[SCHEMA_VERSION]))
    return stored is not None and stored == major(version)


def outdated(output: Any, versions: Mapping[str, str]) -> bool:
    """Whether any annotated part of `output` needs migrating to the schema `versions`
    ({schema id: current version}); parts of schemas not in `versions` are left as they are."""
    for _, value in annotated(output):
        schema_id = value[SCHEMA_ID]
        version = versions.get(schema_id) if isinstance(schema_id, str) else None
        if version is not None and not is_current(value, schema_id, version):
            return True
    return False
