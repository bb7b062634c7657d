"""An LLM_CALL's answer schema taken from its run input (`answer_schema: input.<path>`).

Edge schemas are fixed per graph version; a schema that differs on every run (enums of the ids
of the graph a person is editing) comes with the run input instead. No compiler has seen it, so
it is checked here as the compiler checks an edge schema (its metaschema, references only inside
itself, patterns RE2 can run; nothing is ever fetched) and bounded in size, and a schema that
fails fails the node. The out-edge schemas still hold: the contract asks for both, this one first.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from plait.caches import ByteBoundCache
from plait.compile.schema_refs import reference_problems
from plait.compile.schema_validator import NO_REGISTRY, PARSED_BYTES_PER_CHAR
from plait.compile.schemas import check_json_schema
from plait.engine.contracts import BoundSchema, OutputContract
from plait.engine.runtime import NodeResult
from plait.model.nodes import ANSWER_SCHEMA_PATH, LlmCallNode

MAX_ANSWER_SCHEMA_BYTES = 64 * 1024
"""The largest answer schema, as compact JSON: it goes to the model with every attempt."""
HINT = "pass a JSON Schema object (Draft 7 unless its `$schema` names another draft) at that path of the run input"

_CONTRACTS: ByteBoundCache[OutputContract] = ByteBoundCache(
    "answer-schema contracts",
    32 << 20,
    max_entries=512,
    weigh=lambda _, key: 3 * PARSED_BYTES_PER_CHAR * len(key[0]) + 4096,  # the schema, combined, the format
)
"""Contracts by (the schema's text, kept as its digest, and the out-edge contract's identity)."""


def contract_of(node: LlmCallNode, edges: OutputContract, run_input: Any) -> OutputContract | NodeResult:
    """The contract the node's answer is asked for under in this run: `edges` (its out-edge
    contract), with the run input's answer schema first when the node names one; a failed
    result (kind `input`) when that schema cannot be used."""
    if node.answer_schema is None:
        return edges
    found = asked_contract(node.answer_schema, edges, run_input)
    if isinstance(found, OutputContract):
        return found
    message = f"node '{node.id}': answer_schema '{node.answer_schema}' {found}"
    snapshot = {"node_type": "LLM_CALL", "answer_schema": {"path": node.answer_schema}}
    return NodeResult.failed(snapshot, [], kind="input", message=message, hint=HINT)


def asked_contract(path: str, edges: OutputContract, run_input: Any) -> OutputContract | str:
    """`edges` with the schema at `path` of `run_input` asked for first, or what is wrong with
    that schema (a phrase that follows the path)."""
    if ANSWER_SCHEMA_PATH.fullmatch(path) is None:
        return "is not a path into the run input: write input.<field>, e.g. input.answer_schema"
    schema: Any = run_input
    for name in path.split(".")[1:]:
        if not isinstance(schema, dict) or name not in schema:
            return "names nothing in the run input"
        schema = schema[name]
    if not isinstance(schema, dict):
        return f"is {'null' if schema is None else 'a ' + type(schema).__name__}, not a JSON Schema object"
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_ANSWER_SCHEMA_BYTES:
        return f"is {size} bytes as compact JSON, over the limit of {MAX_ANSWER_SCHEMA_BYTES}"
    found = _CONTRACTS.find((text, id(edges)))
    if found is not None and found.schemas is edges.schemas and found.registry is edges.registry:
        return found  # the same out-edge contract (an id a later one reuses holds other schemas: a miss)
    problem = schema_problem(schema)
    if problem is not None:
        return problem
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    contract = edges.asking(BoundSchema(path, digest, json.loads(text)))  # its own copy of the schema
    _CONTRACTS.put((text, id(edges)), contract)
    return contract


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not one the compiler would accept on an edge (its references may only
    point inside itself), or None."""
    invalid = check_json_schema(schema)
    if invalid:
        where = "/".join(str(p) for p in invalid[0].path)
        return "is not a valid JSON Schema" + (f" at '{where}'" if where else "") + f": {invalid[0].message}"
    refused = reference_problems(schema, NO_REGISTRY, frozenset())
    if not refused:
        return None
    first = refused[0]
    where = "/".join(str(p) for p in first.path)
    hint = first.hint if first.code == "unsupported_regex" else "a reference may only point inside the schema: '#/...'"
    return f"is refused at '{where}': {first.message} ({hint})"


def shown_contract(node: LlmCallNode, edges: OutputContract, run_input: Any) -> OutputContract:
    """`contract_of` for what shows a request without running the node (a dry run): the
    out-edge contract when the answer schema cannot be used (the node's run reports why)."""
    found = contract_of(node, edges, run_input)
    return found if isinstance(found, OutputContract) else edges


def recorded(contract: OutputContract) -> dict[str, Any]:
    """What a node run's input snapshot keeps of the answer schema it was asked under (nothing
    without one): the path, the digest and the schema itself, as the combined `response_format`
    leaves keywords out."""
    asked = contract.asked
    if asked is None:
        return {}
    return {"answer_schema": {"path": asked.id, "digest": asked.version, "schema": asked.schema}}
