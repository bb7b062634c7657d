"""What a node hands back is made safe to commit before the engine records it.

A node's result comes from user code (a TRANSFORM), a model, a tool or an MCP server, and any of
them can produce a value the database or a serializer refuses: a lone surrogate (`"\\ud800"`,
not encodable as UTF-8), a value nested thousands of levels deep, a non-finite number. Found at
commit time, such a value raised out of the engine: the node stayed `running`, the run wedged,
and every resume paid for the same model call and crashed again. Here the output is checked
first, and a bad one fails *that node* with a message naming the field; the records kept beside
it (snapshot, attempts, error) are rewritten to storable text so that what happened stays
readable (the snapshot and the attempts as they are encoded: `recording.encode_records`). An
executor that raises anything unexpected fails its node the same way, with kind
`internal` and the traceback kept in the node run. Registered secrets (`plait.redact`) are
masked in everything the result holds, so that none is stored, sent or handed on (in the
snapshot and the attempts, as they are encoded).
"""

from __future__ import annotations

import traceback

from plait.engine.runtime import CacheEntry, NodeResult
from plait.engine.state import Phase
from plait.model.limits import storable, value_problem
from plait.model.nodes import NodeType
from plait.redact import redact_secrets
from plait.store import NodeRunRecord

TRACEBACK_CHARS = 8000
"""How much of a traceback an internal failure keeps (its end: where it was raised)."""


def committable(node_id: str, result: NodeResult) -> NodeResult:
    """`result` with an unstorable output turned into a failure naming the field, and its error
    made storable."""
    if result.phase == Phase.COMPLETED:
        problem = value_problem(result.output)
        if problem is not None:
            failed = NodeResult.failed(
                result.snapshot,
                result.attempts,
                kind="output",
                message=f"node '{node_id}' produced a value Plait cannot store: {problem.describe('output')}",
                tokens_input=result.tokens_input,
                tokens_output=result.tokens_output,
                cost_usd=result.cost_usd,
            )
            failed.error = {**(failed.error or {}), "path": problem.location("output")}
            result = failed
    result.error = storable(result.error)  # sent to listeners too; the other records only as stored
    # (`recording.encode_records` makes them storable and masks them as it encodes them)
    if result.cache_entry is not None and value_problem(result.cache_entry.response) is not None:
        result.cache_entry = None  # an answer that cannot be stored is not remembered either
    return _without_secrets(result)


def _without_secrets(result: NodeResult) -> NodeResult:
    """`result` with every registered secret masked in what it hands on and sends (output, error,
    the cached answer): before the run state, events or the store see it, so that the nodes after
    it, the run's output and every reader get the masked value."""
    result.output = redact_secrets(result.output)
    result.error = redact_secrets(result.error)
    entry = result.cache_entry
    if entry is not None:
        response = redact_secrets(entry.response)
        if response is not entry.response:
            result.cache_entry = CacheEntry(entry.key, entry.provider, entry.model, response)
    return result


def internal_failure(exc: BaseException, *, during: str) -> NodeResult:
    """A node failed by a bug or an unexpected condition, not by its own data: kind `internal`,
    with the traceback, so that the run ends and can be resumed or rerun."""
    text = "".join(traceback.format_exception(exc))
    result = NodeResult.failed(
        {}, [], kind="internal", message=f"{during} raised {type(exc).__name__}: {_message(exc)}"
    )
    result.error = storable({**(result.error or {}), "traceback": text[-TRACEBACK_CHARS:]})
    return result


LOST_LIMIT = 2
"""Executions of one node activation lost with their process after which the node is no longer
executed automatically: a node that takes its process down (a native crash, a kill) would take
every process that resumes the run down with it, a server restarting for ever included."""
_CHILD_RUN_NODES = frozenset({NodeType.SUBGRAPH, NodeType.MAP, NodeType.LOOP})


def lost_too_often(claimed: NodeRunRecord, node_type: NodeType) -> bool:
    """Whether this activation took its process down too often to be executed again
    automatically. A node whose work is child runs is exempt: its children count their own."""
    return claimed.lost >= LOST_LIMIT and node_type not in _CHILD_RUN_NODES


def lost_failure(claimed: NodeRunRecord, limit: int = LOST_LIMIT) -> NodeResult:
    """The failure of a node not executed again because its process went down `claimed.lost`
    times while executing it: kind `internal`, saying how to execute it again by hand."""
    node, run = claimed.node_id, claimed.run_id
    message = (
        f"node '{node}' was being executed when the process executing it went down, {claimed.lost} times (killed, "
        f"crashed, or hung past the run's lease); after {limit} such losses a node is not executed again "
        "automatically, so that it cannot take down every process that resumes the run. Look for the cause in the "
        f"log of the process that executed it; to execute the node again anyway: plait rerun {run} {node}"
    )
    result = NodeResult.failed({}, [], kind="internal", message=message)
    result.error = {**(result.error or {}), "lost": claimed.lost}
    return result


def _message(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 2000 else text[:2000] + "…"
